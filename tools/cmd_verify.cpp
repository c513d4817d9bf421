// p2v verify: enumerates every valid program with the SMT solver(s) and with the enumerator, per
// matrix, and reports whether the sets are identical (differences as concrete programs with the
// state where the sides disagree); optionally writes certificates. The comparison and its
// scheduling are encodings::verify_placements; this file holds the options and the output.
#ifdef P2V_HAVE_ENCODINGS
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"
#include "p2v/encodings/verify.hpp"
#include "p2v/engine/error.hpp"
#include "solver_flags.hpp"
#ifdef P2V_HAVE_CHECKER
#include "certify_dir.hpp"
#endif

namespace p2v::tools {
namespace {

struct VerifyArgs {
  ProblemArgs problem;
  SearchArgs search;
  std::string solver = "both";
  std::string choice = "binary";
  bool non_incremental = false;
  int jobs = 0;
  bool minimal = false;
  double timeout_s = 600;
  std::string certify;
  bool proofs = false, force = false;
  bool json = false;
  std::string encoding = "auto";
  SolverFlags solver_flags;
};

encodings::VerifyOptions verify_options(const VerifyArgs& a) {
  encodings::VerifyOptions o;
  o.solvers = encodings::smt::parse_solver_list(a.solver);
  if (a.proofs && a.certify.empty()) throw Error("--proofs needs --certify DIR");
  if (a.timeout_s < 0) throw Error("--timeout must be >= 0");
  if (a.jobs < 0) throw Error("--jobs must be >= 0");
  o.synth = a.search.options();
  o.kind = a.search.kind();
  o.encoding = encodings::parse_verify_encoding(a.encoding);
  o.minimal = a.minimal;
  o.jobs = a.jobs;
  o.certify_dir = a.certify;
  o.search.choice = encodings::parse_choice_encoding(a.choice);
  o.search.incremental = !a.non_incremental;
  o.search.timeout_ms = static_cast<unsigned>(a.timeout_s * 1000);
  o.search.proofs = a.proofs;
  o.search.bury_solver = true;  // a command-line run: the process exits soon after
  apply_solver_flags(a.solver_flags, o.search);
  return o;
}

// One table row per matrix, with the differences below it.
void print_case(const encodings::VerifyCase& c, const encodings::VerifyOptions& o) {
  const auto& r = c.enumerator;
  std::string cells;
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    const auto& run = c.runs[i];
    cells += o.minimal
                 ? fmt::format("  {} {}: shortest {} in {:.2f}s", run.solver, run.version, run.shortest, run.seconds)
                 : fmt::format("  {} {}: {} in {:.2f}s", run.solver, run.version, run.programs.size(), run.seconds);
    if (!c.run_agrees[i]) cells += " DIFFERENT";
  }
  fmt::print("{:<16} ({}) [{:<14} {:<8} {:>3} {:>4} | {:>5} {:>7.2f}ms |{}  => {}\n", engine::format_matrix(c.x),
             engine::to_string(o.kind), fmt::format("{}]{}", fmt::join(r.hierarchy.cards, " "), c.shape ? "*" : ""),
             c.encoding(), r.hierarchy.num_local(), r.instructions.size(),
             o.minimal ? fmt::format("len {}", c.shortest()) : std::to_string(r.programs.size()), c.enumerator_ms,
             cells, c.same() ? (o.minimal ? "agree" : "identical") : "DIFFERENT");
  for (const auto& d : c.differences) fmt::print("    {}\n", d);
}

void print_summary(const encodings::VerifyResult& res, const VerifyArgs& a, std::size_t matrices) {
  if (res.any_shape())
    fmt::print(
        "* encoded on the shape's smallest instance (one state per device class, docs/shape.md section 5); "
        "k is its device count\n");
  if (std::any_of(res.cases.begin(), res.cases.end(), [](const encodings::VerifyCase& c) { return c.symbolic; }))
    fmt::print(
        "symbolic: the solvers searched the per-level symbolic encoding (per level the row bit its digit is fixed "
        "to, per device one column set; encodings/README.md)\n");
  fmt::print("{}: {} matrices, enumerator and {} {}\n", res.identical ? "verified" : "MISMATCH", matrices,
             a.solver == "both" ? "z3 and cvc5" : a.solver,
             !res.identical ? "disagree (see above)"
             : a.minimal    ? "agree on the shortest program's length (every smaller bound unsat)"
                            : "find identical sets of programs");
  if (!a.certify.empty())
    fmt::print("{} certificates written to {}{}\n", res.certificates, a.certify,
               res.identical ? "" : " (none for the matrices that differ)");
}

Registrar reg("verify", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<VerifyArgs>();
  add_problem_options(sub, a->problem);
  add_search_options(sub, a->search, /*with_hierarchy=*/true);
  sub.add_option("--solver", a->solver, "z3, cvc5 or both")->capture_default_str();
  sub.add_option("--choice", a->choice, "instruction choice encoding: binary or onehot")->capture_default_str();
  sub.add_flag("--non-incremental", a->non_incremental,
               "a fresh solver per size bound (default: one solver, each bound under an activation literal)");
  sub.add_option("--jobs", a->jobs, "solver runs (one per matrix and solver) at once; 0 = one per hardware thread")
      ->capture_default_str();
  sub.add_option("--timeout", a->timeout_s,
                 "time limit per solver check, seconds (0 = none); a timeout is an error, never 'verified'")
      ->capture_default_str();
  sub.add_option("--certify", a->certify, "write one JSON certificate per program into this directory");
  sub.add_flag("--proofs", a->proofs, "with --certify: store cvc5's proofs of the unsat answers beside them");
  sub.add_flag("--force", a->force,
               "with --certify: replace the certificates of an earlier run in DIR (the files its MANIFEST.json "
               "lists); without it a non-empty DIR is refused");
  sub.add_flag("--minimal", a->minimal,
               "only the minimality query: per solver, bounds 1, 2, ... until one is sat; the shortest length "
               "must equal the enumerator's (unsat below it: no shorter program) and the program be one of its");
  sub.add_flag("--json", a->json, "machine-readable output");
  sub.add_option("--encoding", a->encoding,
                 "concrete (one state per device of a reduction group), shape (one per device class: the "
                 "shape's smallest instance, docs/shape.md; hierarchy (d) only), symbolic (the per-level "
                 "encoding on the shape's smallest instance, encodings/README.md; an error where it does not "
                 "apply) or auto (symbolic from 4 devices per reduction group where it applies; else shape above 16 "
                 "devices per group, concrete up to it)")
      ->capture_default_str();
  add_solver_flags(sub, a->solver_flags);
  return [a] {
    const Problem p = load_problem(a->problem);
    const encodings::VerifyOptions o = verify_options(*a);
    if (a->force && a->certify.empty()) throw Error("--force needs --certify DIR");
#ifdef P2V_HAVE_CHECKER
    if (!a->certify.empty()) prepare_certificate_dir(a->certify, a->force, "--certify");
#endif
    if (!a->json)
      fmt::print("{:<16} {:<18} {:<8} {:>3} {:>4} | {:>14} | {}\n", "matrix", "hierarchy", "encoding", "k", "ins",
                 "enumerator", "solvers (programs, seconds)");
    std::function<void(const encodings::VerifyCase&)> on_case;
    if (!a->json) on_case = [&o](const encodings::VerifyCase& c) { print_case(c, o); };
    const auto res = encodings::verify_placements(p.system, p.axes, p.reduce, p.matrices, o, on_case);
#ifdef P2V_HAVE_CHECKER
    if (!a->certify.empty()) {  // last: the manifest lists every file of this run with its hash
      std::vector<std::string> solvers;
      for (auto k : o.solvers) solvers.push_back(encodings::smt::to_string(k));
      write_manifest(a->certify, solvers);
    }
#endif
    if (a->json) {
      nlohmann::json out = {{"system", p.system.name},
                            {"axes", p.axes},
                            {"reduce", p.reduce},
                            {"hierarchy_kind", engine::to_string(o.kind)},
                            {"max_size", o.synth.max_size},
                            {"mode", a->minimal ? "minimal" : "sets"},
                            {"results", nlohmann::json::array()},
                            {"identical", res.identical}};
      for (const auto& c : res.cases) out["results"].push_back(encodings::to_json(c, a->minimal));
      fmt::print("{}\n", out.dump(2));
    } else {
      print_summary(res, *a, p.matrices.size());
    }
    return res.identical ? 0 : 1;
  };
});

}  // namespace
}  // namespace p2v::tools
#endif  // P2V_HAVE_ENCODINGS
