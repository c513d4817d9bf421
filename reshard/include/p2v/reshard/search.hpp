#pragma once
// The search (docs/reshard.md "How it works"): the cheapest memory-bounded program ending on τ2
// itself, the XLA-style naive baseline, and their prices (paper model or the simulator's).
#include <cstdint>
#include <string>
#include <vector>

#include "p2v/engine/system.hpp"
#include "p2v/reshard/lowering.hpp"

namespace p2v::reshard {

using engine::System;

enum class CostKind { Paper, Topology };

struct PlannedStep {
  Step step;
  Type after;
  std::int64_t cost = 0;   // paper model: elements per device
  std::int64_t bytes = 0;  // bytes each device receives (paper cost × dtype size)
  double time_s = 0.0;     // topology model (0 with --cost paper)
  int group_size = 1, num_groups = 0;
  std::string level;  // topology: the class (level name) of the busiest link, sim's bottleneck
  // Logical type before the step after any relabelling it needed (equals the previous `after`
  // when no relabelling happened), and the step's physical groups / permutation.
  Type before;
  bool relabelled = false;
  Lowered lowered;
};

struct Program {
  std::vector<PlannedStep> steps;
  std::int64_t cost = 0;            // paper model sum (elements)
  std::int64_t peak = 0;            // largest localsize over the program (elements): the tiles only
  std::int64_t peak_staged = 0;     // the same with the run's staging buffers (staged_elements)
  double time_s = 0.0;              // topology model sum
  std::vector<std::int64_t> sigma;  // final device map (physical -> logical); identity when empty
};

// Search on an already-parsed problem (`limit` in elements). Program steps hold paper costs only.
Program synthesize(const Mesh& mesh, const Type& from, const Type& to, std::int64_t limit,
                   const System* topology = nullptr, int dtype_bytes = 4, std::int64_t* states = nullptr);
// The XLA-style naive program: allgather every dimension whose axes change, then dynslice.
Program naive(const Mesh& mesh, const Type& from, const Type& to);

// Elements a device holds at once while the run (runtime/reshard.hpp) executes the step, staging
// included: allgather input + received blocks + the concatenated output (in + 2·out); alltoall
// input + packed send + receive buffers (3·in); allpermute input + received tile (2·in, 1·in on
// a device that keeps its tile); dynslice input + its chunk.
std::int64_t staged_elements(const PlannedStep& s);
// The bound stated the same way: at most this many elements with staging for any program within
// `bound` tiles (3·bound: no step holds more than three tiles of at most the limit).
inline std::int64_t staged_bound(std::int64_t bound) { return 3 * bound; }

// Fills costs (paper and, with a system, topology), peak, group counts of a program's steps.
void price(Program& p, const Mesh& mesh, const Type& from, int dtype_bytes, const System* topology);

}  // namespace p2v::reshard
