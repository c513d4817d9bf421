// p2v verify: enumerates every valid program with the SMT solver(s) and with the enumerator, per
// matrix, and reports whether the sets are identical (differences as concrete programs with the
// state where the sides disagree); optionally writes certificates.
#ifdef P2V_HAVE_ENCODINGS
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include <optional>
#include "command.hpp"
#include "common.hpp"
#include "p2v/encodings/certificate.hpp"
#include "p2v/encodings/search.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/replay.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"
#include "solver_flags.hpp"

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
  bool proofs = false;
  bool json = false;
  std::string encoding = "auto";
  SolverFlags solver_flags;
};

// Why the engine's Hoare rules reject (or accept) `prog`: the first failing step with the state
// before it, or "valid" with the states after each step (engine::replay).
std::string diagnose(const engine::SynthResult& r, const engine::Program& prog, const engine::Groups& goal_groups) {
  const int k = r.hierarchy.num_local();
  const engine::Trace t = engine::replay(r, prog, &goal_groups);
  auto devices = [k](const engine::StateSet& st) {
    std::string s;
    for (int d = 0; d < k; ++d) s += fmt::format("\n        device {}: {}", d, st.describe_device(d));
    return s;
  };
  if (t.failed_step >= 0 && t.reason.rfind("the goal", 0) == 0) return t.reason;
  if (t.failed_step >= 0)
    return fmt::format(
        "step {} ({}) is invalid: {}; state before it:{}", t.failed_step + 1,
        engine::instruction_name(r.hierarchy, r.instructions.at(static_cast<std::size_t>(prog[t.failed_step]))),
        t.reason, devices(t.states.back()));
  if (!t.reaches_goal) return "every step is valid but the final state is not the goal:" + devices(t.states.back());
  std::string s = "valid under the engine's rules; states after each step:";
  for (std::size_t i = 1; i < t.states.size(); ++i) {
    s += fmt::format("\n        after step {}:", i);
    for (int d = 0; d < k; ++d) s += fmt::format(" [{}] {}", d, t.states[i].describe_device(d));
  }
  return s;
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
  sub.add_flag("--minimal", a->minimal,
               "only the minimality query: per solver, bounds 1, 2, ... until one is sat; the shortest length "
               "must equal the enumerator's (unsat below it: no shorter program) and the program be one of its");
  sub.add_flag("--json", a->json, "machine-readable output");
  sub.add_option("--encoding", a->encoding,
                 "concrete (one state per device of a reduction group), shape (one per device class: the "
                 "shape's smallest instance, docs/shape.md; hierarchy (d) only) or auto (shape above 16 "
                 "devices per reduction group)")
      ->capture_default_str();
  add_solver_flags(sub, a->solver_flags);
  return [a] {
    Problem p = load_problem(a->problem);
    engine::SynthOptions opt = a->search.options();
    const auto kind = a->search.kind();
    const auto solvers = encodings::smt::parse_solver_list(a->solver);
    if (solvers.empty()) throw Error("--solver: give z3, cvc5 or both");
    if (a->proofs && a->certify.empty()) throw Error("--proofs needs --certify DIR");
    if (a->timeout_s < 0) throw Error("--timeout must be >= 0");
    if (a->jobs < 0) throw Error("--jobs must be >= 0");
    if (a->minimal && !a->certify.empty()) throw Error("--certify needs the whole sets: drop --minimal");
    encodings::SearchOptions so;
    so.choice = encodings::parse_choice_encoding(a->choice);
    so.incremental = !a->non_incremental;
    so.timeout_ms = static_cast<unsigned>(a->timeout_s * 1000);
    so.proofs = a->proofs;
    so.bury_solver = true;  // a command-line run: the process exits soon after
    apply_solver_flags(a->solver_flags, so);
    const std::vector<std::string> names = p.system.level_names();

    nlohmann::json out;
    out["system"] = p.system.name;
    out["axes"] = p.axes;
    out["reduce"] = p.reduce;
    out["hierarchy_kind"] = engine::to_string(kind);
    out["max_size"] = opt.max_size;
    out["mode"] = a->minimal ? "minimal" : "sets";
    out["results"] = nlohmann::json::array();
    bool all_same = true;
    std::size_t certs = 0;
    if (!a->json)
      fmt::print("{:<16} {:<18} {:>3} {:>4} | {:>14} | {}\n", "matrix", "hierarchy", "k", "ins", "enumerator",
                 "solvers (programs, seconds)");
    // The enumerator first (milliseconds), then every (matrix, solver) run in a pool of --jobs
    // workers, largest first (estimated by k^3 x instructions), so the two solvers' runs of
    // different matrices overlap; results are printed in matrix order as they complete.
    struct Case {
      engine::ParallelismMatrix x;
      std::optional<engine::Shape> shape;  // set when the case runs on the shape's smallest instance
      engine::Placement placement;
      engine::SynthesisHierarchy h;
      engine::Groups goal;
      engine::SynthResult r;
      double enum_ms = 0;
      encodings::SearchProblem sp;
    };
    if (a->encoding != "auto" && a->encoding != "shape" && a->encoding != "concrete")
      throw Error("--encoding: expected concrete, shape or auto, got '" + a->encoding + "'");
    std::vector<Case> cases;
    for (const auto& x : p.matrices) {
      std::optional<engine::Shape> shape;
      const bool d = engine::is_reduction_kind(kind);
      if (d) shape = engine::make_shape(p.system.cardinalities(), names, x, p.reduce, kind);
      const bool on_shape = d && (a->encoding == "shape" || (a->encoding == "auto" && shape->group_size() > 16));
      if (!d && a->encoding == "shape")
        throw Error(
            "--encoding shape works on hierarchy (d) only; (a)-(c) cover every device: use --encoding concrete");
      if (!on_shape) {
        shape.reset();
        engine::check_concrete_size(kind, x, p.reduce);
      }
      auto make_case = [&] {
        if (!on_shape) return Case{x, std::nullopt, p.placement(x), {}, {}, {}, 0, {}};
        const auto inst = engine::smallest_instance(*shape);
        return Case{x,  shape, engine::Placement(inst.system.cardinalities(), inst.axes, inst.x, inst.reduce),
                    {}, {},    {},
                    0,  {}};
      };
      Case c = make_case();
      c.h = on_shape ? engine::canonical_hierarchy(*shape) : engine::make_hierarchy(c.placement, names, kind);
      c.goal = engine::local_goal_groups(c.h, c.placement);
      const auto t0 = std::chrono::steady_clock::now();
      c.r = engine::synthesize(c.h, c.goal, opt);
      c.enum_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      c.sp = encodings::make_search_problem(c.h, c.r.instructions, c.goal);
      cases.push_back(std::move(c));
    }
    struct Job {
      std::size_t c = 0, s = 0;
      double cost = 0;
      std::promise<encodings::EnumerationResult> done;
    };
    std::vector<Job> jobs(cases.size() * solvers.size());
    std::vector<std::vector<std::future<encodings::EnumerationResult>>> results(cases.size());
    for (std::size_t ci = 0; ci < cases.size(); ++ci)
      for (std::size_t si = 0; si < solvers.size(); ++si) {
        Job& j = jobs[ci * solvers.size() + si];
        const double k = cases[ci].sp.k;
        j.c = ci;
        j.s = si;
        j.cost = k * k * k * static_cast<double>(cases[ci].sp.instructions.size()) *
                 (solvers[si] == encodings::smt::SolverKind::Cvc5 ? 3 : 1);
        results[ci].push_back(j.done.get_future());
      }
    std::vector<std::size_t> order(jobs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return jobs[x].cost > jobs[y].cost; });
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex error_mutex;
    std::string first_error;  // the first run that failed, named
    auto worker = [&] {
      for (std::size_t i; (i = next++) < order.size();) {
        Job& j = jobs[order[i]];
        if (stop) {  // after a failure: resolve the remaining runs without running them
          j.done.set_exception(std::make_exception_ptr(Error("not run: another solver run failed")));
          continue;
        }
        try {
          j.done.set_value(a->minimal ? encodings::find_shortest(solvers[j.s], cases[j.c].sp, opt.max_size, so)
                                      : encodings::enumerate_programs(solvers[j.s], cases[j.c].sp, opt.max_size, so));
        } catch (const std::exception& e) {
          stop = true;
          {
            std::lock_guard<std::mutex> lock(error_mutex);
            if (first_error.empty())
              first_error = fmt::format("matrix {}, {}: {}", engine::format_matrix(cases[j.c].x),
                                        encodings::smt::to_string(solvers[j.s]), e.what());
          }
          j.done.set_exception(std::current_exception());
        } catch (...) {
          stop = true;
          j.done.set_exception(std::current_exception());
        }
      }
    };
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t nworkers =
        std::min<std::size_t>(jobs.size(), a->jobs > 0 ? static_cast<std::size_t>(a->jobs) : hw);
    std::vector<std::thread> pool;
    for (std::size_t w = 0; w < nworkers; ++w) pool.emplace_back(worker);
    struct Join {  // joins the pool on every exit path (after an error: once the running jobs end)
      std::vector<std::thread>& t;
      std::atomic<bool>& stop;
      ~Join() {
        stop = true;
        for (auto& x : t) x.join();
      }
    } join{pool, stop};
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      const auto& [x, shape, placement, h, goal, r, enum_ms, sp] = cases[ci];
      std::vector<encodings::EnumerationResult> runs;
      std::string err;
      for (auto& f : results[ci]) {
        try {
          runs.push_back(f.get());
        } catch (const std::exception& e) {
          if (err.empty()) err = e.what();
        }
      }
      if (!err.empty()) {
        stop = true;
        for (auto& t : pool) t.join();  // every run has ended: first_error is final
        pool.clear();
        throw Error(first_error.empty() ? fmt::format("matrix {}: {}", engine::format_matrix(x), err) : first_error);
      }

      std::set<engine::LoweredProgram> want;
      for (const auto& prog : r.programs) want.insert(engine::lower(r, prog));
      nlohmann::json res;
      res["matrix"] = x;
      res["encoding"] = shape ? "shape" : "concrete";
      if (shape) res["shape"] = shape->signature();
      res["hierarchy"] = h.cards;
      res["k"] = h.num_local();
      res["instructions"] = r.instructions.size();
      res["enumerator"] = {{"programs", r.programs.size()}, {"ms", enum_ms}};
      res["solvers"] = nlohmann::json::array();
      std::string cells;
      std::vector<std::string> diffs;
      bool same = true;
      const int enum_shortest = r.programs.empty() ? 0 : static_cast<int>(r.programs.front().size());
      for (const auto& run : runs) {
        if (a->minimal) {
          const bool valid = run.programs.empty() || want.count(engine::lower(r, run.programs[0]));
          const bool eq = run.shortest == enum_shortest && valid;
          same = same && eq;
          nlohmann::json bj = nlohmann::json::array();
          for (const auto& b : run.bounds)
            bj.push_back(
                {{"bound", b.bound}, {"result", encodings::smt::to_string(b.final_result)}, {"seconds", b.seconds}});
          res["solvers"].push_back({{"solver", run.solver},
                                    {"version", run.version},
                                    {"seconds", run.seconds},
                                    {"shortest", run.shortest},
                                    {"agrees", eq},
                                    {"bounds", bj}});
          cells += fmt::format("  {} {}: shortest {} in {:.2f}s{}", run.solver, run.version, run.shortest, run.seconds,
                               eq ? "" : " DIFFERENT");
          if (run.shortest != enum_shortest)
            diffs.push_back(fmt::format("{}'s shortest program has {} steps, the enumerator's {} (0 = none up to {})",
                                        run.solver, run.shortest, enum_shortest, opt.max_size));
          if (!valid)
            diffs.push_back(fmt::format("only {} finds: {}\n      engine: {}", run.solver,
                                        engine::program_name(r, run.programs[0]), diagnose(r, run.programs[0], goal)));
          continue;
        }
        std::set<engine::LoweredProgram> got;
        for (const auto& prog : run.programs) got.insert(engine::lower(r, prog));
        const bool eq = got == want && run.programs.size() == r.programs.size();
        same = same && eq;
        nlohmann::json bj = nlohmann::json::array();
        for (const auto& b : run.bounds)
          bj.push_back({{"bound", b.bound},
                        {"programs", b.programs},
                        {"result_after_blocking", encodings::smt::to_string(b.final_result)},
                        {"seconds", b.seconds},
                        {"final_check_seconds", b.final_seconds}});
        res["solvers"].push_back({{"solver", run.solver},
                                  {"version", run.version},
                                  {"programs", run.programs.size()},
                                  {"seconds", run.seconds},
                                  {"shortest", run.shortest},
                                  {"identical", eq},
                                  {"bounds", bj}});
        cells += fmt::format("  {} {}: {} in {:.2f}s{}", run.solver, run.version, run.programs.size(), run.seconds,
                             eq ? "" : " DIFFERENT");
        if (eq) continue;
        for (const auto& prog : run.programs)
          if (!want.count(engine::lower(r, prog)))
            diffs.push_back(fmt::format("only {} finds: {}\n      engine: {}", run.solver,
                                        engine::program_name(r, prog), diagnose(r, prog, goal)));
        std::set<engine::LoweredProgram> gotset = got;
        for (const auto& prog : r.programs)
          if (!gotset.count(engine::lower(r, prog))) {
            bool acc = false;
            try {
              acc = encodings::encoding_accepts(
                  run.solver == "z3" ? encodings::smt::SolverKind::Z3 : encodings::smt::SolverKind::Cvc5, sp, prog, so);
            } catch (const std::exception&) {
            }
            diffs.push_back(fmt::format("only the enumerator finds: {}\n      {} {} this program; engine: {}",
                                        engine::program_name(r, prog), run.solver,
                                        acc ? "accepts (enumeration missed it)" : "rejects", diagnose(r, prog, goal)));
          }
      }
      res["identical"] = same;
      res["differences"] = diffs;
      all_same = all_same && same;
      if (!a->json) {
        fmt::print("{:<16} ({}) [{:<14} {:>3} {:>4} | {:>5} {:>7.2f}ms |{}  => {}\n", engine::format_matrix(x),
                   engine::to_string(kind), fmt::format("{}]{}", fmt::join(h.cards, " "), shape ? "*" : ""),
                   h.num_local(), r.instructions.size(),
                   a->minimal ? fmt::format("len {}", enum_shortest) : std::to_string(r.programs.size()), enum_ms,
                   cells, same ? (a->minimal ? "agree" : "identical") : "DIFFERENT");
        for (const auto& d : diffs) fmt::print("    {}\n", d);
      }
      if (!a->certify.empty() && same) {
        encodings::CertifyOptions co;
        co.dir = a->certify;
        co.solvers = solvers;
        co.search = so;
        auto cr = shape ? encodings::certify_shape_programs(p.system, *shape, r, opt, co, &runs)
                        : encodings::certify_programs(p.system, placement, r, opt, co, &runs);
        certs += cr.files.size();
        res["certificates"] = cr.files;
      }
      out["results"].push_back(std::move(res));
    }
    out["identical"] = all_same;
    const bool any_shape = std::any_of(cases.begin(), cases.end(), [](const Case& c) { return c.shape.has_value(); });
    if (any_shape && !a->json)
      fmt::print(
          "* encoded on the shape's smallest instance (one state per device class, docs/shape.md section 5); "
          "k is its device count\n");
    if (a->json) {
      fmt::print("{}\n", out.dump(2));
    } else {
      fmt::print("{}: {} matrices, enumerator and {} {}\n", all_same ? "verified" : "MISMATCH", p.matrices.size(),
                 a->solver == "both" ? "z3 and cvc5" : a->solver,
                 !all_same    ? "disagree (see above)"
                 : a->minimal ? "agree on the shortest program's length (every smaller bound unsat)"
                              : "find identical sets of programs");
      if (!a->certify.empty())
        fmt::print("{} certificates written to {}{}\n", certs, a->certify,
                   all_same ? "" : " (none for the matrices that differ)");
    }
    return all_same ? 0 : 1;
  };
});

}  // namespace
}  // namespace p2v::tools
#endif  // P2V_HAVE_ENCODINGS
