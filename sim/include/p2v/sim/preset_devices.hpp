#pragma once
// The devices of the system presets (sim/levels.hpp): datasheet peaks per element type, memory and
// how many devices one node has, so that a preset alone (`--preset dgx-h100`) or an inline
// hierarchy with a preset (`--system node=4,gpu=8 --preset dgx-h100`) is a system `p2v step`
// can turn FLOPs into time on.
#include <string>
#include <vector>

#include "p2v/engine/system.hpp"
#include "p2v/sim/levels.hpp"

namespace p2v::sim {

struct PresetDevice {
  engine::Device device;  // peak_tflops: the dense bf16 (V100: f16) tensor peak, the precision of
                          // mixed-precision training; efficiency: an assumed fraction of it
  int node_devices = 8;   // devices of one node (the innermost level a preset describes)
};
// Throws p2v::Error for a preset without device numbers (a build mistake: every preset has them).
const PresetDevice& preset_device(const Preset& p);

}  // namespace p2v::sim

namespace p2v::sim {

// The GPU model a device name names, upper case ("NVIDIA H100 80GB HBM3" -> "H100", "A100-SXM4-40GB"
// -> "A100", "NVIDIA GB200" -> "GB200", "NVIDIA GH200 480GB" -> "GH200"); "" when it names none
// this table knows. A model is a token of its own (not "H20" in "H200", not "H200" in "GH200").
std::string gpu_model(const std::string& device_name);

// What `p2v calibrate --nccl-tests` says when the GPUs a log prints are not the system's device:
// the log's model, the device's, and the presets of machines whose nodes have the log's GPUs (from
// the presets' own devices; HGX H200 and H20 boards have the H100's NVLink 4 and NVSwitch, so the
// H100 machines' presets serve them); PCIe and NVL cards against an SXM device are said to lack
// its NVSwitch. Empty when they agree or either is unknown. `origin` names the log.
std::string gpu_mismatch_note(const std::string& origin, const std::vector<std::string>& log_devices,
                              const engine::Device& device);

}  // namespace p2v::sim
