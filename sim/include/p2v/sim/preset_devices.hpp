#pragma once
// The devices of the system presets (sim/levels.hpp): datasheet peaks per element type, memory and
// how many devices one node has, so that a preset alone (`--preset dgx-h100`) or an inline
// hierarchy with a preset (`--system node=4,gpu=8 --preset dgx-h100`) is a system `p2v step`
// can turn FLOPs into time on.
#include <string>

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
