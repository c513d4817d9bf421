#include "p2v/sim/simulate.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/programs.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/text_util.hpp"
#include "p2v/sim/calibrate.hpp"
#include "p2v/sim/levels.hpp"
#include "p2v/sim/rank.hpp"
#include "p2v/sim/svg.hpp"

namespace p2v::sim {

using namespace engine;
using nlohmann::json;

SimModel choose_model(const std::string& name, const System& s) {
  if (name != "auto" && name != "graph" && name != "levels")
    throw Error("--model: expected graph, levels or auto, got '" + name + "'");
  if (name == "levels" || (name == "auto" && !s.has_topology() && s.num_devices() > 2048)) return SimModel::Levels;
  return SimModel::Graph;
}

std::size_t SimulateReport::best_matrix() const {
  std::size_t b = 0;
  for (std::size_t i = 1; i < results.size(); ++i)
    if (results[i].best_s() < results[b].best_s()) b = i;
  return b;
}

namespace {

bool wants_steps(const SimulateOptions& opt, std::size_t rank0) {
  return opt.program_steps || (opt.best_steps && rank0 == 0);
}

// The fields of a matrix record both models fill the same way.
template <class Program>
void fill_programs(MatrixRecord& rec, const std::vector<Program>& programs, const SimulateOptions& opt) {
  rec.num_programs = static_cast<std::int64_t>(programs.size());
  if (!programs.empty()) rec.best = BestRecord{programs.front().name, programs.front().time_s};
  rec.speedup = rec.allreduce_s / rec.best_s();
  for (std::size_t i = 0; i < programs.size() && (opt.list < 0 || static_cast<int>(i) < opt.list); ++i)
    rec.programs.push_back({static_cast<int>(i) + 1,
                            programs[i].name,
                            programs[i].time_s,
                            rec.allreduce_s / programs[i].time_s,
                            std::nullopt,
                            {}});
}

SimulateReport report_head(const System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                           const SimulateOptions& opt) {
  SimulateReport r;
  r.system = system;
  r.axes = axes;
  r.reduce = reduce;
  r.algo = opt.algo;
  r.bytes = opt.cost.bytes;
  r.model = opt.model;
  return r;
}

// ---- the level model (docs/shape.md §7): programs from engine::ProgramSource (the placement's
// shape, once per shape, or the system where the shape theorem is not proved), costed on the shape.

struct LevelRanked {
  std::string name;
  double time_s;
  std::vector<Collective> cs;
  std::vector<GroupPattern> gs;
};

SimulateRun simulate_levels(const System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                            const std::vector<ParallelismMatrix>& matrices, const SimulateOptions& opt) {
  const LevelSimulator lv(system);
  ProgramSource source(system, axes, {HierarchyKind::ReductionAxes, opt.synth, false});
  SimulateRun run{report_head(system, axes, reduce, opt), {}, {}};
  for (const auto& x : matrices) {
    const PlacementPrograms pp = source.programs_for(x, reduce);
    const Shape& shape = *pp.shape;
    const auto& r = *pp.result;
    MatrixRecord rec;
    rec.matrix = x;
    rec.shape = shape.signature();
    rec.allreduce_s = lv.allreduce_time(shape, opt.cost);
    std::vector<LevelRanked> ranked;
    for (const auto& prog : r.programs) {
      LevelRanked rk{program_name(r, prog), 0, {}, pp.patterns(prog)};
      for (int i : prog) rk.cs.push_back(r.instructions[static_cast<std::size_t>(i)].collective);
      rk.time_s = lv.simulate(shape, rk.cs, rk.gs, opt.cost).time_s;
      ranked.push_back(std::move(rk));
    }
    auto key = [](double t) { return std::round(t * 1e12); };
    std::stable_sort(ranked.begin(), ranked.end(),
                     [&](const LevelRanked& u, const LevelRanked& v) { return key(u.time_s) < key(v.time_s); });
    fill_programs(rec, ranked, opt);
    for (std::size_t i = 0; i < rec.programs.size(); ++i)
      if (wants_steps(opt, i))
        rec.programs[i].steps = step_records(lv.simulate(shape, ranked[i].cs, ranked[i].gs, opt.cost));
    run.report.results.push_back(std::move(rec));
  }
  return run;
}

// ---- the graph model

std::vector<std::string> step_labels(const std::string& notation) {
  std::vector<std::string> labels;
  std::size_t pos = 0;
  while (true) {
    const auto q = notation.find(" ; ", pos);
    labels.push_back(notation.substr(pos, q == std::string::npos ? std::string::npos : q - pos));
    if (q == std::string::npos) return labels;
    pos = q + 3;
  }
}

// Pictures of matrix `mr` (the best one, or the one with the most measured programs).
void draw(SimulateRun& run, const Simulator& simulator, const Placement& pl, const MatrixRanking& mr,
          const RankAccuracy* acc, const SimulateOptions& opt, const CostOptions& cost) {
  const auto& rep = run.report;
  const std::string title =
      fmt::format("{} — matrix {}, reduce [{}], {} per device, {}", rep.system.name, format_matrix_brackets(mr.matrix),
                  fmt::join(rep.reduce, " "), format_bytes(rep.bytes), rep.algo);
  if (opt.svg_topology) {
    const bool single = opt.svg_program == 0;
    const RankedProgram* chosen = single ? nullptr : &mr.programs[static_cast<std::size_t>(opt.svg_program - 1)];
    const LoweredProgram prog = single ? single_allreduce(pl.reduction_groups()) : chosen->lowered;
    const auto pc = simulator.simulate(prog, cost);
    const auto labels =
        single ? std::vector<std::string>{"single AllReduce over the reduction groups"} : step_labels(chosen->name);
    const std::string what = single ? std::string("single AllReduce") : fmt::format("program #{}", opt.svg_program);
    run.topology_svg = topology_svg(simulator.topology(), prog, &pc,
                                    fmt::format("{} ({}): {}", what, format_seconds(pc.time_s), title), labels);
  }
  if (opt.svg_ranking) {
    std::vector<RankPoint> pts;
    for (std::size_t i = 0; i < mr.programs.size(); ++i)
      pts.push_back({mr.programs[i].name, mr.programs[i].time_s, acc ? acc->measured_s[i] : -1.0});
    run.ranking_svg = ranking_svg(pts, mr.allreduce_s, "predicted time per program: " + title);
  }
}

MatrixRecord graph_record(const Simulator& simulator, const Placement& pl, const MatrixRanking& mr,
                          const RankAccuracy* acc, const SimulateOptions& opt, const CostOptions& cost) {
  MatrixRecord rec;
  rec.matrix = mr.matrix;
  rec.allreduce_s = mr.allreduce_s;
  rec.truncated = mr.truncated;
  if (opt.program_steps || opt.best_steps)
    rec.allreduce_steps = step_records(simulator.topology(),
                                       simulator.simulate(single_allreduce(pl.reduction_groups()), cost), opt.links);
  fill_programs(rec, mr.programs, opt);
  if (acc)
    rec.measured =
        MeasuredRecord{acc->measured, acc->unmatched,         acc->best_measured, acc->predicted_rank_of_best,
                       acc->spearman, acc->mean_abs_rel_error};
  for (std::size_t i = 0; i < rec.programs.size(); ++i) {
    if (acc && acc->measured_s[i] > 0) rec.programs[i].measured_s = acc->measured_s[i];
    if (wants_steps(opt, i))
      rec.programs[i].steps =
          step_records(simulator.topology(), simulator.simulate(mr.programs[i].lowered, cost), opt.links);
  }
  return rec;
}

MeasurementsRecord measurements_record(const Simulator& simulator, const std::string& file, Algorithm algo) {
  const auto ms = load_measurements(file, simulator.topology().num_devices());
  const auto ps = predict(simulator, ms, algo);
  MeasurementsRecord m{file, {}, mean_abs_rel_error(ps)};
  for (std::size_t i = 0; i < ms.size(); ++i)
    m.rows.push_back({ms[i].line, ms[i].step.collective, ms[i].groups_text, ms[i].bytes, ps[i].measured_s,
                      ps[i].predicted_s, ps[i].rel_error});
  return m;
}

SimulateRun simulate_graph(const System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                           const std::vector<ParallelismMatrix>& matrices, const SimulateOptions& opt) {
  const Simulator simulator(system);
  ProgramSource source(system, axes, {HierarchyKind::ReductionAxes, opt.synth, false});
  auto placement = [&](const ParallelismMatrix& x) { return Placement(system.cardinalities(), axes, x, reduce); };
  std::vector<MatrixRanking> ranks;
  for (const auto& x : matrices) ranks.push_back(rank_placement(simulator, source, placement(x), opt.cost));
  std::vector<RankAccuracy> accs;
  if (!opt.measured_programs.empty()) {
    const auto pm = load_program_measurements(opt.measured_programs);
    if (ranks.size() > 1)
      for (const auto& m : pm)
        if (m.matrix.empty())
          throw Error(fmt::format("{}:{}: several matrices are ranked; give a matrix column or --matrix",
                                  opt.measured_programs, m.line));
    for (const auto& mr : ranks) accs.push_back(rank_accuracy(mr, pm));
  }
  std::size_t best_m = 0;
  for (std::size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i].best_s() < ranks[best_m].best_s()) best_m = i;
  // Pictures show the best matrix, or the one with the most measured programs.
  std::size_t pm = best_m;
  for (std::size_t i = 0; i < accs.size(); ++i)
    if (accs[i].measured > accs[pm].measured) pm = i;
  if (opt.svg_topology && !ranks.empty() &&
      (opt.svg_program < 0 || opt.svg_program > static_cast<int>(ranks[pm].programs.size())))
    throw Error(fmt::format("--svg-program {}: matrix {} has {} ranked programs (0 = the single AllReduce)",
                            opt.svg_program, format_matrix_brackets(ranks[pm].matrix), ranks[pm].programs.size()));
  CostOptions cost = opt.cost;
  cost.breakdown = true;
  SimulateRun run{report_head(system, axes, reduce, opt), {}, {}};
  for (std::size_t i = 0; i < ranks.size(); ++i)
    run.report.results.push_back(
        graph_record(simulator, placement(ranks[i].matrix), ranks[i], accs.empty() ? nullptr : &accs[i], opt, cost));
  if (!opt.measurements.empty())
    run.report.measurements = measurements_record(simulator, opt.measurements, opt.cost.algo);
  if (!ranks.empty() && (opt.svg_topology || opt.svg_ranking))
    draw(run, simulator, placement(ranks[pm].matrix), ranks[pm], accs.empty() ? nullptr : &accs[pm], opt, cost);
  return run;
}

}  // namespace

