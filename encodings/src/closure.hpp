#pragma once
// The closure check shared by the concrete encoding (search.cpp) and the per-level symbolic
// encoding (symbolic.cpp): the reference semantics' reachable state graph, and a driver that has
// every solver close the graph's states with one-step queries of some encoding (private to
// encodings/).
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "p2v/encodings/search.hpp"
#include "p2v/encodings/smt.hpp"
#include "p2v/engine/state.hpp"

namespace p2v::encodings::detail {

// The reachable part of the reference semantics (engine::StateSet, docs/model.md §4): every state reached
// by a valid prefix of at most max_size - 1 steps that is not the goal is expanded with every
// instruction whose precondition holds (from depth max_size - 1: only the steps to the goal).
struct StateGraph {
  std::vector<engine::StateSet> states;  // 0 = the initial state
  std::vector<int> depth;                // fewest steps to reach it
  std::vector<char> goal;
  std::vector<char> expanded;
  std::vector<std::vector<std::pair<int, int>>> succ;  // (instruction, state), instruction order
};
StateGraph reachable_states(const SearchProblem& p, int max_size);

// The programs the graph's paths spell from the initial state to the goal in at most max_size
// steps, through nodes with keep[node] (empty: every node); sorted as the enumerator sorts them.
// Stops after `limit` programs.
std::vector<engine::Program> graph_programs(const StateGraph& g, int max_size, std::size_t limit,
                                            const std::vector<char>& keep = {});

// One step of an encoding whose start state is free, on one solver: what the closure asks of it.
class OneStep {
 public:
  virtual ~OneStep() = default;
  // "The state at t (0: start, 1: after the step) is graph node u's state" (in the encoding's terms).
  virtual smt::Term state_is(int t, int u) = 0;
  // The same as a list of terms whose conjunction it is (passed as assumptions).
  virtual std::vector<smt::Term> state_parts(int t, int u) { return {state_is(t, u)}; }
  virtual smt::Term goal(int t) = 0;              // the state at t is the goal
  virtual smt::Term chosen(int instruction) = 0;  // the step is this instruction
  // The step relation as one term (every constraint of the step), where the encoding was made
  // without asserting it (ClosureSpec::make_relation); else an invalid term.
  virtual smt::Term relation() { return {}; }
};

// How one closure run sees the graph: which nodes it closes and with which encoding.
struct ClosureSpec {
  RunMethod method = RunMethod::Closure;
  // Per node: the encoding represents it (empty: every node). The solvers close the expanded
  // represented nodes; a step into a node that is not represented is not listed (the encoding
  // has no such step), and the programs must pass only represented nodes.
  std::vector<char> represented;
  std::function<std::unique_ptr<OneStep>(smt::Solver&)> make;  // per worker and solver kind
  // The start state as assumptions of each check instead of an assertion in a push scope.
  bool assume = false;
  // States per closure query (1: one push/pop scope per state; more: one per batch, each state
  // under a selector, at least one selector true).
  std::function<int(smt::SolverKind)> batch;  // empty: 1
  // The states at the last level (whose closure is about steps to the goal only) in one batch
  // query per solver kind, whatever `batch` says for the others.
  bool batch_last_level = false;
  // If set, the programs' steps are checked in one query per solver kind, on a solver of its
  // own with this encoding (its relation() valid, not asserted): "some listed step is not in the
  // step relation" (unsat), instead of one sat check per step.
  std::function<std::unique_ptr<OneStep>(smt::Solver&)> make_relation;
};

std::vector<EnumerationResult> closure_run(const std::vector<smt::SolverKind>& kinds, const SearchProblem& p,
                                           const StateGraph& g, const std::vector<engine::Program>& programs,
                                           int max_size, const SearchOptions& opt,
                                           const std::function<std::string(const engine::Program&)>& name,
                                           const ClosureSpec& spec);

// "Not this program" (the blocking clause of both encoders): some step t = 1..n chooses another
// instruction than prog[t - 1]; chosen(t, i) is "step t chooses i", ff the constant false.
template <class Chosen>
smt::Term not_program(const engine::Program& prog, const Chosen& chosen, smt::Term ff) {
  std::vector<smt::Term> c;
  for (std::size_t t = 0; t < prog.size(); ++t) c.push_back(!chosen(static_cast<int>(t + 1), prog[t]));
  return smt::any_of(c, ff);
}

// Shared helpers of the encodings.
smt::SolverOptions solver_options(const SearchOptions& o);
[[noreturn]] void unknown(smt::Solver& s, const std::string& what, const SearchOptions& o);
void check_problem(const SearchProblem& p, int n);

}  // namespace p2v::encodings::detail
