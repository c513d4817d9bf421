#include "p2v/sim/preset_devices.hpp"

#include <fmt/core.h>

#include <cctype>
#include <map>
#include <utility>

#include "p2v/engine/error.hpp"
#include "p2v/engine/text_util.hpp"

namespace p2v::sim {

namespace {

// Datasheet peaks, TFLOP/s without structured sparsity (NVIDIA lists the sparse numbers, twice
// these, first). Sources:
//   A100: NVIDIA A100 Tensor Core GPU datasheet,
//     https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
//     (SXM: FP64 9.7, FP64 Tensor 19.5, FP32 19.5, BF16/FP16 Tensor 312, INT8 Tensor 624 TOPS; 40 or 80 GB)
//   H100: NVIDIA H100 Tensor Core GPU datasheet,
//     https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet
//     (SXM: FP64 34, FP64 Tensor 67, FP32 67, BF16/FP16 Tensor 1,979 sparse = 989 dense,
//      INT8 Tensor 3,958 sparse = 1,979 dense TOPS; 80 GB)
//   V100: NVIDIA V100 datasheet,
//     https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf
//     (SXM2: FP64 7.8, FP32 15.7, Tensor (FP16) 125; 16 or 32 GB)
// efficiency 0.4: an assumption (the fraction of the tensor peak large-model training reaches is
// typically 0.3-0.5); `p2v step --measured-step-ms` or `--throughput` fits it to a measurement.
// One device: datasheet peaks (the dense bf16 / f16 tensor peak first), memory, the source line.
engine::Device device(std::string name, std::map<std::string, double> peaks, double peak, double memory_gb,
                      std::string source) {
  engine::Device d;
  d.name = std::move(name);
  d.peak_tflops = peak;
  d.peak_tflops_by_dtype = std::move(peaks);
  d.efficiency = 0.4;
  d.memory_gb = memory_gb;
  d.source = std::move(source);
  return d;
}

engine::Device a100(double memory_gb, const char* note = "") {
  return device(fmt::format("A100-SXM4-{}GB", memory_gb),
                {{"f64", 19.5}, {"f32", 19.5}, {"f16", 312}, {"bf16", 312}, {"i8", 624}}, 312, memory_gb,
                "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
                "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (dense peaks; efficiency 0.4 assumed" +
                    std::string(note) + ")");
}

engine::Device h100() {
  return device("H100-SXM5-80GB", {{"f64", 67}, {"f32", 67}, {"f16", 989}, {"bf16", 989}, {"i8", 1979}}, 989, 80,
                "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet (dense peaks; "
                "efficiency 0.4 assumed)");
}

// B200: the per-GPU column of NVIDIA's HGX B200 specifications (the GB200 NVL72 product page,
// https://www.nvidia.com/en-us/data-center/gb200-nvl72/, table "Technical Specifications", HGX B200
// column; tensor numbers there are with sparsity): FP16/BF16 Tensor 4.5 PFLOPS sparse = 2,250 dense,
// INT8 Tensor 9 POPS sparse = 4,500 dense, FP32 75, FP64 37; 180 GB HBM3E (DGX B200: 1,440 GB over
// 8 GPUs, NVIDIA DGX B200 User Guide).
engine::Device b200() {
  return device("B200-SXM-180GB", {{"f64", 37}, {"f32", 75}, {"f16", 2250}, {"bf16", 2250}, {"i8", 4500}}, 2250, 180,
                "https://www.nvidia.com/en-us/data-center/gb200-nvl72/ (HGX B200 column, sparse tensor peaks "
                "halved to dense; efficiency 0.4 assumed)");
}

engine::Device v100() {
  return device(
      "V100-SXM2-32GB", {{"f64", 7.8}, {"f32", 15.7}, {"f16", 125}}, 125, 32,
      "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf "
      "(the 32 GB SXM2 part is an assumption for the P2 paper's nodes; efficiency 0.4 assumed)");
}

}  // namespace

const PresetDevice& preset_device(const Preset& p) {
  // Keyed by preset name; every preset in sim::presets() has an entry (tests/sim checks it).
  static const std::map<std::string, PresetDevice> t = {
      {"dgx-a100", {a100(80), 8}},  // DGX A100 640GB: 8 x A100 80GB
      {"dgx-h100", {h100(), 8}},
      {"dgx-b200", {b200(), 8}},
      {"a3-mega", {h100(), 8}},
      {"p4d", {a100(40), 8}},  // p4d.24xlarge: 8 x A100 40GB
      {"p5", {h100(), 8}},
      {"p2-a100", {a100(40, "; the 40 GB part is an assumption for the P2 paper's nodes"), 8}},
      {"p2-v100", {v100(), 8}},
      {"h100", {h100(), 8}},
      {"h100-oversub", {h100(), 8}},
  };
  const auto it = t.find(p.name);
  if (it == t.end()) throw Error(fmt::format("preset '{}' has no device numbers (sim/src/preset_devices.cpp)", p.name));
  return it->second;
}

namespace {

using engine::text::upper;

// `k` in `u` (both upper case) as a token of its own: no letter or digit before it, no digit after
// it ("H20" is not in "H200", "H200" not in "GH200"; "H100-SXM5" and "A100X" are H100 and A100).
bool has_token(const std::string& u, const std::string& k, bool letters_after = true) {
  for (std::size_t at = u.find(k); at != std::string::npos; at = u.find(k, at + 1)) {
    const std::size_t end = at + k.size();
    const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(u[at - 1]));
    const bool right = end == u.size() || !(letters_after ? std::isdigit(static_cast<unsigned char>(u[end]))
                                                          : std::isalnum(static_cast<unsigned char>(u[end])));
    if (left && right) return true;
  }
  return false;
}

// A PCIe card ("NVIDIA H100 PCIe", "NVIDIA A100 80GB PCIe") or an NVL card pair ("NVIDIA H100 NVL",
// "NVIDIA H200 NVL", bridged by NVLink, no NVSwitch): not an SXM board's NVSwitch node.
bool pcie_card(const std::string& u) { return has_token(u, "PCIE", false) || has_token(u, "NVL", false); }

// The GPUs whose boards have the same NVLink 4 and NVSwitch as an H100 SXM board (HGX H200, HGX H20);
// the interconnect model cares for that, not for the die's memory or peaks.
std::string link_class(const std::string& m) { return m == "H200" || m == "H20" ? std::string("H100") : m; }

}  // namespace