SimulateRun simulate(const System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                     const std::vector<ParallelismMatrix>& matrices, const SimulateOptions& opt) {
  return opt.model == SimModel::Levels ? simulate_levels(system, axes, reduce, matrices, opt)
                                       : simulate_graph(system, axes, reduce, matrices, opt);
}

// ---- the format

namespace {

json steps_json(const std::vector<StepRecord>& steps, SimModel m) {
  json a = json::array();
  for (const auto& s : steps) a.push_back(to_json(s, m));
  return a;
}

json matrix_json(const MatrixRecord& rec, SimModel m) {
  json r{{"matrix", rec.matrix},
         {"allreduce_s", rec.allreduce_s},
         {"speedup", rec.speedup},
         {"num_programs", rec.num_programs},
         {"best", rec.best ? json{{"program", rec.best->program}, {"time_s", rec.best->time_s}} : json(nullptr)},
         {"programs", json::array()}};
  if (m == SimModel::Levels) {
    r["shape"] = rec.shape;
  } else {
    r["allreduce_steps"] = steps_json(rec.allreduce_steps, m);
    r["truncated"] = rec.truncated;
  }
  if (rec.measured)
    r["measured"] = {{"programs", rec.measured->programs},
                     {"unmatched_rows", rec.measured->unmatched_rows},
                     {"best_measured", rec.measured->best_measured},
                     {"predicted_rank_of_best", rec.measured->predicted_rank_of_best},
                     {"spearman", rec.measured->spearman},
                     {"mean_abs_rel_error", rec.measured->mean_abs_rel_error}};
  for (const auto& p : rec.programs) {
    json pj{{"rank", p.rank},
            {"program", p.program},
            {"time_s", p.time_s},
            {"speedup", p.speedup},
            {"steps", steps_json(p.steps, m)}};
    if (p.measured_s) pj["measured_s"] = *p.measured_s;
    r["programs"].push_back(std::move(pj));
  }
  return r;
}

}  // namespace

