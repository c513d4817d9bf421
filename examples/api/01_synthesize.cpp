// 01: synthesize every AllReduce program of a 131,072-GPU placement, on its shape.
//
// A placement (parallelism matrix) puts the parallelism axes on the system's levels. The programs
// depend only on the placement's shape (docs/shape.md), so synthesis runs on the shape's smallest
// instance and costs the same at 16 or 1,048,576 devices. Each step's groups come out as a level
// pattern; a rank finds its own group with group_of(), without any device list.
//
//   build/examples/api/01_synthesize
#include <fmt/core.h>

#include "p2v/engine/placement.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

using namespace p2v::engine;

int main() {
  const System sys = parse_system_arg("pod=16,rack=32,node=32,gpu=8");
  const std::vector<int> axes{static_cast<int>(sys.num_devices())};  // one data-parallel axis
  const std::vector<int> reduce{0};
  const auto matrices = enumerate_matrices(sys.cardinalities(), axes);
  const ParallelismMatrix& x = matrices.front();

  const Shape shape = make_shape(sys.cardinalities(), sys.level_names(), x, reduce, HierarchyKind::ReductionAxes);
  SynthOptions opt;  // programs of at most 5 collectives, Master carries AllReduce only
  const SynthResult r = synthesize_shape(shape, opt);
  fmt::print("{} devices, shape \"{}\": {} programs\n", sys.num_devices(), shape.signature(), r.programs.size());

  // The classic hierarchical AllReduce: ReduceScatter in the node, AllReduce across nodes,
  // AllGather in the node. Find it by its notation and print its steps' groups.
  const std::string want = "ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; AllGather@(node,Inside)";
  for (const auto& prog : r.programs) {
    if (program_name(r, prog) != want) continue;
    fmt::print("{}\n", want);
    const auto patterns = program_patterns(shape, r, prog);
    for (std::size_t s = 0; s < prog.size(); ++s) {
      const auto [group, pos] = group_of(patterns[s], shape, 100'000);
      fmt::print("  step {}: {}; device 100000 is member {} of the group led by device {}\n", s + 1,
                 describe(patterns[s], shape), pos, group);
    }
    return 0;
  }
  fmt::print(stderr, "01_synthesize: '{}' is not among the programs\n", want);
  return 1;
}