std::string gpu_model(const std::string& device_name) {
  const std::string u = upper(device_name);
  static const char* const kModels[] = {"GB300", "GB200", "GH200", "B300", "B200", "B100", "H200", "H100", "H800",
                                        "H20",   "A100",  "A800",  "V100", "L40S", "L40",  "A10G", "L4"};
  for (const char* m : kModels)
    if (has_token(u, m)) return m;
  return "";
}

std::string gpu_mismatch_note(const std::string& origin, const std::vector<std::string>& log_devices,
                              const engine::Device& device) {
  std::string logged, name;
  for (const auto& d : log_devices) {
    const auto m = gpu_model(d);
    if (m.empty()) continue;
    if (logged.empty()) logged = m, name = d;
    if (m != logged) return "";  // a mixed run: nothing one device could say
  }
  const auto own = gpu_model(device.name);
  if (logged.empty() || own.empty()) return "";
  const bool card = pcie_card(upper(name)), own_card = pcie_card(upper(device.name));
  if (card && !own_card)
    return fmt::format(
        "{}: the log ran on {} cards ({}), but the system's device is {}: an SXM board's NVSwitch (and NVLS) is "
        "not what PCIe or NVL cards have; no preset describes such nodes, calibrate fits the links to the log",
        origin, logged, name, device.name);
  if (logged == own) return "";
  if (link_class(logged) == link_class(own))
    return fmt::format(
        "{}: the log ran on {} GPUs, the system's device is {}: the same NVLink and NVSwitch, so the NVLink level "
        "holds (the network is the system's own); memory and peaks, which p2v step uses, are the device's",
        origin, logged, device.name);
  // Presets of machines (an "nccl" section of the node's NICs), not the line-rate ones (h100, p2-*).
  std::string names;
  for (const auto& p : presets())
    if (!p.nccl.levels.empty() && link_class(gpu_model(preset_device(p).device.name)) == link_class(logged))
      names += (names.empty() ? "" : ", ") + p.name;
  return fmt::format(
      "{}: the log ran on {} GPUs, but the system's device is {}: its links and NCCL settings are "
      "another machine's{}",
      origin, logged, device.name,
      names.empty() ? fmt::format(" (no preset describes {} nodes; calibrate fits the links to the log)", logged)
                    : fmt::format(" (presets of {} nodes: {})", logged, names));
}

}  // namespace p2v::sim