json to_json(const SimulateReport& r) {
  json out{{"format", fmt::format("{}/{}", kSimulateFormat, r.version)},
           {"model", to_string(r.model)},
           {"system", engine::system_json(r.system)},
           {"axes", r.axes},
           {"reduce", r.reduce},
           {"algo", r.algo},
           {"bytes", r.bytes},
           {"results", json::array()}};
  for (const auto& rec : r.results) out["results"].push_back(matrix_json(rec, r.model));
  if (r.measurements) {
    json rows = json::array();
    for (const auto& m : r.measurements->rows)
      rows.push_back({{"line", m.line},
                      {"collective", to_string(m.collective)},
                      {"groups", m.groups},
                      {"bytes", m.bytes},
                      {"measured_s", m.measured_s},
                      {"predicted_s", m.predicted_s},
                      {"rel_error", m.rel_error}});
    out["measurements"] = {{"file", r.measurements->file},
                           {"rows", std::move(rows)},
                           {"mean_abs_rel_error", r.measurements->mean_abs_rel_error}};
  }
  return out;
}

namespace {

using engine::json_read::At;
using engine::json_read::Object;

std::vector<StepRecord> steps_from_json(const At& at, SimModel m) {
  std::vector<StepRecord> out;
  at.each([&](const At& s) { out.push_back(step_record_from_json(s, m)); });
  return out;
}

MeasuredRecord measured_from_json(const At& at) {
  Object o(at);
  MeasuredRecord m{o["programs"].int32(),       o["unmatched_rows"].int32(),
                   o["best_measured"].string(), o["predicted_rank_of_best"].int32(),
                   o["spearman"].number(),      o["mean_abs_rel_error"].number()};
  o.finish();
  return m;
}

ProgramRecord program_from_json(const At& at, SimModel m) {
  Object o(at);
  ProgramRecord p;
  p.rank = o["rank"].int32();
  p.program = o["program"].string();
  p.time_s = o["time_s"].number();
  p.speedup = o["speedup"].number();
  if (const auto v = o.optional("measured_s")) p.measured_s = v->number();
  p.steps = steps_from_json(o["steps"], m);
  o.finish();
  return p;
}

MatrixRecord matrix_from_json(const At& at, SimModel m) {
  Object o(at);
  MatrixRecord r;
  r.matrix = o["matrix"].int_rows();
  r.allreduce_s = o["allreduce_s"].number();
  r.speedup = o["speedup"].number();
  r.num_programs = o["num_programs"].integer();
  if (const auto b = o["best"]; !b.is_null()) {
    Object bo(b);
    r.best = BestRecord{bo["program"].string(), bo["time_s"].number()};
    bo.finish();
  }
  if (m == SimModel::Levels) {
    r.shape = o["shape"].string();
  } else {
    r.allreduce_steps = steps_from_json(o["allreduce_steps"], m);
    r.truncated = o["truncated"].boolean();
    if (const auto v = o.optional("measured")) r.measured = measured_from_json(*v);
  }
  o["programs"].each([&](const At& p) { r.programs.push_back(program_from_json(p, m)); });
  o.finish();
  return r;
}

MeasurementsRecord measurements_from_json(const At& at) {
  Object o(at);
  MeasurementsRecord m;
  m.file = o["file"].string();
  o["rows"].each([&](const At& row) {
    Object ro(row);
    m.rows.push_back({ro["line"].int32(), engine::json_read::collective(ro["collective"]), ro["groups"].string(),
                      ro["bytes"].number(), ro["measured_s"].number(), ro["predicted_s"].number(),
                      ro["rel_error"].number()});
    ro.finish();
  });
  m.mean_abs_rel_error = o["mean_abs_rel_error"].number();
  o.finish();
  return m;
}

}  // namespace

