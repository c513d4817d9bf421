// p2v simulate: rank (matrix, program) pairs by predicted time on the system's topology (docs/simulator.md).
// The ranking is sim::simulate (p2v/sim/simulate.hpp); this file holds the options and the table.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/sim/simulate.hpp"

namespace p2v::tools {
namespace {

struct SimArgs {
  ProblemArgs problem;
  CostArgs cost;
  int top = 10;
  bool top_given = false;
  SearchArgs search;
  bool json = false;
  bool steps = false;
  int links = -1;
  std::string svg_topology, svg_ranking, measurements, measured_programs;
  int svg_program = 1;
  std::string preset, model = "auto";
  bool sharp = false;
};

void add_options(CLI::App& sub, SimArgs& a) {
  add_problem_options(sub, a.problem);
  add_cost_options(sub, a.cost);
  sub.add_option("--top", a.top, "programs listed per matrix (-1: all); --json lists all unless --top is given")
      ->capture_default_str();
  add_search_options(sub, a.search, /*with_hierarchy=*/false);
  sub.add_flag("--json", a.json, "machine-readable output: every program's time and per-step breakdown");
  sub.add_flag("--steps", a.steps, "table: per-step breakdown of the single AllReduce and of the best program");
  sub.add_option("--links", a.links, "--json: at most this many busiest links per step (-1: all)")
      ->capture_default_str();
  sub.add_option("--svg-topology", a.svg_topology,
                 "write an SVG of the topology, one panel per step of the best program of the best "
                 "matrix, its groups coloured and links shaded by load");
  sub.add_option("--svg-program", a.svg_program,
                 "--svg-topology draws the program of this rank (1 = best; 0 = the single AllReduce)")
      ->capture_default_str();
  sub.add_option("--svg-ranking", a.svg_ranking, "write an SVG of predicted time per program in rank order");
  sub.add_option("--measurements", a.measurements,
                 "CSV of measured collectives (collective,groups,bytes,seconds): report prediction error");
  sub.add_option("--measured-programs", a.measured_programs,
                 "CSV of measured program times (program,seconds[,matrix]): report where the measured-best "
                 "program ranks in the prediction, rank correlation and error; overlay on --svg-ranking");
  add_preset_option(sub, a.preset, &a.sharp);
  sub.add_option("--model", a.model,
                 "graph (routes every transfer; at most 2048 devices; topology sections), levels (per-level "
                 "counts; any size) or auto (levels above 2048 devices)")
      ->capture_default_str();
}

// Loads the problem and ranks it; writes the pictures asked for.
sim::SimulateRun run(const SimArgs& a) {
  Problem p = load_problem(a.problem);
  if (const auto note = fill_interconnects(p.system, a.preset, a.sharp); !note.empty() && !a.json)
    fmt::print("{}\n", note);
  sim::SimulateOptions o;
  o.model = sim::choose_model(a.model, p.system);
  if (o.model == sim::SimModel::Levels)
    for (const auto& [opt, name] : {std::pair{&a.svg_topology, "--svg-topology"},
                                    {&a.svg_ranking, "--svg-ranking"},
                                    {&a.measurements, "--measurements"},
                                    {&a.measured_programs, "--measured-programs"}})
      if (!opt->empty())
        throw Error(
            fmt::format("{} needs the graph model (--model graph, systems of at most 2048 devices); this run "
                        "uses the level model",
                        name));
  o.synth = a.search.options();
  o.cost = a.cost.options(p.system);
  o.algo = a.cost.algo;
  o.list = a.json && a.top_given ? a.top : -1;  // --json: all unless --top given; the table counts the rest
  o.program_steps = a.json;
  o.best_steps = a.steps;
  o.links = a.links;
  o.measurements = a.measurements;
  o.measured_programs = a.measured_programs;
  o.svg_topology = !a.svg_topology.empty();
  o.svg_ranking = !a.svg_ranking.empty();
  o.svg_program = a.svg_program;
  auto r = sim::simulate(p.system, p.axes, p.reduce, p.matrices, o);
  if (o.svg_topology && !r.topology_svg.empty()) write_file(a.svg_topology, r.topology_svg);
  if (o.svg_ranking && !r.ranking_svg.empty()) write_file(a.svg_ranking, r.ranking_svg);
  return r;
}

// The programs of one matrix, at most --top of them.
void print_programs(const SimArgs& a, const sim::MatrixRecord& m, bool level_steps) {
  fmt::print("  {:>4}  {:>11}  {:>7}  {}\n", "rank", "time", "speedup", "program");
  for (const auto& p : m.programs) {
    if (a.top >= 0 && p.rank > a.top) {
      fmt::print("  ... {} more (--top -1 or --json)\n", m.num_programs - a.top);
      break;
    }
    fmt::print("  {:>4}  {:>11}  {:>6.2f}x  {}{}\n", p.rank, sim::format_seconds(p.time_s), p.speedup, p.program,
               p.measured_s ? fmt::format("   [measured {}]", sim::format_seconds(*p.measured_s)) : std::string());
    if (level_steps)
      for (const auto& st : p.steps)
        fmt::print("          {:<14} {:>9} groups of {:<8} {:>11}  bottleneck {}\n", engine::to_string(st.collective),
                   st.groups, st.group_size, sim::format_seconds(st.time_s),
                   st.bottleneck_level.empty() ? "-" : st.bottleneck_level);
  }
}

void print_levels(const SimArgs& a, const sim::SimulateReport& r) {
  fmt::print("system {}: {} devices; level model; algo {}; {} per device; reduce axes [{}]\n", r.system.name,
             r.system.num_devices(), r.algo, sim::format_bytes(r.bytes), fmt::join(r.reduce, " "));
  for (const auto& m : r.results) {
    fmt::print("\nmatrix {}: {} programs (shape {})\n", engine::format_matrix_brackets(m.matrix), m.num_programs,
               m.shape);
    fmt::print("  single AllReduce  {:>11}\n", sim::format_seconds(m.allreduce_s));
    print_programs(a, m, a.steps);
  }
  if (r.results.empty()) return;
  const auto& b = r.results[r.best_matrix()];
  fmt::print("\nbest placement: {} ({} vs single AllReduce {}, {:.2f}x): {}\n",
             engine::format_matrix_brackets(b.matrix), sim::format_seconds(b.best_s()),
             sim::format_seconds(b.allreduce_s), b.allreduce_s / b.best_s(),
             b.best ? b.best->program : std::string("-"));
}

void print_measured(const SimArgs& a, const sim::MeasuredRecord& m) {
  if (m.programs == 0)
    fmt::print("  measured: no row of {} names a program of this matrix ({} unmatched)\n", a.measured_programs,
               m.unmatched_rows);
  else
    fmt::print(
        "  measured: {} programs; the measured best ({}) is predicted #{}{}; Spearman {:.2f}; "
        "mean |error| {:.1f}%\n",
        m.programs, m.best_measured, m.predicted_rank_of_best, m.predicted_rank_of_best == 1 ? " (top-1 hit)" : "",
        m.spearman, 100 * m.mean_abs_rel_error);
}

void print_summary(const sim::SimulateReport& r) {
  fmt::print("\nsummary (algo {}, {} per device)\n", r.algo, sim::format_bytes(r.bytes));
  std::size_t mw = 6;
  for (const auto& m : r.results) mw = std::max(mw, engine::format_matrix_brackets(m.matrix).size());
  fmt::print("  {:<{}} {:>11} {:>11} {:>8}  {}\n", "matrix", mw, "AllReduce", "best", "speedup", "best program");
  const std::size_t best = r.best_matrix();
  for (std::size_t i = 0; i < r.results.size(); ++i) {
    const auto& m = r.results[i];
    fmt::print("  {:<{}} {:>11} {:>11} {:>7.2f}x  {}{}\n", engine::format_matrix_brackets(m.matrix), mw,
               sim::format_seconds(m.allreduce_s), sim::format_seconds(m.best_s()), m.speedup,
               m.best ? m.best->program : std::string("-"),
               i == best && r.results.size() > 1 ? "   <- best placement" : "");
  }
}

void print_measurements(const sim::MeasurementsRecord& m) {
  fmt::print("\nprediction error on {} ({} rows)\n", m.file, m.rows.size());
  fmt::print("  {:>5}  {:<13} {:>10} {:>11} {:>11} {:>8}  {}\n", "line", "collective", "bytes", "measured", "predicted",
             "error", "groups");
  for (const auto& row : m.rows)
    fmt::print("  {:>5}  {:<13} {:>10} {:>11} {:>11} {:>+7.1f}%  {}\n", row.line, engine::to_string(row.collective),
               sim::format_bytes(row.bytes), sim::format_seconds(row.measured_s), sim::format_seconds(row.predicted_s),
               100 * row.rel_error, row.groups);
  fmt::print("  mean |error| {:.1f}%\n", 100 * m.mean_abs_rel_error);
}

void print_table(const SimArgs& a, const sim::SimulateReport& r) {
  if (r.model == sim::SimModel::Levels) return print_levels(a, r);
  fmt::print("system {}: {} devices; algo {}; {} per device; reduce axes [{}]\n", r.system.name, r.system.num_devices(),
             r.algo, sim::format_bytes(r.bytes), fmt::join(r.reduce, " "));
  for (const auto& m : r.results) {
    fmt::print("\nmatrix {}: {} programs{}\n", engine::format_matrix_brackets(m.matrix), m.num_programs,
               m.truncated ? " (truncated)" : "");
    fmt::print("  single AllReduce  {:>11}\n", sim::format_seconds(m.allreduce_s));
    if (a.steps) fmt::print("{}", sim::steps_table(m.allreduce_steps, "    "));
    print_programs(a, m, false);
    if (m.measured) print_measured(a, *m.measured);
    if (a.steps && !m.programs.empty()) {
      fmt::print("  best program, per step:\n");
      fmt::print("{}", sim::steps_table(m.programs.front().steps, "    "));
    }
  }
  if (!r.results.empty()) print_summary(r);
  if (r.measurements) print_measurements(*r.measurements);
}

Registrar reg("simulate", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<SimArgs>();
  add_options(sub, *a);
  const CLI::Option* top = sub.get_option("--top");
  return [a, top] {
    a->top_given = top->count() > 0;
    const auto r = run(*a);
    if (a->json)
      fmt::print("{}\n", sim::to_json(r.report).dump(2));
    else
      print_table(*a, r.report);
    return 0;
  };
});

}  // namespace
}  // namespace p2v::tools
