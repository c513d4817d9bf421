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
// Sorted, adjacent intervals joined.
Intervals merge(Intervals v);

// One rank's part of one step, for a rank that takes part in a group of two or more.
struct StepContext {
  Collective collective = Collective::AllReduce;
  int member = 0, group_size = 0;
  const Layout* layout = nullptr;  // the rank's layout before the step
  const RowSet* after = nullptr;   // the rank's rows after the step (state semantics)
  // Broadcast: the root's rows.
  const RowSet* root_rows = nullptr;
  // AllGather: the members' rows before the step, listed in member order (`members`), or, when
  // `first` is set, as a strided family: member p holds `first` translated by
  // sum_i a_i * family[i].stride, where (a_0, a_1, ...) are p's mixed-radix digits over the
  // counts family[i].count (outermost first); and whether every member's rows are at home.
  std::vector<const RowSet*> members;
  const RowSet* first = nullptr;
  std::vector<Dim> family;
  bool all_home = true;
};
// Fills rs (everything but comm) and raises need[0], need[1] to the staging units it uses.
void build_rank_step(const StepContext& c, RankStep& rs, std::int64_t need[2]);

}  // namespace p2v::runtime::detail
