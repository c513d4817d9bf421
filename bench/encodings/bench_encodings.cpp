// Per-config solver times vs. the enumerator (medians of --reps runs), and design alternatives.
//   bench_encodings [--reps N] [--max-size L] [--solver z3|cvc5|both] [--choice binary|onehot|both]
//                   [--incremental assume|push|off|all] [--states factored|perins|fun|all] [--lemma on|off|both]
//                   [--vectors row|device|both] [--plain 1,2,4] [--reduce 0|1|both] [--verbose]
// Default: 4xA100 [4 16], every matrix, reduce 0 and reduce 1, hierarchy (d), L = 5, per-device vectors.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "p2v/encodings/search.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

using namespace p2v;
using namespace p2v::encodings;
using Clock = std::chrono::steady_clock;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
struct Config {
  std::string name;
  engine::SynthesisHierarchy h;
  engine::Groups goal;
};
}  // namespace

int main(int argc, char** argv) {
  int reps = 1, L = 5;
  std::string solver = "both", choice = "binary", incr = "assume", plain, reduce = "both", states = "var",
              lemma = "off";
  std::string vectors = "device";
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--reps")
      reps = std::stoi(next());
    else if (a == "--max-size")
      L = std::stoi(next());
    else if (a == "--solver")
      solver = next();
    else if (a == "--choice")
      choice = next();
    else if (a == "--incremental")
      incr = next();
    else if (a == "--plain")
      plain = next();
    else if (a == "--states")
      states = next();
    else if (a == "--lemma")
      lemma = next();
    else if (a == "--vectors")
      vectors = next();
    else if (a == "--reduce")
      reduce = next();
    else if (a == "--verbose")
      verbose = true;
    else {
      fmt::print(stderr, "unknown option {}\n", a);
      return 1;
    }
  }
  try {
    std::vector<Config> configs;
    if (!plain.empty()) {
      auto cards = engine::parse_int_list(plain, "--plain");
      auto h = engine::make_plain_hierarchy(cards);
      std::vector<int> all(h.num_local());
      for (int i = 0; i < h.num_local(); ++i) all[i] = i;
      configs.push_back({"plain [" + plain + "]", h, {all}});
    } else {
      const auto sys = engine::load_system_file(std::string(P2V_SOURCE_DIR) + "/examples/systems/a100-4node.json");
      const std::vector<std::string> names = sys.level_names();
      std::vector<int> reds;
      if (reduce == "both" || reduce == "0") reds.push_back(0);
      if (reduce == "both" || reduce == "1") reds.push_back(1);
      for (int red : reds)
        for (const auto& x : engine::enumerate_matrices(sys.cardinalities(), {4, 16})) {
          engine::Placement p(sys.cardinalities(), {4, 16}, x, {red});
          auto h = engine::make_hierarchy(p, names, engine::HierarchyKind::ReductionAxes);
          configs.push_back({fmt::format("4xA100 reduce {} [{}]", red, engine::format_matrix(x)), h,
                             engine::local_goal_groups(h, p)});
        }
    }
    std::vector<smt::SolverKind> solvers = smt::parse_solver_list(solver);
    std::vector<ChoiceEncoding> choices;
    if (choice == "both" || choice == "binary") choices.push_back(ChoiceEncoding::Binary);
    if (choice == "both" || choice == "onehot") choices.push_back(ChoiceEncoding::OneHot);
    std::vector<bool> funs;
    if (states != "fun") funs.push_back(false);
    if (states == "all" || states == "both" || states == "fun") funs.push_back(true);
    std::vector<bool> facts;
    if (states == "all" || states == "factored" || states == "both" || states == "var") facts.push_back(true);
    if (states == "all" || states == "perins") facts.push_back(false);
    std::vector<bool> lemmas;
    if (lemma == "both" || lemma == "on") lemmas.push_back(true);
    if (lemma == "both" || lemma == "off") lemmas.push_back(false);
    // Incremental modes: one solver with each bound under an activation literal (assume, the
    // default) or in a push/pop scope (push), or a fresh solver per bound (off).
    std::vector<bool> packs;
    if (vectors == "both" || vectors == "row") packs.push_back(false);
    if (vectors == "both" || vectors == "device") packs.push_back(true);
    if (packs.empty()) throw Error("--vectors: row, device or both");
    std::vector<std::string> incs;
    for (const char* m : {"assume", "push", "off"})
      if (incr == "all" || incr == m) incs.push_back(m);
    if (incs.empty()) throw Error("--incremental: assume, push, off or all");
    fmt::print("{:<34} {:>3} {:>5} {:>9} | {:<5} {:<6} {:<8} {:>9} {:>6}  per-bound seconds\n", "config", "k", "ins",
               "enum ms", "solver", "choice", "inc", "median s", "progs");
    fmt::print(
        "(inc = asm: one solver, bounds under assumptions (default); push: push/pop scopes; no: a fresh solver per "
        "bound; states: fac = state variables, one constraint per grouping (default); ins = one per instruction; fun = "
        "functional; +lemma = with the last-step lemma)\n");
    for (const auto& c : configs) {
      engine::SynthOptions so;
      so.max_size = L;
      std::vector<double> te;
      engine::SynthResult r;
      for (int i = 0; i < reps; ++i) {
        auto t0 = Clock::now();
        r = engine::synthesize(c.h, c.goal, so);
        te.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
      const auto sp = make_search_problem(c.h, r.instructions, c.goal);
      for (auto kind : solvers)
        for (auto ch : choices)
          for (const auto& inc : incs)
            for (bool fun : funs)
              for (bool fac : facts)
                for (bool lem : lemmas)
                  for (bool pack : packs) {
                    if (fun && !fac) continue;
                    if (pack && (fun || !fac)) continue;
                    SearchOptions o;
                    o.last_step_lemma = lem;
                    o.per_device = pack;
                    o.functional = fun;
                    o.factored = fac;
                    o.choice = ch;
                    o.incremental = inc != "off";
                    o.push_pop = inc == "push";
                    std::vector<double> ts;
                    EnumerationResult e;
                    for (int i = 0; i < reps; ++i) {
                      e = enumerate_programs(kind, sp, L, o);
                      ts.push_back(e.seconds);
                    }
                    std::string per;
                    for (const auto& b : e.bounds)
                      per += verbose ? fmt::format(" {:.2f}({}p: enc {:.2f} sat {:.2f} model {:.2f} unsat {:.2f})",
                                                   b.seconds, b.programs, b.encode_seconds, b.sat_seconds,
                                                   b.model_seconds, b.final_seconds)
                                     : fmt::format(" {:.2f}", b.seconds);
                    const bool same = e.programs == r.programs;
                    fmt::print("{:<34} {:>3} {:>5} {:>9.2f} | {:<5} {:<6} {:<8} {:>9.2f} {:>6}{} {}\n", c.name,
                               c.h.num_local(), r.instructions.size(), median(te), smt::to_string(kind), to_string(ch),
                               std::string(inc == "assume" ? "asm"
                                           : inc == "push" ? "push"
                                                           : "no") +
                                   (fun   ? "/fun"
                                    : fac ? "/fac"
                                          : "/ins") +
                                   (pack ? "/dev" : "") + (lem ? "+lemma" : ""),
                               median(ts), e.programs.size(), same ? "" : " MISMATCH", per);
                    std::fflush(stdout);
                  }
    }
  } catch (const Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  return 0;
}
