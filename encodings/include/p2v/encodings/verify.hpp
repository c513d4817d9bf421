#pragma once
// Cross-checking the enumerator against the SMT solvers (`p2v verify`): per matrix of a
// placement problem, the enumerator's programs and every solver's, compared as sets of lowered
// programs (or, with `minimal`, by the shortest length), with each difference explained by the
// engine's Hoare rules; optionally certificates for the matrices where all agree.
//
// The solver runs (one per matrix and solver) go to a pool of `jobs` workers, largest first, so
// that runs of different matrices overlap; results are handed back in matrix order as they
// complete. A failed run (unknown, timeout, error) stops the pool and throws p2v::Error naming the
// matrix and the solver: nothing is reported "identical" that a solver did not answer.
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "p2v/encodings/search.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::encodings {

// Which semantics the solvers encode: one state per device of a reduction group (concrete), one
// per device class on the shape's smallest instance (shape, docs/shape.md §5; hierarchy (d)
// only), the per-level symbolic encoding on the shape's smallest instance (symbolic, symbolic.hpp:
// per level the row bit its digit is fixed to, per device one column set; an error where
// per_level_unsupported says it does not apply), or auto: symbolic from `kAutoSymbolicFrom`
// devices per reduction group where it applies, else shape above `kAutoShapeAbove` devices per
// reduction group and concrete up to it.
enum class VerifyEncoding { Auto, Shape, Concrete, Symbolic };
inline constexpr int kAutoShapeAbove = 16;
// The crossover, measured (bench_certify and bench/encodings/verify_encodings.sh, CPU seconds,
// medians of 3, L = 5, axes = all devices; the tables are in encodings/README.md "p2v verify: which
// encoding"): at 2 devices both encodings take about 0.02 s; from 4 devices the symbolic one is
// faster for the whole sets (4 devices: z3 0.08 s against 0.31 s, cvc5 0.29 against 1.44 s; 8
// devices: z3 4.8 against 52.6 s, cvc5 16.9 against 181.5 s, the concrete ones single runs) and as
// fast or faster for --minimal.
inline constexpr int kAutoSymbolicFrom = 4;
// "auto" | "shape" | "concrete" | "symbolic" ("per-level" is accepted as its other name)
VerifyEncoding parse_verify_encoding(const std::string& s);
const char* to_string(VerifyEncoding e);

struct VerifyOptions {
  std::vector<smt::SolverKind> solvers = {smt::SolverKind::Z3, smt::SolverKind::Cvc5};
  SearchOptions search;
  engine::SynthOptions synth;
  engine::HierarchyKind kind = engine::HierarchyKind::ReductionAxes;
  VerifyEncoding encoding = VerifyEncoding::Auto;
  bool minimal = false;     // only the minimality query (find_shortest) instead of the whole sets
  int jobs = 0;             // solver runs at once; 0 = one per hardware thread
  std::string certify_dir;  // write certificates of the matrices that agree ("" = none)
};

// One matrix: the enumerator's side, every solver's run, and the comparison.
struct VerifyCase {
  engine::ParallelismMatrix x;
  std::optional<engine::Shape> shape;  // set when encoded on the shape's smallest instance
  bool symbolic = false;               // the per-level symbolic encoding (on the shape's smallest instance)
  const char* encoding() const;        // "symbolic", "shape" (concrete on the smallest instance) or "concrete"
  engine::SynthResult enumerator;      // its hierarchy is the one the solvers encode
  engine::Groups goal;                 // the goal groups on that hierarchy (local devices)
  double enumerator_ms = 0;
  std::vector<EnumerationResult> runs;    // one per VerifyOptions::solvers, in that order
  std::vector<bool> run_agrees;           // per run
  std::vector<std::string> differences;   // each a program and why the engine accepts/rejects it
  std::vector<std::string> certificates;  // files written (certify_dir, `same` only)
  int shortest() const;                   // the enumerator's shortest length (0: none)
  bool same() const;                      // every solver agrees with the enumerator
};

struct VerifyResult {
  std::vector<VerifyCase> cases;  // in matrix order
  bool identical = true;          // every case `same`
  std::size_t certificates = 0;
  bool any_shape() const;
};

// Runs the comparison for every matrix of (system, axes, reduce). `on_case` (optional) sees each
// case as soon as it and all before it are complete, on the calling thread. Throws p2v::Error on
// bad options (--encoding shape or symbolic with hierarchies (a)-(c), --encoding symbolic where the
// per-level encoding does not apply, a reduction group too large for the concrete encoding) and on
// a failed solver run. With certify_dir, a case checked in the symbolic encoding is certified by
// the per-level closure (certificates say `symbolic-closure`, which `p2v check` re-derives the
// premise of), not from its enumeration runs.
VerifyResult verify_placements(const engine::System& system, const std::vector<int>& axes,
                               const std::vector<int>& reduce, const std::vector<engine::ParallelismMatrix>& matrices,
                               const VerifyOptions& opt, const std::function<void(const VerifyCase&)>& on_case = {});

// Compares c.runs (one per opt.solvers, in that order) with c.enumerator: sets c.run_agrees and
// c.differences (each program only one side has, with why the engine accepts or rejects it and, for
// the enumerator's, whether the solver's encoding can represent it). verify_placements calls it
// on every case; tests call it on altered runs to see that a difference is found.
void compare_runs(VerifyCase& c, const VerifyOptions& opt);

// Why the engine's Hoare rules reject (or accept) `prog`: the first failing step with the state
// before it, or "valid" with the states after each step (engine::replay).
std::string diagnose(const engine::SynthResult& r, const engine::Program& prog, const engine::Groups& goal_groups);

// The JSON of one case (`p2v verify --json`, one element of "results").
nlohmann::json to_json(const VerifyCase& c, bool minimal);

}  // namespace p2v::encodings