SimulateReport simulate_report_from_json(const json& j, const std::string& origin) {
  const At root(j, origin, "");
  Object o(root);
  engine::json_read::check_format(o, kSimulateFormat, kSimulateVersion);
  SimulateReport r;
  const At model = o["model"];
  const std::string name = model.string();
  if (name != "graph" && name != "levels") model.fail(fmt::format("expected graph or levels, got \"{}\"", name));
  r.model = name == "graph" ? SimModel::Graph : SimModel::Levels;
  const At system = o["system"];
  system.expect(system.raw().is_object(), "a system object");
  r.system = system_from_json(system.raw(), origin + ": system");
  r.axes = o["axes"].ints();
  r.reduce = o["reduce"].ints();
  const At algo = o["algo"];
  r.algo = algo.string();
  try {
    (void)parse_algorithm(r.algo);
  } catch (const Error&) {
    algo.fail(fmt::format("expected ring, tree, auto, nvls, nvls-tree or collnet, got \"{}\"", r.algo));
  }
  r.bytes = o["bytes"].number();
  o["results"].each([&](const At& m) { r.results.push_back(matrix_from_json(m, r.model)); });
  if (r.model == SimModel::Graph)
    if (const auto m = o.optional("measurements")) r.measurements = measurements_from_json(*m);
  // What the command adds beside the report (tools: the preset's published accuracy, written from
  // sim::accuracy_json); informative, not part of the report.
  if (const auto acc = o.optional("accuracy")) acc->expect(acc->raw().is_object(), "an object");
  o.finish();
  return r;
}

SimulateReport parse_simulate_report(const std::string& text, const std::string& origin) {
  return simulate_report_from_json(parse_json_object(text, origin), origin);
}

SimulateReport load_simulate_report(const std::string& path) {
  return parse_simulate_report(engine::read_text_file(path, "simulate report"), path);
}

bool same_report(const SimulateReport& a, const SimulateReport& b) {
  return a.version == b.version && system_to_json(a.system) == system_to_json(b.system) && a.axes == b.axes &&
         a.reduce == b.reduce && a.algo == b.algo && a.bytes == b.bytes && a.model == b.model &&
         a.results == b.results && a.measurements == b.measurements;
}

}  // namespace p2v::sim
