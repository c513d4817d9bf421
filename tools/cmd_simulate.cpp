// p2v simulate: rank (matrix, program) pairs by predicted time on the system's topology (docs/simulator.md).
// The ranking is sim::simulate (p2v/sim/simulate.hpp); this file holds the options and the table.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/synth_format.hpp"
#include "p2v/sim/simulate.hpp"
#include "sweep_sim.hpp"

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
  std::string model = "auto";
  std::vector<std::string> programs;  // --program (repeatable)
  std::string program_file;
  SweepArgs sweep;  // --bytes LIST|RANGE, -b/-e/-f/-i: one row per size (sweep_sim.cpp)
  ProgressArgs progress;
};

void add_options(CLI::App& sub, SimArgs& a) {
  add_problem_options(sub, a.problem, /*need_reduce=*/true, /*sharp=*/true);
  add_cost_options(sub, a.cost);
  sub.add_option("--program", a.programs,
                 "price this program (p2v notation, as synth/simulate print it; repeatable) instead of ranking all; "
                 "placements it does not fit are left out, so --matrix is only needed to choose among several");
  sub.add_option("--program-file", a.program_file,
                 "price the programs of this file: one per line, or the --json output of p2v synth / p2v simulate");
  sub.add_option("--top", a.top,
                 "the N best programs of each matrix by predicted time: list them (-1: all; --json lists all "
                 "unless --top is given; p2v run --top N runs the same N)")
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
                 "measured collectives: a CSV (collective,groups,bytes,seconds) or p2v run --json output "
                 "(p2v-run/1): report prediction error");
  sub.add_option("--measured-programs", a.measured_programs,
                 "CSV of measured program times (program,seconds[,matrix]): report where the measured-best "
                 "program ranks in the prediction, rank correlation and error; overlay on --svg-ranking");
  sub.add_option("--model", a.model,
                 "graph (routes every transfer; at most 2048 devices; topology sections), levels (per-level "
                 "counts; any size) or auto (levels above 2048 devices)")
      ->capture_default_str();
  add_sweep_options(sub, a.sweep);
  add_progress_options(sub, a.progress);
}

// Notations compared without their spaces ("A ; B" is "A;B").
std::string squeeze(const std::string& s) {
  std::string o;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) o += c;
  return o;
}

// --program and --program-file: the notations to price (squeezed); empty when neither is given.
std::set<std::string> given_programs(const SimArgs& a) {
  std::set<std::string> out;
  for (const auto& p : a.programs) out.insert(squeeze(p));
  if (a.program_file.empty()) return out;
  const std::string text = engine::read_text_file(a.program_file, "--program-file");
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    const auto j = engine::parse_json_object(text, "--program-file '" + a.program_file + "'");
    const std::string format = j.contains("format") && j["format"].is_string() ? j["format"].get<std::string>() : "";
    if (format.rfind("p2v-synth/", 0) == 0) {
      for (const auto& r : engine::parse_synth_file(text, "--program-file '" + a.program_file + "'").results)
        for (const auto& p : r.programs) out.insert(squeeze(p.notation));
    } else {
      for (const auto& r : sim::simulate_report_from_json(j, "--program-file '" + a.program_file + "'").results)
        for (const auto& p : r.programs) out.insert(squeeze(p.program));
    }
  } else {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      const auto t = squeeze(line);
      if (!t.empty() && t[0] != '#') out.insert(t);
    }
  }
  if (out.empty()) throw Error(fmt::format("--program-file '{}': no programs in it", a.program_file));
  return out;
}

// Keeps only the given programs in every matrix (ranked among themselves) and the matrices they
// fit; throws p2v::Error naming a program that fits no matrix.
void keep_given(sim::SimulateReport& r, const std::set<std::string>& want, int max_size) {
  std::set<std::string> found;
  std::vector<sim::MatrixRecord> kept;
  for (auto& m : r.results) {
    std::vector<sim::ProgramRecord> ps;
    for (auto& p : m.programs)
      if (want.count(squeeze(p.program))) {
        found.insert(squeeze(p.program));
        p.rank = static_cast<int>(ps.size()) + 1;
        ps.push_back(std::move(p));
      }
    if (ps.empty()) continue;
    m.programs = std::move(ps);
    m.num_programs = static_cast<std::int64_t>(m.programs.size());
    m.best = sim::BestRecord{m.programs.front().program, m.programs.front().time_s};
    m.speedup = m.allreduce_s / m.best->time_s;
    kept.push_back(std::move(m));
  }
  for (const auto& w : want)
    if (!found.count(w))
      throw Error(fmt::format(
          "program '{}' is not a valid program of any placement given (--axes/--reduce/--matrix, programs up to "
          "--max-size {}, hierarchy d); check its notation against p2v synth",
          w, max_size));
  r.results = std::move(kept);
}

