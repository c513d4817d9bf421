// p2v step: one training step (forward, backward, gradient sync in buckets) simulated on every
// placement, with the DDP default schedule and the chosen buckets and programs (docs/step.md).
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"
#include "infer_matrix.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/sim/report.hpp"
#include "p2v/sim/step_plan.hpp"
#include "sweep_sim.hpp"

namespace p2v::tools {
namespace {

namespace st = sim::step;

struct StepArgs {
  ProblemArgs problem;
  SearchArgs search;
  std::string model, program, mode = "ddp", algo = "auto", svg, preset_note;
  nlohmann::json accuracy;  // the preset's published accuracy for --json (fill_interconnects; null: none)
  double bucket_mb = 25, measured_step_ms = 0;
  std::string throughput;
  int candidates = 8, units = 64, batch = 0, measured_gpus = 1;
  bool json = false, no_choose = false;
  std::string buckets;  // --buckets SIZES: a sweep of the bucket cap (sweep_sim.cpp)
  ProgressArgs progress;
};

void add_options(CLI::App& sub, StepArgs& a) {
  sub.add_option("--model", a.model, "model file (examples/models/*.json)")->required();
  add_problem_options(sub, a.problem, /*need_reduce=*/false, /*sharp=*/true);
  add_search_options(sub, a.search, /*with_hierarchy=*/false);
  sub.add_option("--program", a.program,
                 "the program of the fixed schedule, as `p2v simulate` names it (default: one AllReduce; ZeRO: "
                 "ReduceScatter ; AllGather over the reduction groups)");
  sub.add_option("--bucket-mb", a.bucket_mb, "DDP bucket cap, MB (10^6 bytes) per device")->capture_default_str();
  sub.add_option("--mode", a.mode,
                 "ddp (AllReduce of gradients) or zero (ZeRO/FSDP: ReduceScatter of gradients, "
                 "AllGather of parameters before the forward pass)")
      ->capture_default_str();
  sub.add_option("--algo", a.algo, "NCCL algorithm of the simulator: auto, ring, tree, nvls or collnet")
      ->capture_default_str();
  sub.add_option("--candidates", a.candidates,
                 "programs considered per bucket when choosing: the default and the "
                 "N fastest at the bucket cap")
      ->capture_default_str();
  sub.add_option("--units", a.units, "candidate bucket boundaries: layers merged into at most this many units")
      ->capture_default_str();
  sub.add_option("--batch", a.batch, "per-device batch (default: the model file's); FLOPs scale linearly");
  sub.add_option("--measured-step-ms", a.measured_step_ms,
                 "a measured step time of one device (forward + backward of its batch, ms): fits the compute "
                 "speed to it and reports the efficiency");
  sub.add_option("--measured-gpus", a.measured_gpus,
                 "devices --measured-step-ms ran on, data-parallel in one node of the system (default 1); the fit "
                 "then counts that node's exposed communication")
      ->capture_default_str();
  sub.add_option("--throughput", a.throughput,
                 "fit the compute speed to one of the model file's published throughputs (its id)");
  sub.add_flag("--no-choose", a.no_choose, "only the fixed schedule (no bucket/program choice)");
  sub.add_flag("--json", a.json, "machine-readable output");
  sub.add_option("--svg", a.svg, "write a Gantt chart of the reported placement's step");
  sub.add_option("--buckets", a.buckets,
                 "sweep the bucket cap instead of --bucket-mb: sizes per device, a list (5MB,25MB,100MB) or a range "
                 "(1M:256M:x2); one row per cap and the crossover of the chosen programs");
  add_progress_options(sub, a.progress);
}

struct StepCommand {
  st::Model model;
  Problem problem;
  st::StepOptions opt;
  st::StepRun run;
};

StepCommand run(StepArgs& a) {
  if (a.mode != "ddp" && a.mode != "zero") throw Error(fmt::format("--mode '{}': expected ddp or zero", a.mode));
  if (!(a.bucket_mb > 0)) throw Error(fmt::format("--bucket-mb {}: must be positive", a.bucket_mb));
  if (a.candidates < 0 || a.units < 1) throw Error("--candidates must be >= 0 and --units >= 1");
  if (a.batch < 0) throw Error(fmt::format("--batch {}: must be positive", a.batch));
  if (!(a.measured_step_ms >= 0) || !std::isfinite(a.measured_step_ms))
    throw Error(fmt::format("--measured-step-ms {}: must be a positive number of milliseconds", a.measured_step_ms));
  if (a.measured_step_ms > 0 && !a.throughput.empty()) throw Error("give --measured-step-ms or --throughput, not both");
  StepCommand c;
  c.model = st::load_model_file(a.model);
  if (a.problem.reduce.empty()) {  // default: every axis is data-parallel
    const auto n = engine::parse_int_list(a.problem.axes, "--axes").size();
    for (std::size_t i = 0; i < n; ++i) a.problem.reduce += (i ? "," : "") + std::to_string(i);
  }
  c.problem = load_problem(a.problem);
  if (!a.program.empty())  // the placements the program fits (tools::matrices_fitting), as simulate --program
    c.problem.matrices = matrices_fitting(
        c.problem, {"--program '" + a.program + "'", "is not a program of", [&](const engine::ParallelismMatrix& x) {
                      return program_fits(c.problem, x, a.program, engine::HierarchyKind::ReductionAxes);
                    }});
  a.preset_note = fill_interconnects(c.problem.system, a.problem.preset, a.problem.sharp, a.problem.nccl_version,
                                     a.problem.nccl_tuner, &a.accuracy);
  c.opt.synth = a.search.options();
  c.opt.zero = a.mode == "zero";
  c.opt.program = a.program;
  c.opt.bucket_mb = a.bucket_mb;
  c.opt.candidates = a.candidates;
  c.opt.units = a.units;
  c.opt.choose = !a.no_choose;
  c.opt.algo = sim::parse_algorithm(a.algo);
  c.opt.batch = a.batch;
  c.opt.measured_step_s = a.measured_step_ms * 1e-3;
  c.opt.throughput = a.throughput;
  if (a.measured_gpus < 1) throw Error(fmt::format("--measured-gpus {}: must be positive", a.measured_gpus));
  if (a.measured_gpus > 1 && !(a.measured_step_ms > 0))
    throw Error("--measured-gpus goes with --measured-step-ms (a --throughput entry gives its own)");
  c.opt.measured_gpus = a.measured_gpus;
  const auto& p = c.problem;
  c.run = st::plan_step(c.model, p.system, p.axes, p.reduce, p.matrices, c.opt);
  const auto& br = c.run.placements[c.run.best];
  if (!a.svg.empty())
    write_file(a.svg, st::step_svg(br.has_chosen ? br.chosen : br.fixed, br.has_chosen ? &br.fixed : nullptr, br.names,
                                   fmt::format("{} on {} ({}), matrix {}", c.model.name, p.system.name, a.mode,
                                               engine::format_matrix_brackets(br.matrix))));
  return c;
}

void print_schedule(const char* what, const st::StepResult& r, const std::vector<std::string>& names,
                    const st::Model& m) {
  fmt::print("\n{}: step {}  compute {} (forward {}, backward {})  sync {}  exposed {}  AutoSync max() {}\n", what,
             sim::format_seconds(r.step_s), sim::format_seconds(r.compute_s), sim::format_seconds(r.fwd_s),
             sim::format_seconds(r.bwd_s), sim::format_seconds(r.sync_s), sim::format_seconds(r.exposed_comm_s),
             sim::format_seconds(r.autosync_s));
  fmt::print("  {:>3}  {:>10}  {:>11} {:>11} {:>11}  {:<32}  {}\n", "#", "bytes", "ready", "start", "sync", "layers",
             "program");
  for (std::size_t i = 0; i < r.buckets.size(); ++i) {
    const auto& b = r.buckets[i];
    const std::string layers = fmt::format("{}..{}", m.layers[static_cast<std::size_t>(b.first)].name,
                                           m.layers[static_cast<std::size_t>(b.last)].name);
    fmt::print("  {:>3}  {:>10}  {:>11} {:>11} {:>11}  {:<32}  {}\n", i, sim::format_bytes(b.bytes),
               sim::format_seconds(b.ready_s), sim::format_seconds(b.start_s), sim::format_seconds(b.sync_s()),
               layers.size() > 32 ? layers.substr(0, 29) + "..." : layers, names[static_cast<std::size_t>(b.program)]);
  }
}

void print_table(const StepArgs& a, const StepCommand& c) {
  const auto& run = c.run;
  fmt::print("model {} ({} parameters, {} layers) on {}: mode {}, data-parallel {} x model-parallel {}, algo {}\n",
             c.model.name, c.model.total_params(), c.model.layers.size(), c.problem.system.name, a.mode,
             run.data_parallel, run.model_parallel, a.algo);
  if (!a.preset_note.empty()) fmt::print("{}\n", a.preset_note);
  const auto& f = run.compute;
  fmt::print("compute: {} per device step (forward + backward, batch {}) from {}", sim::format_seconds(f.step_s),
             f.batch, run.compute_basis);
  if (f.flops_per_s > 0)
    fmt::print("; {:.1f} TFLOP/s{}", f.flops_per_s / 1e12,
               f.efficiency > 0 ? fmt::format(" = efficiency {:.3f} of the device's peak", f.efficiency) : "");
  fmt::print("\n");
  if (!f.fitted && !c.model.throughput.empty()) {
    std::string ids;
    for (const auto& t : c.model.throughput) ids += (ids.empty() ? "" : ", ") + t.id;
    fmt::print("  (the device's efficiency is an assumption; published numbers for this model: --throughput {})\n",
               ids);
  }
  const std::string fixed_name = a.program.empty() ? (c.opt.zero ? "ZeRO default" : "DDP default") : "--program";
  fmt::print("fixed schedule: {} MB buckets, {}\n\n", a.bucket_mb, fixed_name);
  std::size_t mw = 6;
  for (const auto& r : run.placements) mw = std::max(mw, engine::format_matrix_brackets(r.matrix).size());
  fmt::print("  {:<{}} {:>11} {:>11} {:>7} {:>8}\n", "matrix", mw, "fixed", "chosen", "gain", "buckets");
  for (std::size_t i = 0; i < run.placements.size(); ++i) {
    const auto& r = run.placements[i];
    fmt::print("  {:<{}} {:>11} {:>11} {:>6.3f}x {:>8}{}\n", engine::format_matrix_brackets(r.matrix), mw,
               sim::format_seconds(r.fixed.step_s), r.has_chosen ? sim::format_seconds(r.chosen.step_s) : "-",
               r.has_chosen ? r.fixed.step_s / r.chosen.step_s : 1.0,
               r.has_chosen ? r.chosen.buckets.size() : r.fixed.buckets.size(),
               i == run.best && run.placements.size() > 1 ? "   <- best placement" : "");
  }
  const auto& br = run.placements[run.best];
  fmt::print("\nmatrix {}\n", engine::format_matrix_brackets(br.matrix));
  print_schedule("fixed schedule", br.fixed, br.names, c.model);
  if (br.has_chosen)
    print_schedule(
        br.chosen_is_fixed ? "chosen schedule (the fixed one: the DP found nothing faster)" : "chosen schedule",
        br.chosen, br.names, c.model);
}

// --buckets: the step at each bucket cap (the best placement's fixed and chosen schedules).
int sweep(StepArgs& a, bool bucket_mb_given) {
  if (bucket_mb_given) throw Error("give --bucket-mb (one cap) or --buckets (a sweep), not both");
  if (!a.svg.empty()) throw Error("--svg draws one step: give one --bucket-mb with it, not --buckets");
  const std::vector<double> caps = engine::parse_sizes(a.buckets, "--buckets", 1e13);
  const auto model = st::load_model_file(a.model);
  StepSweepInfo info;
  const auto one = [&](double cap) {
    a.bucket_mb = cap / 1e6;
    const auto c = run(a);
    info.several = c.run.placements.size() > 1;
    if (info.head.is_null()) {
      info.head = {{"model", c.model.name},  {"system", engine::system_json(c.problem.system)},
                   {"axes", c.problem.axes}, {"reduce", c.problem.reduce},
                   {"mode", a.mode},         {"algo", a.algo}};
      add_accuracy(info.head, a.accuracy);  // set by run (fill_interconnects)
    }
    const auto& br = c.run.placements[c.run.best];
    const auto& rep = br.has_chosen ? br.chosen : br.fixed;
    StepSweepRow row;
    row.matrix = engine::format_matrix_brackets(br.matrix);
    row.fixed_s = br.fixed.step_s;
    row.chosen_s = rep.step_s;
    row.exposed_s = rep.exposed_comm_s;
    row.buckets = br.fixed.buckets.size();
    std::vector<std::string> used;
    for (const auto& b : rep.buckets) {
      const auto& name = br.names[static_cast<std::size_t>(b.program)];
      if (std::find(used.begin(), used.end(), name) == used.end()) used.push_back(name);
    }
    row.programs = fmt::format("{}", fmt::join(used, " | "));
    row.json = {{"best_matrix", br.matrix},
                {"fixed_step_s", row.fixed_s},
                {"chosen_step_s", row.chosen_s},
                {"exposed_comm_s", row.exposed_s},
                {"compute_s", rep.compute_s},
                {"fixed_buckets", row.buckets},
                {"chosen_buckets", rep.buckets.size()},
                {"chosen_programs", used}};
    return row;
  };
  info.header = fmt::format(
      "model {} on {}: mode {}, algo {}; bucket cap per device: {}; per cap the best placement's fixed "
      "schedule ({}) and chosen schedule\n\n",
      model.name, a.problem.system, a.mode, a.algo,
      caps.size() == 1 ? engine::format_size(caps.front())
                       : fmt::format("{} caps from {} to {}", caps.size(), engine::format_size(caps.front()),
                                     engine::format_size(caps.back())),
      a.program.empty() ? (a.mode == "zero" ? "ZeRO default" : "DDP default") : "--program");
  return step_sweep(caps, one, info, {a.json, a.progress, {}});  // accuracy: in info.head
}

Registrar reg("step", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<StepArgs>();
  add_options(sub, *a);
  const CLI::Option* bucket_mb = sub.get_option("--bucket-mb");
  return [a, bucket_mb] {
    if (!a->buckets.empty()) return sweep(*a, bucket_mb->count() > 0);
    const auto c = run(*a);
    if (a->json) {
      nlohmann::json j =
          st::to_json(st::make_report(c.model, c.problem.system, c.problem.axes, c.problem.reduce, c.opt, c.run));
      add_accuracy(j, a->accuracy);
      fmt::print("{}\n", j.dump(2));
    } else
      print_table(*a, c);
    return 0;
  };
});

}  // namespace
}  // namespace p2v::tools
