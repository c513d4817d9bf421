// p2v explore: rank every placement by the weighted total predicted time of several reductions
// (a model with several parallelism axes reduces along more than one of them), each reduction
// with its best synthesized program (docs/simulator.md).
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/progress.hpp"
#include "p2v/sim/rank.hpp"
#include "p2v/sim/report.hpp"
#include "sweep_sim.hpp"

namespace p2v::tools {
namespace {

struct ExploreArgs {
  ProblemArgs problem;
  std::vector<std::string> reductions;
  CostArgs cost;
  int top = -1;
  SearchArgs search;
  bool json = false;
  SweepArgs sweep;  // --bytes LIST|RANGE, -b/-e/-f/-i (sweep_sim.cpp)
  ProgressArgs progress;
};

struct Reduction {
  std::vector<int> axes;
  double weight = 1.0;
  std::string text;
};

// "0", "0,2@0.5", "1@3"
Reduction parse_reduction(const std::string& s, std::size_t num_axes) {
  Reduction r;
  r.text = s;
  std::string axes = s;
  auto at = s.find('@');
  if (at != std::string::npos) {
    axes = s.substr(0, at);
    const std::string w = s.substr(at + 1);
    std::size_t pos = 0;
    try {
      r.weight = std::stod(w, &pos);
    } catch (...) {
      pos = 0;
    }
    if (w.empty() || pos != w.size() || !(r.weight >= 0) || r.weight > 1e12)
      throw Error("--reduction '" + s + "': weight '" + w + "' is not a non-negative number");
  }
  const std::vector<int> ax = engine::parse_axis_indices(axes, "--reduction '" + s + "'");
  r.axes = engine::check_reduce(ax, num_axes);
  return r;
}

// One placement's cost: per reduction its ranking (best program only), weighted totals.
struct Row {
  engine::ParallelismMatrix x;
  std::vector<sim::MatrixRanking> per;
  double total = 0, total_ar = 0;
};

// Every placement priced under every reduction; `order` lists them cheapest first.
struct Explored {
  std::vector<Row> rows;
  std::vector<std::size_t> order;
};

Explored explore_placements(const Problem& p, const std::vector<Reduction>& reds, engine::ProgramSource& programs,
                            const sim::CostOptions& copt, const sim::Simulator& simulator, bool progress_wanted) {
  Explored e;
  engine::Progress progress("explore: placements", p.matrices.size(), progress_wanted);
  for (const auto& x : p.matrices) {
    Row r;
    r.x = x;
    for (const auto& red : reds) {
      engine::Placement pl(p.system.cardinalities(), p.axes, x, red.axes);
      auto mr = sim::rank_placement(simulator, programs, pl, copt);
      r.total += red.weight * mr.best_s();
      r.total_ar += red.weight * mr.allreduce_s;
      mr.programs.resize(std::min<std::size_t>(mr.programs.size(), 1));
      r.per.push_back(std::move(mr));
    }
    e.rows.push_back(std::move(r));
    progress.add();
  }
  progress.finish();
  e.order.resize(e.rows.size());
  std::iota(e.order.begin(), e.order.end(), 0);
  std::stable_sort(e.order.begin(), e.order.end(),
                   [&](std::size_t i, std::size_t j) { return e.rows[i].total < e.rows[j].total; });
  return e;
}

nlohmann::json explore_json(const Problem& p, const ExploreArgs& a, const sim::CostOptions& copt,
                            const std::vector<Reduction>& reds, const Explored& e, std::size_t shown) {
  nlohmann::json out;
  out["system"] = engine::system_json(p.system);
  out["axes"] = p.axes;
  out["algo"] = a.cost.algo;
  out["bytes"] = copt.bytes;
  out["reductions"] = nlohmann::json::array();
  for (const auto& r : reds) out["reductions"].push_back({{"reduce", r.axes}, {"weight", r.weight}});
  out["results"] = nlohmann::json::array();
  for (std::size_t k = 0; k < shown; ++k) {
    const auto& r = e.rows[e.order[k]];
    nlohmann::json o;
    o["rank"] = k + 1;
    o["matrix"] = r.x;
    o["total_s"] = r.total;
    o["total_allreduce_s"] = r.total_ar;
    o["speedup"] = r.total > 0 ? r.total_ar / r.total : 1.0;
    o["reductions"] = nlohmann::json::array();
    for (std::size_t i = 0; i < reds.size(); ++i) {
      const auto& mr = r.per[i];
      nlohmann::json ro{{"reduce", reds[i].axes}, {"weight", reds[i].weight}, {"allreduce_s", mr.allreduce_s}};
      if (!mr.programs.empty())
        ro["best"] = {{"program", mr.programs.front().name}, {"time_s", mr.programs.front().time_s}};
      else
        ro["best"] = nullptr;
      o["reductions"].push_back(std::move(ro));
    }
    out["results"].push_back(std::move(o));
  }
  return out;
}

void print_explored(const Problem& p, const ExploreArgs& a, const sim::CostOptions& copt,
                    const std::vector<Reduction>& reds, const Explored& e, std::size_t shown, std::int64_t devices) {
  fmt::print("system {}: {} devices; axes [{}]; algo {}; {} per device\n", p.system.name, devices,
             fmt::join(p.axes, " "), a.cost.algo, sim::format_bytes(copt.bytes));
  fmt::print("reductions:");
  for (const auto& r : reds) fmt::print("  [{}] x {}", fmt::join(r.axes, ","), r.weight);
  std::size_t mw = 6;
  for (const auto& r : e.rows) mw = std::max(mw, engine::format_matrix_brackets(r.x).size());
  fmt::print("\n\n{:>4}  {:<{}} {:>11} {:>13} {:>8}", "rank", "matrix", mw, "total", "all-AllReduce", "speedup");
  for (const auto& r : reds) fmt::print("  {:>14}", fmt::format("reduce [{}]", fmt::join(r.axes, ",")));
  fmt::print("\n");
  for (std::size_t k = 0; k < shown; ++k) {
    const auto& r = e.rows[e.order[k]];
    fmt::print("{:>4}  {:<{}} {:>11} {:>13} {:>7.2f}x", k + 1, engine::format_matrix_brackets(r.x), mw,
               sim::format_seconds(r.total), sim::format_seconds(r.total_ar), r.total > 0 ? r.total_ar / r.total : 1.0);
    for (const auto& mr : r.per) fmt::print("  {:>14}", sim::format_seconds(mr.best_s()));
    fmt::print("\n");
  }
  if (e.rows.empty()) return;
  const auto& b = e.rows[e.order[0]];
  fmt::print("\nbest placement {}:\n", engine::format_matrix_brackets(b.x));
  for (std::size_t i = 0; i < reds.size(); ++i) {
    const auto& mr = b.per[i];
    fmt::print("  reduce [{}] x {}: {} (single AllReduce {}, {:.2f}x)  {}\n", fmt::join(reds[i].axes, ","),
               reds[i].weight, sim::format_seconds(mr.best_s()), sim::format_seconds(mr.allreduce_s), mr.speedup(),
               mr.programs.empty() ? std::string("-") : mr.programs.front().name);
  }
}

Registrar reg("explore", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<ExploreArgs>();
  add_problem_options(sub, a->problem, /*need_reduce=*/false, /*sharp=*/true);
  sub.add_option("--reduction", a->reductions,
                 "a reduction and its weight, AXES[@WEIGHT], repeatable: e.g. --reduction 0@1 "
                 "--reduction 1@4 (data-parallel gradients once, shard reductions 4 times per step); "
                 "--reduce R adds R with weight 1");
  add_cost_options(sub, a->cost);
  sub.add_option("--top", a->top, "placements listed (-1: all)")->capture_default_str();
  add_search_options(sub, a->search, /*with_hierarchy=*/false);
  sub.add_flag("--json", a->json, "machine-readable output");
  add_sweep_options(sub, a->sweep);
  add_progress_options(sub, a->progress);
  return [a] {
    const auto sizes = sweep_sizes(a->cost.bytes, a->sweep);
    const bool sweeping = sizes.size() > 1 || a->sweep.given();
    if (sweeping) a->cost.bytes.clear();
    Problem p = load_problem(a->problem);
    nlohmann::json accuracy;
    if (const auto note = fill_interconnects(p.system, a->problem.preset, a->problem.sharp, a->problem.nccl_version,
                                             a->problem.nccl_tuner, &accuracy);
        !note.empty() && !a->json)
      fmt::print("{}\n", note);
    std::vector<Reduction> reds;
    if (!p.reduce.empty()) reds.push_back({p.reduce, 1.0, a->problem.reduce});
    for (const auto& s : a->reductions) reds.push_back(parse_reduction(s, p.axes.size()));
    if (reds.empty())
      throw Error("explore: give at least one reduction, e.g. --reduction 0@1 --reduction 1@2 (or --reduce 0)");
    const sim::CostOptions copt = a->cost.options(p.system);
    engine::ProgramSource programs(p.system, p.axes, {engine::HierarchyKind::ReductionAxes, a->search.options()});
    if (sweeping) {
      std::vector<std::pair<std::vector<int>, double>> rs;
      for (const auto& r : reds) rs.emplace_back(r.axes, r.weight);
      return explore_sweep(p.system, p.axes, rs, p.matrices, programs, copt, a->cost.algo, sizes,
                           {a->json, a->progress, accuracy});
    }
    sim::Simulator simulator(p.system);
    const Explored e = explore_placements(p, reds, programs, copt, simulator, a->progress.wanted());
    const std::size_t shown =
        a->top < 0 ? e.rows.size() : std::min<std::size_t>(e.rows.size(), static_cast<std::size_t>(a->top));
    if (a->json) {
      nlohmann::json j = explore_json(p, *a, copt, reds, e, shown);
      add_accuracy(j, accuracy);
      fmt::print("{}\n", j.dump(2));
    } else
      print_explored(p, *a, copt, reds, e, shown, simulator.topology().num_devices());
    return 0;
  };
});

}  // namespace
}  // namespace p2v::tools
