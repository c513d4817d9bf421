// The solver side of `synth --certify` on a shape (its smallest instance), per bound: how the
// solvers confirm the enumerator's program set (validity per program, completeness per bound) or
// re-enumerate it with blocking clauses, or (minimal, symbolic-minimal: `verify --minimal`) find
// the shortest program, bounds 1, 2, ... until sat. Medians of --reps runs.
//   bench_certify [--system pod=16,rack=32,node=32,gpu=8]
//                 [--method confirm|closure|enumerate|symbolic-closure|symbolic-enumerate|
//                           minimal|symbolic-minimal]
//                 [--timeout S]  (per solver check; a run that hits it prints "timeout", no median)
//                 [--solver z3|cvc5|both] [--choice binary|onehot] [--max-size L] [--reps N]
//                 [--jobs N]   (closure: workers per solver, each with its own solver)
//                 [--assume]   (closure: the start state as assumptions, no push/pop)
//                 [--column-sets] (symbolic-closure: every device's columns as k bits, not its summed levels)
//   --method state-texts: no solver; the certificates' state texts of every program, a replay per
//   program (as before) against program_state_texts (common prefixes replayed once), same texts.
// Default: the two-, three- and four-level systems of docs/shape.md, --axes = all devices, reduce 0.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <ctime>

#include "p2v/encodings/certificate.hpp"
#include "p2v/encodings/search.hpp"
#include "p2v/encodings/symbolic.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

