// p2v rules list|show|prove: rewrite rules over collectives, proved by Z3 and cvc5 against the
// counting semantics (docs/rules.md).
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"
#include "p2v/encodings/rules.hpp"
#include "p2v/engine/derive.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/notation.hpp"
#include "p2v/engine/write.hpp"
#include "p2v/proofs/expressiveness.hpp"
#ifdef P2V_HAVE_CHECKER
#include "certify_dir.hpp"
#endif

namespace p2v::tools {
namespace {

using encodings::EquationResult;
using encodings::RuleProof;

const std::vector<encodings::smt::SolverKind> kBoth = {encodings::smt::SolverKind::Z3,
                                                       encodings::smt::SolverKind::Cvc5};

nlohmann::json rule_json(const engine::Rule& r) {
  return {{"id", r.id},
          {"title", r.title},
          {"lhs", engine::rule_side_text(r.lhs)},
          {"rhs", engine::rule_side_text(r.rhs)},
          {"compare", r.compare == engine::RuleCompare::Equal ? "equal" : "transpose"},
          {"expected", r.holds ? "holds" : "fails"},
          {"axes", r.arity},
          {"side_conditions", r.side_conditions},
          {"used_by_rewrite", r.rewrite}};
}

std::string relation(const engine::Rule& r) {
  if (r.compare == engine::RuleCompare::Transpose) return r.holds ? "=T" : "!=T";
  return r.holds ? "=" : "!=";
}

std::string answers_text(const EquationResult& e) {
  std::string t;
  for (const auto& r : e.runs)
    t += fmt::format("{}{} {} {} ({:.0f} ms)", t.empty() ? "" : ", ", r.solver, r.version,
                     encodings::smt::to_string(r.result), r.ms);
  return t;
}

// Per solver, over every shape of a rule's bounded run: how many shapes it answered unsat
// ("equal there") and sat, and its total time.
struct SolverTally {
  std::string solver, version;
  std::size_t unsat = 0, sat = 0, other = 0;
  double ms = 0;
};
std::vector<SolverTally> solver_tally(const RuleProof& p) {
  std::vector<SolverTally> out;
  for (const auto& s : p.shapes)
    for (std::size_t i = 0; i < s.result.runs.size(); ++i) {
      const auto& r = s.result.runs[i];
      if (out.size() <= i) out.push_back({r.solver, r.version});
      auto& t = out[i];
      (r.result == encodings::smt::Result::unsat ? t.unsat
       : r.result == encodings::smt::Result::sat ? t.sat
                                                 : t.other)++;
      t.ms += r.ms;
    }
  return out;
}
// "z3 4.8.12 unsat on 63 of 63 shapes (120 ms), cvc5 1.0.3 unsat on 63 of 63 shapes (80 ms)"
std::string tally_text(const RuleProof& p) {
  std::string t;
  for (const auto& x : solver_tally(p))
    t += fmt::format("{}{} {} unsat on {} of {} shapes{} ({:.0f} ms)", t.empty() ? "" : ", ", x.solver, x.version,
                     x.unsat, p.shapes.size(), x.sat ? fmt::format(", sat on {}", x.sat) : "", x.ms);
  return t;
}

struct ProveArgs {
  std::vector<std::string> ids;
  bool all = false, all_sizes = false, json = false;
  int max_devices = 16;
  double timeout_s = 30;
  std::string certs, encoding = "auto";
  bool force = false;
  ProblemArgs problem;
  std::string lhs, rhs;
};

// User equation on a system: every matrix where both programs resolve.
int prove_equation(const ProveArgs& a) {
  if (a.lhs.empty() || a.rhs.empty()) throw Error("an equation needs both --lhs \"PROGRAM\" and --rhs \"PROGRAM\"");
  if (!a.ids.empty() || a.all) throw Error("give rule ids (or --all) or --system/--lhs/--rhs, not both");
  // Certificates are written for catalogue rules only (their queries are rebuilt from the catalogue
  // by `p2v check`); an equation's run would otherwise end with exit 0 and no directory.
  if (!a.certs.empty())
    throw Error(
        "--certify: rule certificates are written for the catalogue's rules (p2v rules prove ID... --certify DIR), "
        "not for an equation given with --lhs/--rhs; prove it without --certify, or as a rewrite with p2v rewrite "
        "--certificate FILE");
  Problem p = load_problem(a.problem);
  nlohmann::json out = nlohmann::json::array();
  int worst = 0;  // 0 proved, 1 refuted, 3 unknown
  std::string first_error;
  int done = 0;
  for (const auto& x : p.matrices) {
    const engine::Placement pl = p.placement(x);
    const auto h = engine::make_hierarchy(pl, p.system.level_names(), engine::HierarchyKind::ReductionAxes);
    encodings::Equation eq;
    eq.k = pl.num_devices();
    try {
      eq.lhs = engine::resolve_program(h, a.lhs);
      eq.rhs = engine::resolve_program(h, a.rhs);
    } catch (const p2v::Error& e) {
      if (first_error.empty()) first_error = fmt::format("matrix {}: {}", engine::format_matrix(x), e.what());
      continue;
    }
    ++done;
    const auto res = encodings::solve_equation(eq, kBoth, static_cast<unsigned>(a.timeout_s * 1000));
    std::string verdict = res.verdict == EquationResult::Equal    ? "proved"
                          : res.verdict == EquationResult::Differ ? "refuted"
                                                                  : "unknown";
    const int code = res.verdict == EquationResult::Equal ? 0 : res.verdict == EquationResult::Differ ? 1 : 3;
    worst = std::max(worst, code);
    std::string scope = fmt::format("on this system ({} devices) only", eq.k);
    if (a.all_sizes && code == 0) {
      verdict = "unknown";
      scope = "proved on this system only; no all-sizes proof for programs on a system's hierarchy";
      worst = std::max(worst, 3);
    }
    if (a.json) {
      nlohmann::json j{{"matrix", engine::format_matrix(x)},
                       {"verdict", verdict},
                       {"scope", scope},
                       {"devices", eq.k},
                       {"query_hash", res.hash},
                       {"problem", res.problem}};
      j["answers"] = nlohmann::json::array();
      for (const auto& r : res.runs)
        j["answers"].push_back({{"solver", r.solver},
                                {"version", r.version},
                                {"answer", encodings::smt::to_string(r.result)},
                                {"ms", r.ms}});
      if (res.difference && res.verdict == EquationResult::Differ) {
        const auto& d = *res.difference;
        j["counterexample"] = {{"device", d.device},
                               {"chunk", d.row},
                               {"source", d.source},
                               {"lhs", d.lhs ? nlohmann::json(*d.lhs) : nlohmann::json(nullptr)},
                               {"rhs", d.rhs ? nlohmann::json(*d.rhs) : nlohmann::json(nullptr)}};
      }
      out.push_back(std::move(j));
    } else {
      fmt::print("matrix {}: {}{}\n  solvers: {}\n", engine::format_matrix(x), verdict,
                 code == 0 || a.all_sizes ? " (" + scope + ")" : "", answers_text(res));
      if (res.verdict == EquationResult::Differ)
        fmt::print("  counterexample: {} (lhs vs rhs multiplicity of the source's chunk)\n",
                   res.difference->describe());
      if (!res.problem.empty()) fmt::print("  {}\n", res.problem);
    }
  }
  if (done == 0) throw Error("the programs do not fit the system: " + first_error);
  if (a.json) fmt::print("{}\n", out.dump(2));
  return worst;
}

int prove_rules(const ProveArgs& a) {
  std::vector<const engine::Rule*> rules;
  if (a.all || a.ids.empty()) {
    if (!a.ids.empty()) throw Error("give rule ids or --all, not both");
    for (const auto& r : engine::rule_catalog()) rules.push_back(&r);
  } else {
    for (const auto& id : a.ids) rules.push_back(&engine::find_rule(id));
  }
  if (a.max_devices > 256) throw Error(fmt::format("--max-devices {}: at most 256", a.max_devices));
  if (a.force && a.certs.empty()) throw Error("--force needs --certify DIR");
#ifdef P2V_HAVE_CHECKER
  if (!a.certs.empty()) prepare_certificate_dir(a.certs, a.force, "--certify");
#else
  if (!a.certs.empty()) throw Error("--certify needs p2v-smt with the independent checker (not built)");
#endif
  const encodings::RuleEncoding enc = encodings::parse_rule_encoding(a.encoding);
  nlohmann::json out = nlohmann::json::array();
  int worst = 0;
  double total = 0;
  int all_proved = 0;
  for (const auto* r : rules) {
    const RuleProof p =
        encodings::prove_rule(*r, a.max_devices, kBoth, static_cast<unsigned>(a.timeout_s * 1000), enc, a.all_sizes);
    total += p.ms;
    std::string status = to_string(p.status);
    int code = p.status == RuleProof::Proved || p.status == RuleProof::Refuted ? 0
               : p.status == RuleProof::Unknown                                ? 3
                                                                               : 1;
    std::string scope = p.scope;
    const auto& as = p.all_sizes;
    std::string all_line;
    if (p.status == RuleProof::Proved) {
      status = fmt::format("proved up to {} devices only", a.max_devices);
      if (a.all_sizes && as.status == "proved") {
        status = fmt::format("proved for all sizes, and up to {}", a.max_devices);
        ++all_proved;
        all_line = "all sizes: proved (per-digit closed forms, radix order " + p.radix_order + "): ";
        for (std::size_t i = 0; i < as.runs.size(); ++i)
          all_line += fmt::format("{}{} {} ({:.0f} ms)", i ? ", " : "", as.runs[i].solver,
                                  encodings::smt::to_string(as.runs[i].result), as.runs[i].ms);
      } else if (a.all_sizes) {
        all_line = "all sizes: unknown: " + as.reason;
        scope = "all sizes: unknown (" + as.reason + "); " + p.scope;
        code = 3;
      }
    }
    worst = code == 1 ? 1 : std::max(worst, code);
    std::string cert_file;
    if (!a.certs.empty()) {
      cert_file = (std::filesystem::path(a.certs) / (r->id + ".json")).string();
      engine::write_file_atomic(cert_file, encodings::rule_certificate_json(*r, p) + "\n", "certificate");
    }
    if (a.json) {
      nlohmann::json j = rule_json(*r);
      j["status"] = to_string(p.status);
      j["scope"] = scope;
      j["message"] = p.message;
      j["shapes"] = p.shapes.size();
      j["ms"] = p.ms;
      j["encoding"] = p.encoding;
      j["bounded_answers"] = nlohmann::json::array();
      for (const auto& x : solver_tally(p))
        j["bounded_answers"].push_back({{"solver", x.solver},
                                        {"version", x.version},
                                        {"unsat", x.unsat},
                                        {"sat", x.sat},
                                        {"other", x.other},
                                        {"ms", x.ms}});
      if (as.asked) {
        nlohmann::json aj{{"status", as.status}, {"reason", as.reason}, {"ms", as.ms}, {"closed_forms", as.forms}};
        aj["answers"] = nlohmann::json::array();
        for (const auto& x : as.runs)
          aj["answers"].push_back(
              {{"solver", x.solver}, {"answer", encodings::smt::to_string(x.result)}, {"ms", x.ms}});
        j["all_sizes"] = std::move(aj);
      }
      if (!cert_file.empty()) j["certificate"] = cert_file;
      out.push_back(std::move(j));
    } else {
      fmt::print("{:<22} {:<36} {} shapes, {:.0f} ms\n", r->id, status, p.shapes.size(), p.ms);
      if (!p.message.empty())
        fmt::print("  {}{}\n", p.status == RuleProof::Refuted ? "counterexample: " : "", p.message);
      if (p.status == RuleProof::Refuted) fmt::print("  solvers: {}\n", answers_text(p.shapes.back().result));
      if (p.status == RuleProof::Proved)
        fmt::print("  up to {} ({} encoding): {}\n", a.max_devices, p.encoding, tally_text(p));
      if (!all_line.empty()) fmt::print("  {}\n", all_line);
    }
  }
#ifdef P2V_HAVE_CHECKER
  if (!a.certs.empty()) write_manifest(a.certs, {"z3", "cvc5"});  // last: every file of this run, hashed
#endif
  if (a.json)
    fmt::print("{}\n", out.dump(2));
  else
    fmt::print("{} rules in {:.1f} s (Z3 and cvc5 on every grid shape up to {} devices{})\n", rules.size(),
               total / 1000, a.max_devices, a.all_sizes ? fmt::format("; {} proved for all sizes", all_proved) : "");
  return worst;
}

struct DeriveArgs {
  ProblemArgs problem;
  std::string suite, master = "allreduce";
  int max_size = 5;
  bool json = false, verbose = false;
};

// Derivation vs the enumerator on every placement of the problem or the suite. Exit 0 when no
// derived program is missing from the enumerator's set unexplained (a "discrepancy").
int derive_cmd(const DeriveArgs& a) {
  std::vector<proofs::SuiteCase> cases;
  if (!a.suite.empty()) {
    if (!a.problem.system.empty() || !a.problem.preset.empty())
      throw Error("give either --suite or --system/--axes/--reduce, not both");
    cases = proofs::load_suite(a.suite);
  } else {
    if ((a.problem.system.empty() && a.problem.preset.empty()) || a.problem.axes.empty() || a.problem.reduce.empty())
      throw Error("rules derive needs --suite FILE, or --system, --axes and --reduce");
    Problem p = load_problem(a.problem);
    cases.push_back({"cli", p.system, p.axes, p.reduce, p.matrices, a.max_size, {}});
  }
  nlohmann::json out = nlohmann::json::array();
  int discrepancies = 0;
  std::int64_t tot_derived = 0, tot_enum = 0, tot_common = 0;
  for (const auto& cs : cases) {
    for (const auto& x : cs.matrices) {
      engine::Placement pl(cs.system.cardinalities(), cs.axes, x, cs.reduce);
      engine::DeriveOptions o;
      o.max_size = a.suite.empty() ? a.max_size : cs.max_size;
      o.master = engine::parse_master_collectives(a.master);
      const auto c = engine::compare_with_enumerator(pl, cs.system.level_names(), o);
      for (const auto& d : c.only_derived)
        if (d.reason.find("discrepancy") != std::string::npos) ++discrepancies;
      tot_derived += static_cast<std::int64_t>(c.derived.programs.size());
      tot_enum += c.enumerated;
      tot_common += c.common;
      if (a.json) {
        nlohmann::json j{{"case", cs.name},
                         {"matrix", engine::format_matrix(x)},
                         {"max_size", o.max_size},
                         {"derived", c.derived.programs.size()},
                         {"enumerated", c.enumerated},
                         {"common", c.common},
                         {"derive_ms", c.derive_ms},
                         {"applications", c.derived.applications},
                         {"rejected_by_counting", c.derived.rejected}};
        j["programs"] = nlohmann::json::array();
        for (const auto& d : c.derived.programs)
          j["programs"].push_back({{"notation", engine::program_notation(c.hierarchy, d.program)},
                                   {"derivation", engine::derivation_text(d.derivation)}});
        for (const char* key : {"only_enumerator", "only_derived"}) {
          j[key] = nlohmann::json::array();
          for (const auto& d : std::string(key) == "only_derived" ? c.only_derived : c.only_enumerator)
            j[key].push_back({{"notation", d.notation}, {"reason", d.reason}, {"derivation", d.derivation}});
        }
        out.push_back(std::move(j));
        continue;
      }
      fmt::print(
          "{} matrix {}: derived {} ({:.1f} ms, {} rule instances, {} rejected by the counting check), "
          "enumerated {}, common {}\n",
          cs.name, engine::format_matrix(x), c.derived.programs.size(), c.derive_ms, c.derived.applications,
          c.derived.rejected, c.enumerated, c.common);
      if (a.verbose)
        for (const auto& d : c.derived.programs)
          fmt::print("  derived  {}   [{}]\n", engine::program_notation(c.hierarchy, d.program),
                     engine::derivation_text(d.derivation));
      for (const auto& d : c.only_derived)
        fmt::print("  only derived:    {}   [{}]\n    why: {}\n", d.notation, d.derivation, d.reason);
      for (const auto& d : c.only_enumerator) fmt::print("  only enumerated: {}\n    why: {}\n", d.notation, d.reason);
    }
  }
  if (a.json)
    fmt::print("{}\n", out.dump(2));
  else
    fmt::print("total: derived {}, enumerated {}, common {}{}\n", tot_derived, tot_enum, tot_common,
               discrepancies ? fmt::format(", {} DISCREPANCIES", discrepancies) : "");
  return discrepancies ? 1 : 0;
}

Registrar reg("rules", [](CLI::App& sub) -> std::function<int()> {
  sub.require_subcommand(1);
  auto json = std::make_shared<bool>(false);
  auto* list = sub.add_subcommand("list", "List the rules (positive, adjoint, commuting and negative ones)");
  list->add_flag("--json", *json, "machine-readable output");
  auto show_id = std::make_shared<std::string>();
  auto* show = sub.add_subcommand("show", "Show one rule: its sides, side conditions and a lowering on a 2x2 grid");
  show->add_option("rule", *show_id, "rule id (see `p2v rules list`)")->required();
  show->add_flag("--json", *json, "machine-readable output");
  auto a = std::make_shared<ProveArgs>();
  auto* prove = sub.add_subcommand(
      "prove",
      "Prove rules (every grid shape up to --max-devices, Z3 and cvc5 must agree; negative rules refuted with a "
      "smallest counterexample), or your own equation --lhs = --rhs on a system");
  prove->add_option("rules", a->ids, "rule ids (default: all)");
  prove->add_flag("--all", a->all, "every rule of the catalogue");
  prove->add_option("--max-devices", a->max_devices, "largest grid (number of devices) to prove on")
      ->capture_default_str();
  prove->add_option("--timeout", a->timeout_s, "per-query solver time limit in seconds (timeout = unknown)")
      ->capture_default_str();
  add_certify_option(*prove, a->certs, "write one rule certificate per rule into DIR (see `p2v check`)");
  prove->add_flag("--force", a->force,
                  "with --certify: replace the certificates of an earlier run in DIR (the files its "
                  "MANIFEST.json lists); without it a non-empty DIR is refused");
  prove->add_flag("--all-sizes", a->all_sizes,
                  "also prove each positive rule for every size (per-digit closed forms, Z3 and cvc5; rules outside "
                  "the per-digit fragment answer unknown with the reason, exit 3)");
  prove
      ->add_option("--encoding", a->encoding,
                   "bounded queries: auto (per-digit where the rule is in its fragment), concrete or per-digit")
      ->capture_default_str();
  add_system_options(*prove, a->problem.system, a->problem.preset);
  prove->add_option("--axes", a->problem.axes, "parallelism axis sizes, e.g. 4,16");
  prove->add_option("--reduce", a->problem.reduce, "reduction axis indices (0-based)");
  prove->add_option("--matrix", a->problem.matrix, "one parallelism matrix (default: every matrix the programs fit)");
  prove->add_option("--lhs", a->lhs, "left program in p2v notation on the placement's (d) hierarchy");
  prove->add_option("--rhs", a->rhs, "right program");
  prove->add_flag("--json", a->json, "machine-readable output");
  prove->footer(
      "Exit status: rules: 0 every rule as catalogued, 1 a rule contradicts its entry, 3 unknown (timeout or "
      "the solvers disagree). Equations: 0 proved, 1 refuted, 3 unknown.");
  auto da = std::make_shared<DeriveArgs>();
  auto* derive = sub.add_subcommand(
      "derive",
      "Derive programs from AllReduce over the reduction group with the rewrite rules (breadth first, on the "
      "placement's (d) hierarchy) and compare with the enumerator");
  add_system_options(*derive, da->problem.system, da->problem.preset);
  derive->add_option("--axes", da->problem.axes, "parallelism axis sizes, e.g. 4,16");
  derive->add_option("--reduce", da->problem.reduce, "reduction axis indices (0-based)");
  derive->add_option("--matrix", da->problem.matrix, "one parallelism matrix (default: all)");
  derive->add_option("--suite", da->suite, "a JSON list of cases (e.g. examples/suites/lemmas.json)");
  derive->add_option("--max-size", da->max_size, "largest program size")->capture_default_str();
  derive->add_option("--master-collectives", da->master, "allreduce (default) or all")->capture_default_str();
  derive->add_flag("--json", da->json, "machine-readable output (every program with its derivation)");
  derive->add_flag("-v,--verbose", da->verbose, "print every derived program with its derivation");
  return [list, show, prove, derive, json, show_id, a, da]() -> int {
    if (derive->parsed()) return derive_cmd(*da);
    if (list->parsed()) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : engine::rule_catalog()) {
        if (*json)
          out.push_back(rule_json(r));
        else
          fmt::print("{:<22} {} {} {}\n", r.id, engine::rule_side_text(r.lhs), relation(r),
                     engine::rule_side_text(r.rhs));
      }
      if (*json) fmt::print("{}\n", out.dump(2));
      return 0;
    }
    if (show->parsed()) {
      const auto& r = engine::find_rule(*show_id);
      const std::vector<int> shape(static_cast<std::size_t>(r.arity), 2);
      auto lowered = [&](const engine::RuleSide& s) {
        std::string t;
        for (const auto& st : engine::lower_grid(s.steps, shape))
          t += fmt::format("{}{} {}", t.empty() ? "" : " ; ", engine::to_string(st.collective), st.groups);
        return t.empty() ? std::string("id") : t;
      };
      if (*json) {
        auto j = rule_json(r);
        j["example_shape"] = shape;
        j["example_lhs"] = lowered(r.lhs);
        j["example_rhs"] = lowered(r.rhs);
        fmt::print("{}\n", j.dump(2));
        return 0;
      }
      fmt::print("{}: {}\n  {} {} {}\n  side conditions: {}\n  expected: {}{}\n", r.id, r.title,
                 engine::rule_side_text(r.lhs), relation(r), engine::rule_side_text(r.rhs), r.side_conditions,
                 r.holds ? "holds" : "fails (refuted with a smallest counterexample)",
                 r.rewrite ? "; used by derivation and rewrite" : "");
      fmt::print("  on a {} grid (member order = block order):\n    lhs: {}\n    rhs: {}\n", fmt::join(shape, "x"),
                 lowered(r.lhs), lowered(r.rhs));
      return 0;
    }
    if (!a->problem.system.empty() || !a->problem.preset.empty() || !a->lhs.empty() || !a->rhs.empty())
      return prove_equation(*a);
    return prove_rules(*a);
  };
});

}  // namespace
}  // namespace p2v::tools
