#pragma once
// The bounded encoding of reduction-program search (docs/model.md §4-§5) over state-matrix bitvectors,
// and enumeration of every valid program up to a size bound with blocking constraints.
//
// Per step t (0..n) and device d: a k-bit row-presence vector and k column bitvectors of k bits
// (row r <-> bit r, column j <-> bit j). Per step t (1..n): a choice among the instructions
// (binary-coded bitvector or one-hot booleans). For every instruction and every group of it,
// "choice_t = i  =>  pre_i(S_{t-1}) and S_t = post_i(S_{t-1})". The initial state at t = 0, the
// goal at t = n, and not the goal at 1..n-1 (a valid program stops at the goal, as the
// enumerator's programs do).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "p2v/encodings/smt.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/engine/synth.hpp"

namespace p2v::encodings {

enum class ChoiceEncoding { Binary, OneHot };
const char* to_string(ChoiceEncoding c);
ChoiceEncoding parse_choice_encoding(const std::string& s);  // "binary" | "onehot"

struct SearchOptions {
  ChoiceEncoding choice = ChoiceEncoding::Binary;
  bool incremental = true;  // one solver across bounds vs. a fresh solver per bound
  // How an incremental solver scopes the constraints of one bound ("the goal at n"): under an
  // activation literal passed as an assumption (default: nothing is popped, so every learned
  // clause survives into the next bound), or in a push/pop scope. "Not the goal at t < n" and the
  // blocking clauses hold at every larger bound, so they are asserted for good either way.
  // Measured ([1 2 8], L = 5): cvc5's final unsat 5.9 s with assumptions, 68.5 s with push/pop.
  bool push_pop = false;
  // States as functions of the choices (a multiplexer per row, no state variables) instead of
  // fresh state variables constrained by "choice = i => state = post_i".
  bool functional = false;
  // One transition constraint per grouping (all collectives on the same groups share it; under
  // each precondition the post-state is "keep ? union : 0") instead of one per instruction.
  bool factored = true;
  // One k*k-bit column vector per device (bit r*k+j = row r, column j) instead of k vectors of k
  // bits (one per row): the same bits and gates, k times fewer terms. Needs `factored` and not
  // `functional`. Measured ([1 4 4], L = 4): z3 14.8 -> 9.5 s, cvc5 27.5 -> 24.2 s.
  bool per_device = true;
  // Assert the derived lemma "the last step is no Reduce/ReduceScatter on groups of >= 2".
  // Off by default: measured neutral for z3 and 4-15x slower for cvc5's final unsat at L = 5.
  bool last_step_lemma = false;
  unsigned timeout_ms = 0;  // per solver check; 0 = none. A timeout throws p2v::Error.
  std::string z3_logic;     // smt::SolverOptions::z3_logic ("" = the default)
  std::vector<std::pair<std::string, std::string>> cvc5_options;  // smt::SolverOptions::cvc5_options
  bool proofs = false;            // cvc5: keep the proof of the final unsat answer of every bound
  bool keep_states = false;       // keep the model's state after every step of every program
  std::int64_t max_programs = 0;  // stop (throws) after this many programs; 0 = no limit
  // confirm_by_closure: workers in all (at least one per solver kind of the call; 0: one per
  // hardware thread), each with its own solver per kind, sharing out the reachable states.
  int jobs = 1;
  // confirm_by_symbolic_closure: each reachable state as assumptions of its checks (the closure's
  // blocks under a literal of its own) instead of an assertion in a push/pop scope. Measured on
  // the three-level shape (CPU): z3 0.58 -> 3.96 s, cvc5 1.36 -> 2.73 s; off.
  bool closure_assume = false;
  // confirm_by_symbolic_closure: reachable states per closure query (each under a selector); 0 or 1:
  // one at a time (measured fastest at k = 16, see symbolic.cpp).
  int closure_batch = 0;
  // confirm_by_symbolic_closure: every device's column set as k bits, as the enumeration and
  // --minimal use it, instead of its summed levels (n bits and a presence bit; symbolic.hpp).
  bool closure_column_sets = false;
  // Called with progress lines by the long searches (confirm_by_closure), from a solver's thread
  // (one call at a time).
  std::function<void(const std::string&)> progress;
  // Called after each state confirm_by_closure closes, with the number of states to close in all
  // (over every solver kind), from a solver's thread (one call at a time): counted progress.
  std::function<void(std::size_t total)> state_closed;
  // Skip the solver's teardown: it takes as long as the search itself on large encodings (cvc5 on
  // [1 16], L = 5: 3.8-4.5 s after a 4-5 s search). The memory is released when the process exits
  // (as clang's -disable-free does), as long as the process stays below a quarter of the machine's
  // memory; above that the solver is torn down as usual. For command-line runs, not libraries.
  bool bury_solver = false;
};

// One instruction as the encoding sees it: a collective on a partition of (some) local devices.
struct SearchInstruction {
  engine::Collective collective = engine::Collective::AllReduce;
  engine::Groups groups;
};

struct SearchProblem {
  int k = 0;
  std::vector<SearchInstruction> instructions;
  engine::Groups goal_groups;  // partition of 0..k-1
};

SearchProblem make_search_problem(const engine::SynthesisHierarchy& h, const std::vector<engine::Instruction>& ins,
                                  const engine::Groups& goal_groups);

// State of k local devices: cols[d][r] = column set of row r of device d (empty = row absent).
using LocalState = std::vector<std::vector<std::vector<bool>>>;

struct BoundFact {
  int bound = 0;     // exactly this many steps
  int programs = 0;  // found at this bound
  smt::Result final_result =
      smt::Result::unsat;     // after blocking all found: unsat (find_shortest: sat at the shortest)
  double seconds = 0;         // whole bound (encoding + all checks)
  double final_seconds = 0;   // the final (unsat) check
  double encode_seconds = 0;  // building the new step's constraints and the bound's goal
  double sat_seconds = 0;     // the checks that found a program
  double model_seconds = 0;   // reading the programs from the models
  double accept_seconds = 0;  // confirm_programs: the validity checks of the given programs
  std::string proof;          // proof of the final unsat (cvc5 with proofs), else ""
};

// How a run's programs came about: found by the solver one by one with blocking clauses
// (enumerate_programs), given and confirmed per bound (confirm_programs), or given and confirmed
// by the closure of the reachable states (confirm_by_closure), the same closure over the per-level
// symbolic encoding (symbolic.hpp, confirm_by_symbolic_closure).
enum class RunMethod { Enumerate, Confirm, Closure, SymbolicClosure };

struct EnumerationResult {
  std::string solver, version;
  RunMethod method = RunMethod::Enumerate;
  std::string settings;                         // the solver's configuration (smt::Solver::settings())
  std::vector<engine::Program> programs;        // shortest first, then lexicographic (as the enumerator)
  std::vector<std::vector<LocalState>> states;  // with keep_states: per program, states 0..n
  std::vector<BoundFact> bounds;                // bounds 1..max_size
  int shortest = 0;                             // 0: no program up to max_size
  double seconds = 0;
  std::size_t terms = 0;
  // confirm_by_closure: states whose steps were closed, steps listed from them, validity checks
  // (one per distinct step of the programs) and the time of each kind of check.
  int closure_states = 0, closure_edges = 0, validity_checks = 0;
  double closure_seconds = 0, validity_seconds = 0;
  // confirm_by_symbolic_closure: the columns were encoded as summed levels (the states closed are
  // those whose every device holds the columns of the devices agreeing with it outside a level set).
  bool summed_levels = false;
};

// Every valid program of 1..max_size steps. Throws p2v::Error on unknown / timeout.
EnumerationResult enumerate_programs(smt::SolverKind kind, const SearchProblem& p, int max_size,
                                     const SearchOptions& opt = {});

// The solver's side of a certificate for a program set found elsewhere (the enumerator), per
// bound n = 1..max_size on one incremental solver: (1) validity: the encoding accepts each given
// program of n steps (one check with its choices as assumptions: sat); (2) completeness: with all
// of them blocked, the encoding has no other valid program of n steps (one check: unsat). Together
// the given programs are exactly the valid ones up to max_size, as enumerate_programs would show,
// with one check per program that propagation answers instead of a search per program.
// `programs` must be sorted as the enumerator sorts them (shortest first, then lexicographic).
// Throws p2v::Error when a program is rejected, another program exists (naming it with `name`),
// or the solver answers unknown.
EnumerationResult confirm_programs(smt::SolverKind kind, const SearchProblem& p,
                                   const std::vector<engine::Program>& programs, int max_size,
                                   const SearchOptions& opt = {},
                                   const std::function<std::string(const engine::Program&)>& name = {});

// The same facts from one-step queries, for shapes where a query over all bounds is too slow (the
// 16-device instance of a four-level shape). The reference semantics (engine::StateSet) gives
// the reachable states (depth < max_size, not the goal) and each one's valid steps; its paths to
// the goal must be exactly `programs`. Then the solver, on one step whose start state is fixed to
// each reachable state in turn: (1) accepts every step the programs take, with its successor
// state and that state's goal status (sat; so every program is valid in the encoding), and
// (2) finds no valid step besides the listed ones with their successors (unsat; from the states
// first reached at depth max_size - 1: no valid step *to the goal* besides the listed ones, as a
// program there must end with its next step). By induction on
// the length, every valid program of at most max_size steps is a path of that graph, i.e. one of
// `programs`. Binary choices only. Throws p2v::Error as confirm_programs does.
EnumerationResult confirm_by_closure(smt::SolverKind kind, const SearchProblem& p,
                                     const std::vector<engine::Program>& programs, int max_size,
                                     const SearchOptions& opt = {},
                                     const std::function<std::string(const engine::Program&)>& name = {});
// The same for several solvers at once, one result per kind (in order): the (solver, state) queries
// go to max(opt.jobs, kinds) workers in all, each with a solver of its own per kind; a worker starts
// on its own kind and helps with the others' states when that one is done.
std::vector<EnumerationResult> confirm_by_closure(const std::vector<smt::SolverKind>& kinds, const SearchProblem& p,
                                                  const std::vector<engine::Program>& programs, int max_size,
                                                  const SearchOptions& opt = {},
                                                  const std::function<std::string(const engine::Program&)>& name = {});

// Is there a valid program of exactly n steps? Returns one, or nullopt when unsat. Throws on unknown.
std::optional<engine::Program> find_program(smt::SolverKind kind, const SearchProblem& p, int n,
                                            const SearchOptions& opt = {});
// The minimality query: bounds 1, 2, ... up to max_size on one solver until one is sat. The result
// holds that program (or none), `shortest`, and a fact per bound tried: unsat below the shortest
// (no shorter program exists), sat at it. Throws p2v::Error on unknown / timeout.
EnumerationResult find_shortest(smt::SolverKind kind, const SearchProblem& p, int max_size,
                                const SearchOptions& opt = {});

// Does the encoding accept this exact program (the choices fixed)? For diagnostics.
bool encoding_accepts(smt::SolverKind kind, const SearchProblem& p, const engine::Program& prog,
                      const SearchOptions& opt = {});

}  // namespace p2v::encodings
