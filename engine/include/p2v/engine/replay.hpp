#pragma once
// Replaying a program with the Hoare rules (docs/model.md §4): the state after each step and, if a step's
// precondition fails, which step and why. The one replay shared by verify's diagnostics,
// certificates and run plans (the independent checker, proofs/checker, keeps its own on purpose).
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"

namespace p2v::engine {

struct Trace {
  std::vector<StateSet> states;  // states[0] initial; states[t] after step t (up to the failing step)
  int failed_step = -1;          // 0-based index of the first step that cannot run, -1 if none
  std::string reason;            // why it cannot (its precondition, or the goal reached before it)
  bool reaches_goal = false;     // with goal groups: every step ran and the last state is the goal
  bool ok() const { return failed_step < 0 && reaches_goal; }
};

// Replays `steps` on k devices from the initial state. With goal groups, a step after the goal is
// reached counts as failing (a valid program stops at the goal), and reaches_goal is set.
Trace replay(int k, const LoweredProgram& steps, const Groups* goal_groups = nullptr);

// The same for a program of a synthesis result, on its hierarchy's local devices.
Trace replay(const SynthResult& r, const Program& prog, const Groups* goal_groups = nullptr);

}  // namespace p2v::engine
