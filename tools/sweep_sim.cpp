// Size sweeps of p2v simulate and p2v explore (docs/sweeps.md).
#include "sweep_sim.hpp"

#include "common.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "p2v/engine/progress.hpp"
#include "p2v/sim/rank.hpp"
#include "p2v/sim/report.hpp"

namespace p2v::tools {

namespace {

std::string sizes_text(const std::vector<double>& sizes) {
  return sizes.size() == 1 ? engine::format_size(sizes.front())
                           : fmt::format("{} sizes from {} to {}", sizes.size(), engine::format_size(sizes.front()),
                                         engine::format_size(sizes.back()));
}

std::int64_t group_size(const std::vector<int>& axes, const std::vector<int>& reduce) {
  std::int64_t n = 1;
  for (int r : reduce) n *= axes[static_cast<std::size_t>(r)];
  return n;
}

}  // namespace

int simulate_sweep(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                   const std::vector<engine::ParallelismMatrix>& matrices, sim::SimulateOptions opt,
                   const std::vector<double>& sizes, const SweepOutput& out) {
  opt.list = 1;  // the best program of each matrix is all a sweep row needs
  opt.program_steps = opt.best_steps = false;
  const std::int64_t n = group_size(axes, reduce);
  const double bus = allreduce_bus_factor(n);
  const bool several = matrices.size() > 1;
  engine::Progress progress("simulate: sizes", sizes.size(), out.progress.wanted());
  std::vector<SweepPoint> points;
  nlohmann::json rows = nlohmann::json::array();
  struct Line {
    double bytes, allreduce_s, best_s;
    std::string matrix, program;
  };
  std::vector<Line> lines;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    progress.note(engine::format_size(sizes[i]));
    opt.cost.bytes = sizes[i];
    const sim::SimulateReport r = sim::simulate(system, axes, reduce, matrices, opt).report;
    progress.add();
    if (r.results.empty()) continue;
    const std::size_t bi = r.best_matrix();
    const auto& b = r.results[bi];
    const double S = sizes[i];
    const std::string program = b.best ? b.best->program : std::string("-");
    const std::string matrix = engine::format_matrix_brackets(b.matrix);
    points.push_back({S, several ? matrix + " " + program : program, b.allreduce_s / b.best_s()});
    lines.push_back({S, b.allreduce_s, b.best_s(), matrix, program});
    nlohmann::json per = nlohmann::json::array();
    for (const auto& m : r.results) {
      nlohmann::json o{{"matrix", m.matrix},
                       {"num_programs", m.num_programs},
                       {"allreduce_s", m.allreduce_s},
                       {"allreduce_algbw_GBps", algbw_GBps(S, m.allreduce_s)},
                       {"allreduce_busbw_GBps", algbw_GBps(S, m.allreduce_s) * bus},
                       {"speedup", m.allreduce_s / m.best_s()}};
      if (m.best)
        o["best"] = {{"program", m.best->program},
                     {"time_s", m.best->time_s},
                     {"algbw_GBps", algbw_GBps(S, m.best->time_s)},
                     {"busbw_GBps", algbw_GBps(S, m.best->time_s) * bus}};
      else
        o["best"] = nullptr;
      per.push_back(std::move(o));
    }
    rows.push_back({{"bytes", S}, {"best_matrix", b.matrix}, {"results", std::move(per)}});
  }
  progress.finish();
  if (out.json) {
    nlohmann::json j{{"format", "p2v-simulate-sweep"},
                     {"version", 1},
                     {"system", engine::system_json(system)},
                     {"axes", axes},
                     {"reduce", reduce},
                     {"algo", opt.algo},
                     {"model", opt.model == sim::SimModel::Levels ? "levels" : "graph"},
                     {"group_size", n},
                     {"busbw_factor", bus},
                     {"sizes", std::move(rows)},
                     {"crossover", crossover_json(points)}};
    add_accuracy(j, out.accuracy);
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("system {}: {} devices; {} model; algo {}; reduce axes [{}]; {} per device\n", system.name,
             system.num_devices(), opt.model == sim::SimModel::Levels ? "level" : "graph", opt.algo,
             fmt::join(reduce, " "), sizes_text(sizes));
  fmt::print(
      "algbw = bytes per device / time, busbw = algbw x 2(n-1)/n = algbw x {:.4g} (nccl-tests' AllReduce, reduction "
      "groups of n = {}), GB/s{}\n\n",
      bus, n, several ? "; per size the best placement and its single AllReduce" : "");
  std::size_t mw = 6;
  for (const auto& l : lines) mw = std::max(mw, l.matrix.size());
  const auto matrix_col = [&](const std::string& m) { return several ? fmt::format("{:<{}}  ", m, mw) : ""; };
  fmt::print("  {:>8}  {:>11} {:>8} {:>8}  {:>11} {:>8} {:>8} {:>8}  {}program\n", "size", "AllReduce", "algbw",
             "busbw", "best", "algbw", "busbw", "speedup", matrix_col("matrix"));
  for (const auto& l : lines)
    fmt::print("  {:>8}  {:>11} {:>8.2f} {:>8.2f}  {:>11} {:>8.2f} {:>8.2f} {:>7.2f}x  {}{}\n",
               engine::format_size(l.bytes), sim::format_seconds(l.allreduce_s), algbw_GBps(l.bytes, l.allreduce_s),
               algbw_GBps(l.bytes, l.allreduce_s) * bus, sim::format_seconds(l.best_s), algbw_GBps(l.bytes, l.best_s),
               algbw_GBps(l.bytes, l.best_s) * bus, l.allreduce_s / l.best_s, matrix_col(l.matrix), l.program);
  fmt::print("\n");
  if (!points.empty())
    fmt::print("{}", crossover_table(points, several ? "placement and program" : "program", "AllReduce"));
  return 0;
}

int explore_sweep(const engine::System& system, const std::vector<int>& axes,
                  const std::vector<std::pair<std::vector<int>, double>>& reductions,
                  const std::vector<engine::ParallelismMatrix>& matrices, engine::ProgramSource& programs,
                  sim::CostOptions cost, const std::string& algo, const std::vector<double>& sizes,
                  const SweepOutput& out) {
  sim::Simulator simulator(system);
  engine::Progress progress("explore: placements", sizes.size() * matrices.size(), out.progress.wanted());
  std::vector<SweepPoint> points;
  nlohmann::json rows = nlohmann::json::array();
  std::string table;
  std::size_t mw = 11;
  for (const auto& x : matrices) mw = std::max(mw, engine::format_matrix_brackets(x).size());
  for (const double S : sizes) {
    cost.bytes = S;
    progress.note(engine::format_size(S));
    struct Row {
      const engine::ParallelismMatrix* x;
      double total = 0, total_ar = 0;
      std::vector<std::string> best;
    };
    std::vector<Row> per;
    for (const auto& x : matrices) {
      Row r{&x, 0, 0, {}};
      for (const auto& [red, w] : reductions) {
        const engine::Placement pl(system.cardinalities(), axes, x, red);
        const auto mr = sim::rank_placement(simulator, programs, pl, cost);
        r.total += w * mr.best_s();
        r.total_ar += w * mr.allreduce_s;
        r.best.push_back(mr.programs.empty() ? std::string("-") : mr.programs.front().name);
      }
      per.push_back(std::move(r));
      progress.add();
    }
    if (per.empty()) continue;
    const auto best = std::min_element(per.begin(), per.end(), [](const Row& a, const Row& b) {
      return a.total < b.total;
    });  // the first on ties, as explore's table
    const std::string matrix = engine::format_matrix_brackets(*best->x);
    const double speedup = best->total > 0 ? best->total_ar / best->total : 1.0;
    points.push_back({S, matrix, speedup});
    table += fmt::format("  {:>8}  {:<{}} {:>11} {:>13} {:>7.2f}x  {}\n", engine::format_size(S), matrix, mw,
                         sim::format_seconds(best->total), sim::format_seconds(best->total_ar), speedup,
                         fmt::join(best->best, "  |  "));
    nlohmann::json res = nlohmann::json::array();
    for (const auto& r : per)
      res.push_back({{"matrix", *r.x},
                     {"total_s", r.total},
                     {"total_allreduce_s", r.total_ar},
                     {"speedup", r.total > 0 ? r.total_ar / r.total : 1.0},
                     {"best_programs", r.best}});
    rows.push_back({{"bytes", S}, {"best_matrix", *best->x}, {"results", std::move(res)}});
  }
  progress.finish();
  if (out.json) {
    nlohmann::json reds = nlohmann::json::array();
    for (const auto& [red, w] : reductions) reds.push_back({{"reduce", red}, {"weight", w}});
    nlohmann::json j{{"format", "p2v-explore-sweep"},
                     {"version", 1},
                     {"system", engine::system_json(system)},
                     {"axes", axes},
                     {"algo", algo},
                     {"reductions", std::move(reds)},
                     {"sizes", std::move(rows)},
                     {"crossover", crossover_json(points)}};
    add_accuracy(j, out.accuracy);
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("system {}: {} devices; axes [{}]; algo {}; {} per device\nreductions:", system.name, system.num_devices(),
             fmt::join(axes, " "), algo, sizes_text(sizes));
  for (const auto& [red, w] : reductions) fmt::print("  [{}] x {}", fmt::join(red, ","), w);
  fmt::print("\n\n  {:>8}  {:<{}} {:>11} {:>13} {:>8}  {}\n", "size", "best matrix", mw, "total", "all-AllReduce",
             "speedup", "best program per reduction");
  fmt::print("{}\n", table);
  if (!points.empty()) fmt::print("{}", crossover_table(points, "placement", "all-AllReduce"));
  return 0;
}

}  // namespace p2v::tools

namespace p2v::tools {

int step_sweep(const std::vector<double>& caps, const std::function<StepSweepRow(double)>& one, StepSweepInfo& info,
               const SweepOutput& out) {
  engine::Progress progress("step: bucket caps", caps.size(), out.progress.wanted());
  std::vector<StepSweepRow> rows;
  std::vector<SweepPoint> points;
  for (const double cap : caps) {
    progress.note(engine::format_size(cap));
    rows.push_back(one(cap));
    const auto& r = rows.back();
    points.push_back({cap, info.several ? r.matrix + " " + r.programs : r.programs, r.fixed_s / r.chosen_s});
    progress.add();
  }
  progress.finish();
  std::size_t fastest = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i].fixed_s < rows[fastest].fixed_s) fastest = i;
  if (out.json) {
    nlohmann::json sizes = nlohmann::json::array();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      nlohmann::json j = rows[i].json;
      j["bucket_bytes"] = caps[i];
      sizes.push_back(std::move(j));
    }
    nlohmann::json j{{"format", "p2v-step-sweep"}, {"version", 1}};
    j.update(info.head);
    j["sizes"] = std::move(sizes);
    j["fastest_fixed_bucket_bytes"] = caps.empty() ? 0.0 : caps[fastest];
    j["crossover"] = crossover_json(points);
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{}", info.header);
  std::size_t mw = 6;
  for (const auto& r : rows) mw = std::max(mw, r.matrix.size());
  fmt::print("  {:>8}  {:>11} {:>8}  {:>11} {:>11} {:>7}  {:<{}}  {}\n", "bucket", "fixed", "buckets", "chosen",
             "exposed", "gain", "matrix", mw, "chosen programs");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    fmt::print("  {:>8}  {:>11} {:>8}  {:>11} {:>11} {:>6.3f}x  {:<{}}  {}{}\n", engine::format_size(caps[i]),
               sim::format_seconds(r.fixed_s), r.buckets, sim::format_seconds(r.chosen_s),
               sim::format_seconds(r.exposed_s), r.fixed_s / r.chosen_s, r.matrix, mw, r.programs,
               i == fastest && rows.size() > 1 ? "   <- fastest fixed schedule" : "");
  }
  fmt::print("\n");
  if (!points.empty())
    fmt::print("{}", crossover_table(points, info.several ? "placement and programs" : "programs", "fixed"));
  return 0;
}

}  // namespace p2v::tools
