// p2v rewrite: cost-guided rewriting of a program by the verified rules (docs/rules.md), with a
// certificate (Z3 and cvc5 under the counting semantics) that the output equals the input.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"
#include "p2v/encodings/rewrite_certificate.hpp"
#include "p2v/encodings/rules.hpp"
#include "p2v/engine/derive.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/notation.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/rank.hpp"
#include "p2v/sim/rewrite.hpp"

namespace p2v::tools {
namespace {

struct RewriteArgs {
  std::string file, program, certificate;
  ProblemArgs problem;
  CostArgs cost;
  sim::RewriteOptions opt;
  double timeout_s = 60;
  bool json = false, no_certify = false;
};

// The program file: {"program": "...", "axes": [..], "reduce": [..], "matrix": "2 2;2 8"}; the
// command line's --axes/--reduce/--matrix/--program take precedence.
void read_program_file(RewriteArgs& a) {
  const nlohmann::json j = engine::parse_json(engine::read_text_file(a.file, "program file"), "'" + a.file + "'");
  auto list = [](const nlohmann::json& v) {
    std::string t;
    for (const auto& x : v) t += (t.empty() ? "" : ",") + std::to_string(x.get<int>());
    return t;
  };
  try {
    if (a.program.empty()) a.program = j.at("program").get<std::string>();
    if (a.problem.axes.empty() && j.contains("axes")) a.problem.axes = list(j["axes"]);
    if (a.problem.reduce.empty() && j.contains("reduce")) a.problem.reduce = list(j["reduce"]);
    if (a.problem.matrix.empty() && j.contains("matrix")) {
      if (j["matrix"].is_string())
        a.problem.matrix = j["matrix"].get<std::string>();
      else
        a.problem.matrix = engine::format_matrix(j["matrix"].get<engine::ParallelismMatrix>());
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(
        fmt::format("'{}': expected {{\"program\": \"...\", \"axes\": [..], \"reduce\": [..], \"matrix\": "
                    "\"..\"}}: {}",
                    a.file, e.what()));
  }
}

// One matrix: the search, simulate's ranking for comparison, and the solvers' certificate.
struct CaseResult {
  engine::ParallelismMatrix x;
  sim::RewriteResult r;
  double search_ms = 0;
  std::string best;
  sim::MatrixRanking rank;
  bool reduction = false, matches = false, proved = false;
  std::string verdict = "not certified (--no-certify)";
  encodings::RewriteCertificate cert;
};

// Both solvers prove output = input under the counting semantics; the certificate's JSON.
void certify(const RewriteArgs& a, const Problem& p, CaseResult& c, const engine::LoweredProgram& input, int k) {
  encodings::Equation eq;
  eq.k = k;
  eq.lhs = input;
  eq.rhs = c.r.best;
  const auto res = encodings::solve_equation(eq, {encodings::smt::SolverKind::Z3, encodings::smt::SolverKind::Cvc5},
                                             static_cast<unsigned>(a.timeout_s * 1000));
  c.proved = res.verdict == encodings::EquationResult::Equal;
  c.verdict = c.proved ? "proved equal by z3 and cvc5" : "unknown: " + res.problem;
  c.cert = {p.system, p.axes,     p.reduce,    c.x, a.program, c.best, to_string(res.verdict),
            res.hash, res.smtlib, res.problem, {}};
  for (const auto& s : res.runs)
    c.cert.answers.push_back({s.solver, s.version, encodings::smt::to_string(s.result), s.ms});
}

CaseResult run_case(const RewriteArgs& a, const Problem& p, const sim::Simulator& simulator,
                    const sim::CostOptions& copt, const engine::ParallelismMatrix& x,
                    const engine::LoweredProgram& input, const engine::SynthesisHierarchy& h) {
  const engine::Placement pl = p.placement(x);
  CaseResult c;
  c.x = x;
  const engine::RuleMoves moves(h, engine::MasterCollectives::All);
  const auto t0 = std::chrono::steady_clock::now();
  c.r = sim::rewrite_search(moves, simulator, copt, input, a.opt);
  c.search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  c.best = engine::program_notation(h, c.r.best);
  // simulate's best on this placement (the enumerator's programs ranked by the simulator).
  engine::SynthOptions so;
  so.max_size = std::min(a.opt.max_size, 5);
  engine::ProgramSource programs(p.system, p.axes, {engine::HierarchyKind::ReductionAxes, so});
  c.rank = sim::rank_placement(simulator, programs, pl, copt);
  // Only a program equal to the reduction's AllReduce is comparable with simulate's ranking.
  c.reduction = moves.equal(input, sim::single_allreduce(pl.reduction_groups()));
  c.matches = c.reduction && c.r.best_s <= c.rank.best_s() * (1 + 1e-9);
  if (!a.no_certify) certify(a, p, c, input, static_cast<int>(pl.num_devices()));
  return c;
}

nlohmann::json to_json(const RewriteArgs& a, const CaseResult& c) {
  const auto& r = c.r;
  return {{"matrix", engine::format_matrix(c.x)},
          {"input", a.program},
          {"input_s", r.input_s},
          {"best", c.best},
          {"best_s", r.best_s},
          {"derivation", engine::derivation_text(r.derivation)},
          {"search_ms", c.search_ms},
          {"expanded", r.expanded},
          {"generated", r.generated},
          {"pruned", r.pruned},
          {"rejected", r.rejected},
          {"budget_exhausted", r.budget_exhausted},
          {"simulate_best", c.rank.programs.empty() ? std::string() : c.rank.programs.front().name},
          {"simulate_best_s", c.rank.best_s()},
          {"matches_simulate", c.matches},
          {"is_reduction", c.reduction},
          {"certificate", encodings::to_json(c.cert)}};
}

void print_case(const RewriteArgs& a, const CaseResult& c) {
  const auto& r = c.r;
  fmt::print("matrix {}:\n  input   {}  {}\n  best    {}  {} ({:.2f}x)\n  derivation: {}\n", engine::format_matrix(c.x),
             sim::format_seconds(r.input_s), a.program, sim::format_seconds(r.best_s), c.best, r.input_s / r.best_s,
             engine::derivation_text(r.derivation));
  fmt::print(
      "  search: {:.1f} ms, {} expanded, {} generated, {} pruned (> {}x best), {} rejected by the counting "
      "check{}\n",
      c.search_ms, r.expanded, r.generated, r.pruned, a.opt.prune, r.rejected,
      r.budget_exhausted ? " (budget exhausted)" : "");
  if (c.reduction)
    fmt::print("  simulate's best: {} {}: {}\n", sim::format_seconds(c.rank.best_s()),
               c.rank.programs.empty() ? std::string("(none)") : c.rank.programs.front().name,
               c.matches ? "found (same predicted time)" : "NOT found");
  else
    fmt::print(
        "  (the input is not the AllReduce over the reduction groups here: simulate's ranking does not "
        "apply)\n");
  fmt::print("  certificate: {}\n", c.verdict);
}

Registrar reg("rewrite", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<RewriteArgs>();
  sub.add_option(
      "program_file", a->file,
      "JSON {\"program\": NOTATION, \"axes\": [..], \"reduce\": [..], \"matrix\": \"..\"} (or use --program)");
  sub.add_option("--program", a->program,
                 "the program in p2v notation on the placement's (d) hierarchy; \"AllReduce\" alone is the single "
                 "AllReduce over the reduction groups");
  add_system_options(sub, a->problem.system, a->problem.preset);
  sub.add_option("--axes", a->problem.axes, "parallelism axis sizes, e.g. 4,16 (else from the program file)");
  sub.add_option("--reduce", a->problem.reduce, "reduction axis indices (else from the program file)");
  sub.add_option("--matrix", a->problem.matrix, "one parallelism matrix (default: every matrix the program fits)");
  add_cost_options(sub, a->cost);
  sub.add_option("--max-size", a->opt.max_size, "largest program size considered")->capture_default_str();
  sub.add_option("--budget", a->opt.budget, "most programs expanded")->capture_default_str();
  sub.add_option("--prune", a->opt.prune, "drop candidates slower than this factor times the best")
      ->capture_default_str();
  sub.add_option("--certificate", a->certificate, "write the equality certificate (JSON) to FILE");
  sub.add_option("--timeout", a->timeout_s, "solver time limit per query in seconds (timeout = unknown)")
      ->capture_default_str();
  sub.add_flag("--no-certify", a->no_certify, "skip the solvers (the counting check still runs)");
  sub.add_flag("--json", a->json, "machine-readable output");
  return [a]() -> int {
    if (!a->file.empty()) read_program_file(*a);
    if (a->program.empty()) throw Error("give a program file or --program \"NOTATION\"");
    if (a->problem.axes.empty() || a->problem.reduce.empty())
      throw Error("the axes and reduction axes are missing: give --axes and --reduce or put them in the program file");
    if (a->opt.max_size < 1 || a->opt.max_size > engine::kMaxProgramSize)
      throw Error(fmt::format("--max-size {}: expected 1..{}", a->opt.max_size, engine::kMaxProgramSize));
    if (a->opt.prune < 1.0) throw Error(fmt::format("--prune {}: must be at least 1", a->opt.prune));
    Problem p = load_problem(a->problem);
    nlohmann::json accuracy;
    if (const auto note = fill_interconnects(p.system, a->problem.preset, false, "", "", &accuracy);
        !note.empty() && !a->json)
      fmt::print("{}\n", note);
    const sim::Simulator simulator(p.system);
    const auto copt = a->cost.options(p.system);
    nlohmann::json out = nlohmann::json::array();
    int code = 0;
    std::string first_error;
    int done = 0;
    for (const auto& x : p.matrices) {
      const engine::Placement pl = p.placement(x);
      const auto h = engine::make_hierarchy(pl, p.system.level_names(), engine::HierarchyKind::ReductionAxes);
      engine::LoweredProgram input;
      try {
        // "AllReduce" alone: the single AllReduce over the reduction groups.
        input = a->program == "AllReduce" ? sim::single_allreduce(pl.reduction_groups())
                                          : engine::resolve_program(h, a->program);
      } catch (const p2v::Error& e) {
        if (first_error.empty()) first_error = fmt::format("matrix {}: {}", engine::format_matrix(x), e.what());
        continue;
      }
      ++done;
      const CaseResult c = run_case(*a, p, simulator, copt, x, input, h);
      if (!a->no_certify && !c.proved) code = 3;
      if (!a->no_certify && !a->certificate.empty())
        write_file(p.matrices.size() > 1 ? fmt::format("{}.{}", a->certificate, done) : a->certificate,
                   encodings::to_json(c.cert).dump(1) + "\n");
      if (a->json) {
        out.push_back(to_json(*a, c));
        add_accuracy(out.back(), accuracy);
      } else
        print_case(*a, c);
    }
    if (done == 0) throw Error("the program does not fit the system: " + first_error);
    if (a->json) fmt::print("{}\n", out.dump(2));
    return code;
  };
});

}  // namespace
}  // namespace p2v::tools
