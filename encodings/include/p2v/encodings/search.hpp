#pragma once
// The bounded encoding of reduction-program search (SPEC §4-§5) over state-matrix bitvectors,
// and enumeration of every valid program up to a size bound with blocking constraints.
//
// Per step t (0..n) and device d: a k-bit row-presence vector and k column bitvectors of k bits
// (row r <-> bit r, column j <-> bit j). Per step t (1..n): a choice among the instructions
// (binary-coded bitvector or one-hot booleans). For every instruction and every group of it,
// "choice_t = i  =>  pre_i(S_{t-1}) and S_t = post_i(S_{t-1})". The initial state at t = 0, the
// goal at t = n, and not the goal at 1..n-1 (a valid program stops at the goal, as the
// enumerator's programs do).
#include <cstdint>
#include <optional>
#include <string>
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
  bool proofs = false;      // cvc5: keep the proof of the final unsat answer of every bound
  bool keep_states = false; // keep the model's state after every step of every program
  std::int64_t max_programs = 0;  // stop (throws) after this many programs; 0 = no limit
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

SearchProblem make_search_problem(const engine::SynthesisHierarchy& h,
                                  const std::vector<engine::Instruction>& ins,
                                  const engine::Groups& goal_groups);

// State of k local devices: cols[d][r] = column set of row r of device d (empty = row absent).
using LocalState = std::vector<std::vector<std::vector<bool>>>;

struct BoundFact {
  int bound = 0;            // exactly this many steps
  int programs = 0;         // found at this bound
  smt::Result final_result = smt::Result::unsat;  // after blocking all found: unsat (find_shortest: sat at the shortest)
  double seconds = 0;       // whole bound (encoding + all checks)
  double final_seconds = 0; // the final (unsat) check
  double encode_seconds = 0; // building the new step's constraints and the bound's goal
  double sat_seconds = 0;    // the checks that found a program
  double model_seconds = 0;  // reading the programs from the models
  std::string proof;        // proof of the final unsat (cvc5 with proofs), else ""
};

struct EnumerationResult {
  std::string solver, version;
  std::vector<engine::Program> programs;  // shortest first, then lexicographic (as the enumerator)
  std::vector<std::vector<LocalState>> states;  // with keep_states: per program, states 0..n
  std::vector<BoundFact> bounds;               // bounds 1..max_size
  int shortest = 0;                            // 0: no program up to max_size
  double seconds = 0;
  std::size_t terms = 0;
};

// Every valid program of 1..max_size steps. Throws p2v::Error on unknown / timeout.
EnumerationResult enumerate_programs(smt::SolverKind kind, const SearchProblem& p, int max_size,
                                     const SearchOptions& opt = {});

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
