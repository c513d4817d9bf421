// 03: rank the AllReduce programs of a 131,072-GPU placement on DGX H100 interconnects.
//
// All groups of one step are alike, so the level model prices a step from per-level counts:
// O(levels) per step whatever the device count. The report is what `p2v simulate --json` writes
// (format p2v-simulate/1, docs/formats.md).
//
//   build/examples/api/03_simulate
#include <fmt/core.h>

#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/levels.hpp"
#include "p2v/sim/simulate.hpp"

using namespace p2v;

int main() {
  engine::System sys = engine::parse_system_arg("pod=16,rack=32,node=32,gpu=8");
  sim::apply_preset(sys, sim::find_preset("h100"));  // NVLink in the node, 400 Gb/s NICs, racks, pods

  const std::vector<int> axes{static_cast<int>(sys.num_devices())}, reduce{0};
  const auto matrices = engine::enumerate_matrices(sys.cardinalities(), axes);
  sim::SimulateOptions opt;
  opt.model = sim::SimModel::Levels;
  opt.cost.bytes = 1 << 30;  // 1 GiB of gradients per GPU
  // NCCL's ring (the P2 paper's setting). Under --algo auto NCCL would run one flat AllReduce as
  // an NVLS tree (log-depth across nodes), which this hierarchy's programs do not beat.
  opt.cost.algo = sim::Algorithm::Ring;
  opt.list = 5;
  const auto run = sim::simulate(sys, axes, reduce, matrices, opt);

  const auto& m = run.report.results.at(0);
  fmt::print("{} devices, {} programs; one flat AllReduce: {:.3f} s\n", sys.num_devices(), m.num_programs,
             m.allreduce_s);
  for (const auto& p : m.programs)
    fmt::print("  {:>2}. {:.4f} s  x{:<6.2f} {}\n", p.rank, p.time_s, p.speedup, p.program);
  // The best program must beat the flat AllReduce on this hierarchy.
  return !m.programs.empty() && m.programs.front().time_s < m.allreduce_s ? 0 : 1;
}