using namespace p2v;
using namespace p2v::encodings;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> systems;
  std::string method = "confirm", solver = "both", choice = "binary";
  int L = 5, reps = 1, jobs = 1;
  std::string z3_logic;
  int batch = 0;  // 0: the default per solver
  double timeout_s = 0;
  bool assume = false;       // closure: the start state as assumptions instead of a push scope
  bool column_sets = false;  // symbolic-closure: columns as k-bit sets instead of summed levels
  std::vector<std::pair<std::string, std::string>> cvc5_options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--system")
      systems.push_back(next());
    else if (a == "--method")
      method = next();
    else if (a == "--solver")
      solver = next();
    else if (a == "--choice")
      choice = next();
    else if (a == "--max-size")
      L = std::stoi(next());
    else if (a == "--reps")
      reps = std::stoi(next());
    else if (a == "--jobs")
      jobs = std::stoi(next());
    else if (a == "--batch")
      batch = std::stoi(next());
    else if (a == "--timeout")
      timeout_s = std::stod(next());
    else if (a == "--assume")
      assume = true;
    else if (a == "--column-sets")
      column_sets = true;
    else if (a == "--z3-logic")
      z3_logic = next();
    else if (a == "--cvc5-option")
      cvc5_options.push_back(smt::parse_option_assignment(next(), "--cvc5-option"));
    else {
      fmt::print(stderr, "unknown option {}\n", a);
      return 1;
    }
  }
  if (systems.empty()) systems = {"node=16384,gpu=8", "rack=32,node=32,gpu=8", "pod=16,rack=32,node=32,gpu=8"};
  try {
    if (method != "confirm" && method != "enumerate" && method != "closure" && method != "symbolic-closure" &&
        method != "symbolic-enumerate" && method != "minimal" && method != "symbolic-minimal" &&
        method != "state-texts")
      throw Error(
          "--method: confirm, closure, enumerate, symbolic-closure, symbolic-enumerate, minimal, symbolic-minimal or "
          "state-texts");
    for (const auto& spec : systems) {
      const engine::System sys = engine::parse_system_inline(spec);
      const std::vector<int> cards = sys.cardinalities();
      const engine::ParallelismMatrix x{cards};
      const auto shape = engine::make_shape(cards, sys.level_names(), x, {0}, engine::HierarchyKind::ReductionAxes);
      engine::SynthOptions so;
      so.max_size = L;
      const auto r = engine::synthesize_shape(shape, so);
      std::vector<int> all(static_cast<std::size_t>(r.hierarchy.num_local()));
      for (std::size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int>(d);
      if (method == "state-texts") {
        std::vector<double> per_program, shared;
        bool same = true;
        for (int i = 0; i < reps; ++i) {
          auto t0 = std::chrono::steady_clock::now();
          std::vector<StateTexts> a;
          for (const auto& prog : r.programs) {
            StateTexts t;
            for (const auto& st : replay_states(r, prog)) {
              t.emplace_back();
              for (int d = 0; d < r.hierarchy.num_local(); ++d) t.back().push_back(state_text(st, d));
            }
            a.push_back(std::move(t));
          }
          auto t1 = std::chrono::steady_clock::now();
          const auto b = program_state_texts(r, r.programs);
          auto t2 = std::chrono::steady_clock::now();
          per_program.push_back(std::chrono::duration<double>(t1 - t0).count());
          shared.push_back(std::chrono::duration<double>(t2 - t1).count());
          same = same && a == b;
        }
        fmt::print(
            "{:<30} programs={:<5} state texts: a replay per program median {:.3f} s, shared prefixes {:.3f} s{}\n",
            spec, r.programs.size(), median(per_program), median(shared), same ? "" : " MISMATCH");
        continue;
      }
      const auto sp = make_search_problem(r.hierarchy, r.instructions, {all});
      SearchOptions o;
      o.choice = parse_choice_encoding(choice);
      o.jobs = jobs;
      o.z3_logic = z3_logic;
      o.closure_batch = batch;
      o.closure_assume = assume;
      o.closure_column_sets = column_sets;
      o.cvc5_options = cvc5_options;
      o.timeout_ms = static_cast<unsigned>(timeout_s * 1000);
      o.progress = [](const std::string& line) { fmt::print(stderr, "  {}\n", line); };
      for (auto kind : smt::parse_solver_list(solver)) {
        std::vector<double> ts, cpu;
        EnumerationResult e;
        const bool minimal = method == "minimal" || method == "symbolic-minimal";
        try {
          for (int i = 0; i < reps; ++i) {
            const std::clock_t c0 = std::clock();
            e = method == "confirm"              ? confirm_programs(kind, sp, r.programs, L, o)
                : method == "closure"            ? confirm_by_closure(kind, sp, r.programs, L, o)
                : method == "symbolic-closure"   ? confirm_by_symbolic_closure({kind}, sp, r.programs, L, o).front()
                : method == "symbolic-enumerate" ? enumerate_programs_per_level(kind, sp, L, o)
                : method == "minimal"            ? find_shortest(kind, sp, L, o)
                : method == "symbolic-minimal"   ? find_shortest_per_level(kind, sp, L, o)
                                                 : enumerate_programs(kind, sp, L, o);
            ts.push_back(e.seconds);
            cpu.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
          }
        } catch (const Error& err) {  // a time limit (unknown): no median
          fmt::print("{:<30} k={:<3} instructions={:<4} programs={:<5} {:<9} {:<5} timeout after {} s per check ({})\n",
                     spec, sp.k, sp.instructions.size(), r.programs.size(), method, smt::to_string(kind), timeout_s,
                     err.what());
          std::fflush(stdout);
          continue;
        }
        const bool agrees = minimal ? e.shortest == (r.programs.empty() ? 0 : static_cast<int>(r.programs[0].size()))
                                    : e.programs == r.programs;
        fmt::print("{:<30} k={:<3} instructions={:<4} programs={:<5} {:<9} {:<5} median {:8.2f} s (cpu {:.2f} s){}\n",
                   spec, sp.k, sp.instructions.size(), r.programs.size(), method, smt::to_string(kind), median(ts),
                   median(cpu), agrees ? "" : " MISMATCH");
        if (method == "closure" || method == "symbolic-closure")
          fmt::print("    {} states closed ({} steps listed): {:.2f} s; {} validity checks: {:.2f} s\n",
                     e.closure_states, e.closure_edges, e.closure_seconds, e.validity_checks, e.validity_seconds);
        for (const auto& b : e.bounds)
          fmt::print("    bound {}: {:5} programs  {:8.2f} s (encode {:.2f}, {} {:.2f}, final unsat {:.2f})\n", b.bound,
                     b.programs, b.seconds, b.encode_seconds, method == "confirm" ? "accept" : "sat",
                     method == "confirm" ? b.accept_seconds : b.sat_seconds + b.model_seconds, b.final_seconds);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  return 0;
}
