#include "p2v/engine/replay.hpp"

#include <fmt/core.h>

namespace p2v::engine {

Trace replay(int k, const LoweredProgram& steps, const Groups* goal_groups) {
  Trace t;
  t.states.push_back(StateSet::initial(k));
  const StateSet goal = goal_groups ? StateSet::goal(k, *goal_groups) : StateSet();
  for (std::size_t s = 0; s < steps.size(); ++s) {
    if (goal_groups && t.states.back() == goal) {
      t.failed_step = static_cast<int>(s);
      t.reason = fmt::format("the goal is already reached before step {}", s + 1);
      return t;
    }
    StateSet next(k);
    if (!t.states.back().apply(steps[s].collective, steps[s].groups, next, &t.reason)) {
      t.failed_step = static_cast<int>(s);
      return t;
    }
    t.states.push_back(std::move(next));
  }
  t.reaches_goal = goal_groups && t.states.back() == goal;
  return t;
}

Trace replay(const SynthResult& r, const Program& prog, const Groups* goal_groups) {
  LoweredProgram steps;
  steps.reserve(prog.size());
  for (int i : prog) {
    const auto& in = r.instructions.at(static_cast<std::size_t>(i));
    steps.push_back({in.collective, in.grouping.groups});
  }
  return replay(r.hierarchy.num_local(), steps, goal_groups);
}

}  // namespace p2v::engine
