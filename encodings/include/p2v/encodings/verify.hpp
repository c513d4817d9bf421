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
// only), or shape above `kAutoShapeAbove` devices per reduction group (auto).
enum class VerifyEncoding { Auto, Shape, Concrete };
inline constexpr int kAutoShapeAbove = 16;
VerifyEncoding parse_verify_encoding(const std::string& s);  // "auto" | "shape" | "concrete"

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
  engine::SynthResult enumerator;      // its hierarchy is the one the solvers encode
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
// bad options (--encoding shape with hierarchies (a)-(c), a reduction group too large for the
// concrete encoding) and on a failed solver run.
VerifyResult verify_placements(const engine::System& system, const std::vector<int>& axes,
                               const std::vector<int>& reduce, const std::vector<engine::ParallelismMatrix>& matrices,
                               const VerifyOptions& opt, const std::function<void(const VerifyCase&)>& on_case = {});

// Why the engine's Hoare rules reject (or accept) `prog`: the first failing step with the state
// before it, or "valid" with the states after each step (engine::replay).
std::string diagnose(const engine::SynthResult& r, const engine::Program& prog, const engine::Groups& goal_groups);

// The JSON of one case (`p2v verify --json`, one element of "results").
nlohmann::json to_json(const VerifyCase& c, bool minimal);

}  // namespace p2v::encodings
