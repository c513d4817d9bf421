#pragma once
// What the global planner (plan.cpp) and the rank-local planner (rank_plan.cpp) share: interval
// helpers and the one function that decides a rank's actions in a step from its layout and the
// rows involved. Both planners follow the same state semantics; only where the rows come from
// differs (the global StateSet vs the rank's own replay).
#include <cstdint>
#include <vector>

#include "p2v/runtime/plan.hpp"

namespace p2v::runtime::detail {

// Sorted row list -> intervals.
Intervals to_intervals(const std::vector<int>& rows);
// The rows at positions [from, from+n) of the ascending row list `rows`.
Intervals slice(const Intervals& rows, std::int64_t from, std::int64_t n);
// Sorted, adjacent intervals joined.
Intervals merge(Intervals v);
std::vector<Copy> unpack_copies(const Intervals& rows, Region src);

// One rank's part of one step, for a rank that takes part in a group of two or more.
struct StepContext {
  Collective collective = Collective::AllReduce;
  int member = 0, group_size = 0;
  const Layout* layout = nullptr;    // the rank's layout before the step
  const Intervals* after = nullptr;  // the rank's rows after the step (state semantics)
  // AllGather: every member's rows before the step, in member order, and whether every member's
  // rows are at home; Broadcast: members_before[0] = the root's rows.
  std::vector<const Intervals*> members_before;
  bool all_home = true;
};
// Fills rs (everything but comm) and raises need[0], need[1] to the staging units it uses.
void build_rank_step(const StepContext& c, RankStep& rs, std::int64_t need[2]);

}  // namespace p2v::runtime::detail