// The problem, the simulation's options and the programs to price (--program/--program-file, read
// once here).
struct Prepared {
  Problem problem;
  sim::SimulateOptions options;
  std::set<std::string> given;
  nlohmann::json accuracy;  // the preset's published accuracy for --json (null: none applies)
};

Prepared prepare(const SimArgs& a) {
  Problem p = load_problem(a.problem);
  nlohmann::json accuracy;
  if (const auto note = fill_interconnects(p.system, a.problem.preset, a.problem.sharp, a.problem.nccl_version,
                                           a.problem.nccl_tuner, &accuracy);
      !note.empty() && !a.json)
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
  const auto given = given_programs(a);
  o.list = a.json && a.top_given && given.empty() ? a.top : -1;  // --json: all unless --top given
  if (!given.empty() && o.model == sim::SimModel::Graph &&
      (!a.svg_topology.empty() || !a.svg_ranking.empty() || !a.measured_programs.empty()))
    throw Error("--program/--program-file price programs; draw or compare them with a full ranking (without them)");
  o.program_steps = a.json;
  o.best_steps = a.steps;
  o.links = a.links;
  o.measurements = a.measurements;
  o.measured_programs = a.measured_programs;
  o.svg_topology = !a.svg_topology.empty();
  o.svg_ranking = !a.svg_ranking.empty();
  o.svg_program = a.svg_program;
  return {std::move(p), std::move(o), given, std::move(accuracy)};
}

// Loads the problem and ranks it; writes the pictures asked for.
sim::SimulateRun run(const SimArgs& a, nlohmann::json* accuracy = nullptr) {
  const auto [p, o, given, acc] = prepare(a);
  if (accuracy) *accuracy = acc;
  auto r = sim::simulate(p.system, p.axes, p.reduce, p.matrices, o);
  if (!given.empty()) keep_given(r.report, given, a.search.max_size);
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

// Several sizes (--bytes 1K,1M / 1K:8G:x2 / -b -e -f): one row per size and the crossover table.
int sweep(SimArgs a, const std::vector<double>& sizes) {
  for (const auto& [given, name] : {std::pair{!a.svg_topology.empty(), "--svg-topology"},
                                    {!a.svg_ranking.empty(), "--svg-ranking"},
                                    {!a.measurements.empty(), "--measurements"},
                                    {!a.measured_programs.empty(), "--measured-programs"},
                                    {a.steps, "--steps"},
                                    {!a.programs.empty(), "--program"},
                                    {!a.program_file.empty(), "--program-file"}})
    if (given) throw Error(fmt::format("{} shows one size: give a single --bytes with it, not a sweep", name));
  a.cost.bytes.clear();  // each size in turn, below
  const auto prep = prepare(a);
  const auto& p = prep.problem;
  return simulate_sweep(p.system, p.axes, p.reduce, p.matrices, prep.options, sizes,
                        {a.json, a.progress, prep.accuracy});
}

Registrar reg("simulate", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<SimArgs>();
  add_options(sub, *a);
  const CLI::Option* top = sub.get_option("--top");
  return [a, top] {
    a->top_given = top->count() > 0;
    if (const auto sizes = sweep_sizes(a->cost.bytes, a->sweep); sizes.size() > 1 || a->sweep.given())
      return sweep(*a, sizes);
    nlohmann::json accuracy;
    const auto r = run(*a, &accuracy);
    if (a->json) {
      nlohmann::json j = sim::to_json(r.report);
      add_accuracy(j, accuracy);
      fmt::print("{}\n", j.dump(2));
    } else
      print_table(*a, r.report);
    return 0;
  };
});

}  // namespace
}  // namespace p2v::tools
