// p2v prove: Theorem 3.2 and lemmas B.1-B.8 (docs/model.md §7), on the system's devices or, at any size, on
// the placement's smallest instance (docs/shape.md §9). Options only; the work is proofs::run_cases.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <map>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/proofs/prove_run.hpp"

namespace p2v::tools {
namespace {

struct ProveArgs {
  ProblemArgs problem;
  std::string suite, solver = "both", master = "allreduce", on = "auto";
  int max_size = 4;
  std::int64_t max_instance = proofs::kDefaultMaxInstanceDevices;
  int jobs = 0;
  double timeout_s = 60;
  bool json = false, verbose = false;

  std::vector<proofs::SuiteCase> cases() const {
    if (!suite.empty()) {
      if (!problem.system.empty() || !problem.preset.empty())
        throw Error("give either --suite or --system/--axes/--reduce, not both");
      return proofs::load_suite(suite);
    }
    if ((problem.system.empty() && problem.preset.empty()) || problem.axes.empty() || problem.reduce.empty())
      throw Error("prove needs --suite FILE, or --system, --axes and --reduce");
    Problem p = load_problem(problem);
    return {{"cli", p.system, p.axes, p.reduce, p.matrices, max_size, {}}};
  }

  proofs::ProveOptions options() const {
    proofs::ProveOptions opt;
    opt.solvers = proofs::parse_solvers(solver);
    if (!(timeout_s > 0)) throw Error("--timeout must be positive");
    opt.timeout_ms = static_cast<unsigned>(timeout_s * 1000);
    opt.master = engine::parse_master_collectives(master);
    opt.mode = proofs::parse_prove_mode(on);
    if (max_instance < 1 || max_instance > proofs::kMaxConcreteProveDevices)
      throw Error(fmt::format("--max-instance {}: must be 1..{}", max_instance, proofs::kMaxConcreteProveDevices));
    opt.max_instance_devices = max_instance;
    if (jobs < 0) throw Error(fmt::format("--jobs {}: must be >= 0 (0 = one per hardware thread)", jobs));
    opt.jobs = jobs;
    return opt;
  }
};

Registrar reg("prove", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<ProveArgs>();
  add_system_options(sub, a->problem.system, a->problem.preset);
  sub.add_option("--axes", a->problem.axes, "parallelism axis sizes, e.g. 4,16");
  sub.add_option("--reduce", a->problem.reduce, "reduction axis indices (0-based)");
  sub.add_option("--matrix", a->problem.matrix, "one parallelism matrix, e.g. \"1 4;4 4\" (default: all)");
  sub.add_option("--suite", a->suite, "a JSON list of sample cases (e.g. examples/suites/lemmas.json)");
  sub.add_option("--max-size", a->max_size, "largest program size for the enumeration (suite cases set their own)")
      ->capture_default_str();
  sub.add_option("--solver", a->solver, "solvers for the instruction-level queries: z3, cvc5, both or none")
      ->capture_default_str();
  sub.add_option("--timeout", a->timeout_s, "per-query solver time limit in seconds")->capture_default_str();
  sub.add_option("--master-collectives", a->master, "allreduce (default) or all")->capture_default_str();
  sub.add_option("--on", a->on,
                 "where to compute: concrete (the system's devices, at most 512), shape (the placement's smallest "
                 "instance, lifted by docs/shape.md §9) or auto (concrete up to 512 devices, shape above)")
      ->capture_default_str();
  sub.add_option("--jobs", a->jobs, "placements proved at once; 0 = one per hardware thread")->capture_default_str();
  sub.add_option("--max-instance", a->max_instance,
                 "largest smallest instance (devices) the shape path enumerates, up to 512")
      ->capture_default_str();
  sub.add_flag("--json", a->json, "machine-readable output");
  sub.add_flag("-v,--verbose", a->verbose, "print every check's detail, not only failures and witnesses");
  return [a] {
    // Progress on stderr once a run over several placements has taken a few seconds.
    const auto t0 = std::chrono::steady_clock::now();
    const auto progress = [t0](std::size_t done, std::size_t total, const proofs::CaseRun& run) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (total < 2 || s < 2) return;
      std::map<std::string, int> n;
      for (const auto& c : run.report.checks) ++n[proofs::to_string(c.status)];
      std::string what = run.ok ? "ok" : "not ok:";
      if (run.ok && n["fails"]) what += fmt::format(" ({} fail as the suite records)", n["fails"]);
      for (const char* st : {"fails", "unknown"})
        if (!run.ok && n[st]) what += fmt::format(" {} {}", n[st], st);
      fmt::print(stderr, "prove: {}/{} placements, {:.0f} s; [{}] {} in {:.1f} s\n", done, total, s,
                 engine::format_matrix(run.report.matrix), what, run.seconds);
    };
    const auto result = proofs::run_cases(a->cases(), a->options(), progress);
    fmt::print("{}\n", a->json ? proofs::to_json(result) : proofs::print_table(result, a->verbose));
    return result.ok ? 0 : 1;
  };
});

}  // namespace
}  // namespace p2v::tools
