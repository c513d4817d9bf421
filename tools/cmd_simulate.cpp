// p2v simulate: rank (matrix, program) pairs by predicted time on the system's topology (issue 5).
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/sim/calibrate.hpp"
#include "p2v/sim/levels.hpp"
#include "p2v/sim/rank.hpp"
#include "p2v/sim/report.hpp"
#include "p2v/sim/svg.hpp"

namespace p2v::tools {
namespace {


struct SimArgs {
  ProblemArgs problem;
  CostArgs cost;
  int top = 10;
  SearchArgs search;
  bool json = false;
  bool steps = false;
  int links = -1;
  std::string svg_topology, svg_ranking, measurements, measured_programs;
  int svg_program = 1;
  std::string preset, model = "auto";
};

// The level model (docs/shape.md §7): rankings from level patterns and per-level counts, for any
// device count. Programs come from the placement's shape, once per shape.
int run_levels(const SimArgs& a, const Problem& p, const sim::CostOptions& copt, int json_top) {
  for (const auto& [opt, name] : {std::pair{&a.svg_topology, "--svg-topology"}, {&a.svg_ranking, "--svg-ranking"},
                                  {&a.measurements, "--measurements"}, {&a.measured_programs, "--measured-programs"}})
    if (!opt->empty())
      throw Error(fmt::format("{} needs the graph model (--model graph, systems of at most 2048 devices); this run uses "
                              "the level model",
                              name));
  const sim::LevelSimulator lv(p.system);
  const engine::SynthOptions sopt = a.search.options();
  const auto names = p.system.level_names();
  struct Ranked {
    std::string name;
    double time_s;
    std::vector<engine::Collective> cs;
    std::vector<engine::GroupPattern> gs;
  };
  struct Result {
    engine::ParallelismMatrix x;
    engine::Shape shape;
    double allreduce_s = 0;
    std::vector<Ranked> programs;
    double best() const { return programs.empty() ? allreduce_s : programs.front().time_s; }
  };
  std::map<std::string, engine::SynthResult> by_shape;
  std::vector<Result> results;
  for (const auto& x : p.matrices) {
    Result res{x, engine::make_shape(p.system.cardinalities(), names, x, p.reduce, engine::HierarchyKind::ReductionAxes), 0, {}};
    auto [it, fresh] = by_shape.try_emplace(res.shape.signature());
    if (fresh) it->second = engine::synthesize_shape(res.shape, sopt);
    const auto& r = it->second;
    res.allreduce_s = lv.allreduce_time(res.shape, copt);
    for (const auto& prog : r.programs) {
      Ranked rk{engine::program_name(r, prog), 0, {}, engine::program_patterns(res.shape, r, prog)};
      for (int i : prog) rk.cs.push_back(r.instructions[i].collective);
      rk.time_s = lv.simulate(res.shape, rk.cs, rk.gs, copt).time_s;
      res.programs.push_back(std::move(rk));
    }
    auto key = [](double t) { return std::round(t * 1e12); };
    std::stable_sort(res.programs.begin(), res.programs.end(),
                     [&](const Ranked& u, const Ranked& v) { return key(u.time_s) < key(v.time_s); });
    results.push_back(std::move(res));
  }
  std::size_t best_m = 0;
  for (std::size_t i = 1; i < results.size(); ++i)
    if (results[i].best() < results[best_m].best()) best_m = i;
  auto steps_json = [&](const Result& res, const Ranked& rk) {
    nlohmann::json sj = nlohmann::json::array();
    for (const auto& st : lv.simulate(res.shape, rk.cs, rk.gs, copt).steps)
      sj.push_back({{"collective", engine::to_string(st.cost.collective)},
                    {"groups", st.cost.num_groups},
                    {"group_size", st.cost.group_size},
                    {"algo", sim::to_string(st.cost.algo)},
                    {"time_s", st.cost.time_s},
                    {"busbw_gbps", st.cost.busbw_gbps},
                    {"bottleneck", st.bottleneck},
                    {"bottleneck_bytes", st.cost.bottleneck_bytes}});
    return sj;
  };
  if (a.json) {
    nlohmann::json out{{"system", nlohmann::json::parse(engine::system_to_json(p.system))},
                       {"axes", p.axes},
                       {"reduce", p.reduce},
                       {"algo", a.cost.algo},
                       {"bytes", copt.bytes},
                       {"model", "levels"},
                       {"results", nlohmann::json::array()}};
    for (const auto& res : results) {
      nlohmann::json r{{"matrix", res.x},
                       {"shape", res.shape.signature()},
                       {"allreduce_s", res.allreduce_s},
                       {"speedup", res.allreduce_s / res.best()},
                       {"num_programs", res.programs.size()}};
      r["best"] = res.programs.empty() ? nlohmann::json(nullptr)
                                       : nlohmann::json{{"program", res.programs.front().name},
                                                        {"time_s", res.programs.front().time_s}};
      r["programs"] = nlohmann::json::array();
      for (std::size_t i = 0; i < res.programs.size() && (json_top < 0 || static_cast<int>(i) < json_top); ++i)
        r["programs"].push_back({{"rank", i + 1},
                                 {"program", res.programs[i].name},
                                 {"time_s", res.programs[i].time_s},
                                 {"speedup", res.allreduce_s / res.programs[i].time_s},
                                 {"steps", steps_json(res, res.programs[i])}});
      out["results"].push_back(std::move(r));
    }
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("system {}: {} devices; level model; algo {}; {} per device; reduce axes [{}]\n", p.system.name,
             p.system.num_devices(), a.cost.algo, sim::format_bytes(copt.bytes), fmt::join(p.reduce, " "));
  for (const auto& res : results) {
    fmt::print("\nmatrix {}: {} programs (shape {})\n", engine::format_matrix_brackets(res.x), res.programs.size(),
               res.shape.signature());
    fmt::print("  single AllReduce  {:>11}\n", sim::format_seconds(res.allreduce_s));
    fmt::print("  {:>4}  {:>11}  {:>7}  {}\n", "rank", "time", "speedup", "program");
    for (std::size_t i = 0; i < res.programs.size(); ++i) {
      if (a.top >= 0 && static_cast<int>(i) >= a.top) {
        fmt::print("  ... {} more (--top -1 or --json)\n", res.programs.size() - i);
        break;
      }
      fmt::print("  {:>4}  {:>11}  {:>6.2f}x  {}\n", i + 1, sim::format_seconds(res.programs[i].time_s),
                 res.allreduce_s / res.programs[i].time_s, res.programs[i].name);
      if (a.steps && i == 0)
        for (const auto& st : lv.simulate(res.shape, res.programs[i].cs, res.programs[i].gs, copt).steps)
          fmt::print("          {:<14} {:>9} groups of {:<8} {:>11}  bottleneck {}\n",
                     engine::to_string(st.cost.collective), st.cost.num_groups, st.cost.group_size,
                     sim::format_seconds(st.cost.time_s), st.bottleneck.empty() ? "-" : st.bottleneck);
    }
  }
  if (!results.empty()) {
    const auto& b = results[best_m];
    fmt::print("\nbest placement: {} ({} vs single AllReduce {}, {:.2f}x): {}\n", engine::format_matrix_brackets(b.x),
               sim::format_seconds(b.best()), sim::format_seconds(b.allreduce_s), b.allreduce_s / b.best(),
               b.programs.empty() ? std::string("-") : b.programs.front().name);
  }
  return 0;
}

Registrar reg(
    "simulate",
    "Rank placements and reduction programs by predicted time on the system's topology", 50,
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<SimArgs>();
      add_problem_options(sub, a->problem);
      add_cost_options(sub, a->cost);
      auto* top_opt = sub.add_option("--top", a->top, "programs listed per matrix (-1: all); --json lists all unless --top is given")
          ->capture_default_str();
      add_search_options(sub, a->search, /*with_hierarchy=*/false);
      sub.add_flag("--json", a->json, "machine-readable output: every program's time and per-step breakdown");
      sub.add_flag("--steps", a->steps, "table: per-step breakdown of the single AllReduce and of the best program");
      sub.add_option("--links", a->links, "--json: at most this many busiest links per step (-1: all)")
          ->capture_default_str();
      sub.add_option("--svg-topology", a->svg_topology,
                     "write an SVG of the topology, one panel per step of the best program of the best "
                     "matrix, its groups coloured and links shaded by load");
      sub.add_option("--svg-program", a->svg_program,
                     "--svg-topology draws the program of this rank (1 = best; 0 = the single AllReduce)")
          ->capture_default_str();
      sub.add_option("--svg-ranking", a->svg_ranking, "write an SVG of predicted time per program in rank order");
      sub.add_option("--measurements", a->measurements,
                     "CSV of measured collectives (collective,groups,bytes,seconds): report prediction error");
      sub.add_option("--measured-programs", a->measured_programs,
                     "CSV of measured program times (program,seconds[,matrix]): report where the measured-best "
                     "program ranks in the prediction, rank correlation and error; overlay on --svg-ranking");
      add_preset_option(sub, a->preset);
      sub.add_option("--model", a->model,
                     "graph (routes every transfer; at most 2048 devices; topology sections), levels (per-level "
                     "counts; any size) or auto (levels above 2048 devices)")
          ->capture_default_str();
      return [a, top_opt] {
        const int json_top = top_opt->count() ? a->top : -1;
        Problem p = load_problem(a->problem);
        if (const auto note = fill_interconnects(p.system, a->preset); !note.empty() && !a->json)
          fmt::print("{}\n", note);
        if (a->model != "auto" && a->model != "graph" && a->model != "levels")
          throw Error("--model: expected graph, levels or auto, got '" + a->model + "'");
        if (a->model == "levels" || (a->model == "auto" && p.system.topology_json.empty() && p.system.num_devices() > 2048))
          return run_levels(*a, p, a->cost.options(p.system), json_top);
        sim::Simulator simulator(p.system);
        const sim::CostOptions copt = a->cost.options(p.system);
        engine::SynthOptions sopt = a->search.options();
        const std::vector<std::string> names = p.system.level_names();

        std::vector<sim::MatrixRanking> ranks;
        for (const auto& x : p.matrices)
          ranks.push_back(sim::rank_placement(simulator, p.placement(x), names, sopt, copt));
        std::vector<sim::RankAccuracy> accs;
        if (!a->measured_programs.empty()) {
          const auto pm = sim::load_program_measurements(a->measured_programs);
          if (ranks.size() > 1)
            for (const auto& m : pm)
              if (m.matrix.empty())
                throw Error(fmt::format("{}:{}: several matrices are ranked; give a matrix column or --matrix",
                                        a->measured_programs, m.line));
          for (const auto& mr : ranks) accs.push_back(sim::rank_accuracy(mr, pm));
        }
        std::size_t best_m = 0;
        for (std::size_t i = 1; i < ranks.size(); ++i)
          if (ranks[i].best_s() < ranks[best_m].best_s()) best_m = i;

        // Pictures show the best matrix, or the one with the most measured programs.
        std::size_t pm = best_m;
        for (std::size_t i = 0; i < accs.size(); ++i)
          if (accs[i].measured > accs[pm].measured) pm = i;
        if (!a->svg_topology.empty() && !ranks.empty() &&
            (a->svg_program < 0 || a->svg_program > static_cast<int>(ranks[pm].programs.size())))
          throw Error(fmt::format("--svg-program {}: matrix {} has {} ranked programs (0 = the single AllReduce)",
                                  a->svg_program, engine::format_matrix_brackets(ranks[pm].matrix),
                                  ranks[pm].programs.size()));
        const auto& topo = simulator.topology();
        nlohmann::json out;
        if (a->json) {
          out["system"] = nlohmann::json::parse(engine::system_to_json(p.system));
          out["axes"] = p.axes;
          out["reduce"] = p.reduce;
          out["algo"] = a->cost.algo;
          out["bytes"] = copt.bytes;
          out["results"] = nlohmann::json::array();
        } else {
          fmt::print("system {}: {} devices; algo {}; {} per device; reduce axes [{}]\n", p.system.name,
                     topo.num_devices(), a->cost.algo, sim::format_bytes(copt.bytes), fmt::join(p.reduce, " "));
        }
        auto cost_opts = copt;
        cost_opts.breakdown = true;
        for (std::size_t mi = 0; mi < ranks.size(); ++mi) {
          const auto& mr = ranks[mi];
          const sim::RankAccuracy* acc = accs.empty() ? nullptr : &accs[mi];
          const auto ar_prog = sim::single_allreduce(p.placement(mr.matrix).reduction_groups());
          if (a->json) {
            nlohmann::json r;
            r["matrix"] = mr.matrix;
            r["allreduce_s"] = mr.allreduce_s;
            r["allreduce_steps"] =
                nlohmann::json::parse(sim::steps_json(topo, simulator.simulate(ar_prog, cost_opts), a->links));
            if (!mr.programs.empty())
              r["best"] = {{"program", mr.programs.front().name}, {"time_s", mr.programs.front().time_s}};
            else
              r["best"] = nullptr;
            r["speedup"] = mr.speedup();
            r["num_programs"] = mr.programs.size();
            r["truncated"] = mr.truncated;
            if (acc)
              r["measured"] = {{"programs", acc->measured},
                               {"unmatched_rows", acc->unmatched},
                               {"best_measured", acc->best_measured},
                               {"predicted_rank_of_best", acc->predicted_rank_of_best},
                               {"spearman", acc->spearman},
                               {"mean_abs_rel_error", acc->mean_abs_rel_error}};
            r["programs"] = nlohmann::json::array();
            int rank = 0;
            for (const auto& rp : mr.programs) {
              if (json_top >= 0 && rank >= json_top) break;  // --json: all unless --top given
              nlohmann::json pj;
              pj["rank"] = ++rank;
              pj["program"] = rp.name;
              pj["time_s"] = rp.time_s;
              pj["speedup"] = mr.allreduce_s / rp.time_s;
              if (acc && acc->measured_s[static_cast<std::size_t>(rank - 1)] > 0)
                pj["measured_s"] = acc->measured_s[static_cast<std::size_t>(rank - 1)];
              pj["steps"] =
                  nlohmann::json::parse(sim::steps_json(topo, simulator.simulate(rp.lowered, cost_opts), a->links));
              r["programs"].push_back(std::move(pj));
            }
            out["results"].push_back(std::move(r));
            continue;
          }
          fmt::print("\nmatrix {}: {} programs{}\n", engine::format_matrix_brackets(mr.matrix), mr.programs.size(),
                     mr.truncated ? " (truncated)" : "");
          fmt::print("  single AllReduce  {:>11}\n", sim::format_seconds(mr.allreduce_s));
          if (a->steps) fmt::print("{}", sim::steps_table(topo, simulator.simulate(ar_prog, cost_opts), "    "));
          int rank = 0;
          fmt::print("  {:>4}  {:>11}  {:>7}  {}\n", "rank", "time", "speedup", "program");
          for (const auto& rp : mr.programs) {
            if (a->top >= 0 && rank >= a->top) {
              fmt::print("  ... {} more (--top -1 or --json)\n", mr.programs.size() - static_cast<std::size_t>(rank));
              break;
            }
            const double meas = acc ? acc->measured_s[static_cast<std::size_t>(rank)] : -1.0;
            fmt::print("  {:>4}  {:>11}  {:>6.2f}x  {}{}\n", rank + 1, sim::format_seconds(rp.time_s),
                       mr.allreduce_s / rp.time_s, rp.name,
                       meas > 0 ? fmt::format("   [measured {}]", sim::format_seconds(meas)) : std::string());
            ++rank;
          }
          if (acc) {
            if (acc->measured == 0)
              fmt::print("  measured: no row of {} names a program of this matrix ({} unmatched)\n",
                         a->measured_programs, acc->unmatched);
            else
              fmt::print("  measured: {} programs; the measured best ({}) is predicted #{}{}; Spearman {:.2f}; "
                         "mean |error| {:.1f}%\n",
                         acc->measured, acc->best_measured, acc->predicted_rank_of_best,
                         acc->predicted_rank_of_best == 1 ? " (top-1 hit)" : "", acc->spearman,
                         100 * acc->mean_abs_rel_error);
          }
          if (a->steps && !mr.programs.empty()) {
            fmt::print("  best program, per step:\n");
            fmt::print("{}", sim::steps_table(topo, simulator.simulate(mr.programs.front().lowered, cost_opts), "    "));
          }
        }
        if (!a->json && !ranks.empty()) {
          fmt::print("\nsummary (algo {}, {} per device)\n", a->cost.algo, sim::format_bytes(copt.bytes));
          std::size_t mw = 6;
          for (const auto& mr : ranks) mw = std::max(mw, engine::format_matrix_brackets(mr.matrix).size());
          fmt::print("  {:<{}} {:>11} {:>11} {:>8}  {}\n", "matrix", mw, "AllReduce", "best", "speedup", "best program");
          for (std::size_t i = 0; i < ranks.size(); ++i) {
            const auto& mr = ranks[i];
            fmt::print("  {:<{}} {:>11} {:>11} {:>7.2f}x  {}{}\n", engine::format_matrix_brackets(mr.matrix), mw,
                       sim::format_seconds(mr.allreduce_s), sim::format_seconds(mr.best_s()), mr.speedup(),
                       mr.programs.empty() ? std::string("-") : mr.programs.front().name,
                       i == best_m && ranks.size() > 1 ? "   <- best placement" : "");
          }
        }
        if (!a->measurements.empty()) {
          const auto ms = sim::load_measurements(a->measurements, topo.num_devices());
          const auto ps = sim::predict(simulator, ms, copt.algo);
          if (a->json) {
            nlohmann::json mj = nlohmann::json::array();
            for (std::size_t i = 0; i < ms.size(); ++i)
              mj.push_back({{"line", ms[i].line},
                            {"collective", engine::to_string(ms[i].step.collective)},
                            {"groups", ms[i].groups_text},
                            {"bytes", ms[i].bytes},
                            {"measured_s", ps[i].measured_s},
                            {"predicted_s", ps[i].predicted_s},
                            {"rel_error", ps[i].rel_error}});
            out["measurements"] = {{"file", a->measurements},
                                   {"rows", std::move(mj)},
                                   {"mean_abs_rel_error", sim::mean_abs_rel_error(ps)}};
          } else {
            fmt::print("\nprediction error on {} ({} rows)\n", a->measurements, ms.size());
            fmt::print("  {:>5}  {:<13} {:>10} {:>11} {:>11} {:>8}  {}\n", "line", "collective", "bytes", "measured",
                       "predicted", "error", "groups");
            for (std::size_t i = 0; i < ms.size(); ++i)
              fmt::print("  {:>5}  {:<13} {:>10} {:>11} {:>11} {:>+7.1f}%  {}\n", ms[i].line,
                         engine::to_string(ms[i].step.collective), sim::format_bytes(ms[i].bytes),
                         sim::format_seconds(ps[i].measured_s), sim::format_seconds(ps[i].predicted_s),
                         100 * ps[i].rel_error, ms[i].groups_text);
            fmt::print("  mean |error| {:.1f}%\n", 100 * sim::mean_abs_rel_error(ps));
          }
        }
        if (!ranks.empty() && (!a->svg_topology.empty() || !a->svg_ranking.empty())) {
          const auto& mr = ranks[pm];
          const std::string title = fmt::format("{} — matrix {}, reduce [{}], {} per device, {}", p.system.name,
                                                engine::format_matrix_brackets(mr.matrix), fmt::join(p.reduce, " "),
                                                sim::format_bytes(copt.bytes), a->cost.algo);
          if (!a->svg_topology.empty()) {
            const bool single = a->svg_program == 0;
            const sim::RankedProgram* chosen =
                single ? nullptr : &mr.programs[static_cast<std::size_t>(a->svg_program - 1)];
            engine::LoweredProgram prog =
                single ? sim::single_allreduce(p.placement(mr.matrix).reduction_groups()) : chosen->lowered;
            const auto pc = simulator.simulate(prog, cost_opts);
            std::vector<std::string> labels;
            if (!single) {
              const std::string& n = chosen->name;
              std::size_t pos = 0;
              while (true) {
                auto q = n.find(" ; ", pos);
                labels.push_back(n.substr(pos, q == std::string::npos ? std::string::npos : q - pos));
                if (q == std::string::npos) break;
                pos = q + 3;
              }
            } else {
              labels.push_back("single AllReduce over the reduction groups");
            }
            const std::string what =
                single ? std::string("single AllReduce") : fmt::format("program #{}", a->svg_program);
            write_file(a->svg_topology,
                       sim::topology_svg(topo, prog, &pc, fmt::format("{} ({}): {}", what, sim::format_seconds(pc.time_s), title),
                                         labels));
          }
          if (!a->svg_ranking.empty()) {
            std::vector<sim::RankPoint> pts;
            for (std::size_t i = 0; i < mr.programs.size(); ++i)
              pts.push_back({mr.programs[i].name, mr.programs[i].time_s, accs.empty() ? -1.0 : accs[pm].measured_s[i]});
            write_file(a->svg_ranking, sim::ranking_svg(pts, mr.allreduce_s, "predicted time per program: " + title));
          }
        }
        if (a->json) fmt::print("{}\n", out.dump(2));
        return 0;
      };
    });

}  // namespace
}  // namespace p2v::tools
