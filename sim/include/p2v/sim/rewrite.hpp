#pragma once
// Cost-guided rewriting (docs/rules.md) with the simulator: the search over the engine's rule moves
// (p2v/engine/derive.hpp), ordered by predicted time. Lives in sim because it needs the simulator.
#include <cstdint>
#include <vector>

#include "p2v/engine/derive.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/sim/cost.hpp"

namespace p2v::sim {

// Cost-guided rewriting (Unity-style): best-first by the simulator's predicted time over rule
// applications in both directions; candidates slower than `prune` x the best so far are dropped;
// at most `budget` programs are expanded. Every kept candidate equals the input under the counting
// semantics.
struct RewriteOptions {
  int max_size = 6;
  double prune = 1.05;
  std::int64_t budget = 2000;
};
struct RewriteResult {
  engine::LoweredProgram best;
  std::vector<engine::RuleApplication> derivation;
  double input_s = 0, best_s = 0;
  std::int64_t expanded = 0, generated = 0, pruned = 0, rejected = 0;
  bool budget_exhausted = false;
};
RewriteResult rewrite_search(const engine::RuleMoves& m, const Simulator& sim, const CostOptions& cost,
                             const engine::LoweredProgram& input, const RewriteOptions& opt);

}  // namespace p2v::sim
