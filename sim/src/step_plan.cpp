// `p2v step` as a library call and its JSON format (docs/step.md; docs/formats.md "p2v step --json").
#include "p2v/sim/step_plan.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "p2v/engine/error.hpp"
#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/sim/rank.hpp"

namespace p2v::sim::step {

using namespace engine;
using nlohmann::json;

namespace {

// The candidate programs of one placement: [0] the mode's default, then the fastest at the bucket
// cap (ZeRO: those ending with AllGather), and --program wherever it ranks. Returns the index of
// the fixed schedule's program and the candidates of the choice.
std::pair<int, std::vector<int>> candidates(const MatrixRanking& rank, const Groups& groups, const StepOptions& opt,
                                            std::vector<LoweredProgram>& progs, std::vector<std::string>& names) {
  if (opt.zero) {
    progs.push_back({{Collective::ReduceScatter, groups}, {Collective::AllGather, groups}});
    names.push_back("ReduceScatter ; AllGather (ZeRO default)");
  } else {
    progs.push_back(single_allreduce(groups));
    names.push_back("AllReduce (DDP default)");
  }
  int fixed = 0;
  std::vector<int> cands{0};
  for (const auto& rp : rank.programs) {
    if (opt.zero && (rp.lowered.empty() || rp.lowered.back().collective != Collective::AllGather)) continue;
    const bool wanted = rp.name == opt.program;
    if (!wanted && static_cast<int>(cands.size()) > opt.candidates) continue;
    progs.push_back(rp.lowered);
    names.push_back(rp.name);
    const int idx = static_cast<int>(progs.size()) - 1;
    if (wanted) fixed = idx;
    if (static_cast<int>(cands.size()) <= opt.candidates) cands.push_back(idx);
  }
  if (!opt.program.empty() && fixed == 0)
    throw Error(fmt::format("--program '{}' is not a program of matrix {}{} (see p2v simulate --top -1 for the names)",
                            opt.program, format_matrix_brackets(rank.matrix),
                            opt.zero ? " ending with AllGather (--mode zero)" : ""));
  return {fixed, cands};
}

PlacementPlan plan_placement(const Simulator& simulator, ProgramSource& programs, const Placement& pl,
                             const std::vector<LayerCost>& lc, const StepOptions& opt, const CostOptions& copt) {
  const auto rank = rank_placement(simulator, programs, pl, copt);
  PlacementPlan pr;
  pr.matrix = rank.matrix;
  std::vector<LoweredProgram> progs;
  const auto [fixed, cands] = candidates(rank, pl.reduction_groups(), opt, progs, pr.names);
  SyncCosts costs(simulator, std::move(progs), copt.algo, opt.zero);
  const double cap = opt.bucket_mb * 1e6;
  const auto buckets = ddp_buckets(lc, cap);
  pr.fixed = simulate_step(lc, buckets, std::vector<int>(buckets.size(), fixed), costs, fixed);
  if (opt.choose) {
    ChooseOptions co;
    co.max_units = opt.units;
    co.programs = cands;
    const auto c = choose(lc, costs, cap, co);
    pr.chosen = simulate_step(lc, c.buckets, c.programs, costs, 0);
    // The fixed schedule is a candidate too: the DP's boundaries are restricted to units
    // (and, ZeRO, it ignores the gathers), so it can lose to the default.
    pr.chosen_is_fixed = pr.fixed.step_s <= pr.chosen.step_s;
    if (pr.chosen_is_fixed) pr.chosen = pr.fixed;
    pr.units = c.units;
    pr.has_chosen = true;
  }
  pr.evaluations = costs.evaluations();
  return pr;
}

// The compute-only step time that makes the DDP default step (one AllReduce per bucket) of
// `gpus` data-parallel devices take co.measured_step_s on one node of `system`: its innermost
// levels holding exactly `gpus` devices. The step is continuous and non-decreasing in the compute
// time, so bisection finds it.
double fit_on_node(const Model& model, const System& system, int gpus, const ComputeOptions& co,
                   const StepOptions& opt) {
  if (system.has_topology())
    throw Error(
        fmt::format("system '{}' has a \"topology\" section: a step measured on {} devices can be fitted "
                    "on level systems only",
                    system.name, gpus));
  System node = system;
  std::int64_t held = 1;
  int l = static_cast<int>(node.levels.size()) - 1;
  for (; l >= 0 && held < gpus; --l) held *= node.levels[static_cast<std::size_t>(l)].cardinality;
  if (held != gpus)
    throw Error(
        fmt::format("a step measured on {} devices is fitted on one node of system '{}', but its innermost "
                    "levels hold {} devices, not {}: give a system whose node matches the measurement",
                    gpus, system.name, held, gpus));
  for (int k = 0; k <= l; ++k) node.levels[static_cast<std::size_t>(k)].cardinality = 1;
  const Simulator simulator(node);
  const std::vector<int> axes{gpus}, reduce{0};
  const Placement pl(node.cardinalities(), axes, enumerate_matrices(node.cardinalities(), axes).at(0), reduce);
  SyncCosts costs(simulator, {single_allreduce(pl.reduction_groups())}, opt.algo, false);
  const auto lc = layer_costs(model, node, gpus, 1, false, co);  // compute alone = the measurement
  const auto buckets = ddp_buckets(lc, opt.bucket_mb * 1e6);
  const std::vector<int> programs(buckets.size(), 0);
  auto step = [&](double scale) {
    auto l2 = lc;
    for (auto& c : l2) {
      c.fwd_s *= scale;
      c.bwd_s *= scale;
    }
    return simulate_step(l2, buckets, programs, costs, 0).step_s;
  };
  const double T = co.measured_step_s;
  if (step(0) >= T)
    throw Error(
        fmt::format("on one node of {} devices the gradient synchronisation alone is predicted to take {:.3f} "
                    "ms, not less than the measured step of {:.3f} ms: nothing is left for the compute",
                    gpus, step(0) * 1e3, T * 1e3));
  double lo = 0, hi = 1;  // step(1) >= T: the compute alone takes T
  for (int i = 0; i < 100 && hi - lo > 1e-12; ++i) {
    const double mid = (lo + hi) / 2;
    (step(mid) < T ? lo : hi) = mid;
  }
  return T * (lo + hi) / 2;
}

}  // namespace

StepRun plan_step(const Model& model, const System& system, const std::vector<int>& axes,
                  const std::vector<int>& reduce, const std::vector<ParallelismMatrix>& matrices,
                  const StepOptions& opt) {
  StepRun run;
  for (std::size_t i = 0; i < axes.size(); ++i)
    (std::find(reduce.begin(), reduce.end(), static_cast<int>(i)) != reduce.end() ? run.data_parallel
                                                                                  : run.model_parallel) *= axes[i];
  ComputeOptions co;
  co.batch = opt.batch;
  co.measured_step_s = opt.measured_step_s;
  int gpus = opt.measured_gpus;
  if (gpus < 1) throw Error("step: the measurement's device count must be positive");
  if (!opt.throughput.empty()) {
    if (opt.measured_step_s > 0) throw Error("give --measured-step-ms or --throughput, not both");
    const auto& t = model.find_throughput(opt.throughput);
    const int batch = opt.batch > 0 ? opt.batch : model.batch;
    if (batch < 1)
      throw Error(fmt::format("model '{}' gives no \"batch\": give --batch to use --throughput", model.name));
    co.measured_step_s = t.step_s() * batch / t.batch;
    gpus = t.gpus;
    run.compute_basis =
        fmt::format("throughput {} ({} {}, {} GPU{}, batch {}{}: {} samples/s; {})", t.id, t.device, t.precision,
                    t.gpus, t.gpus > 1 ? "s" : "", t.batch,
                    t.batch != batch ? fmt::format(", rescaled to batch {}", batch) : "", t.samples_per_s, t.source);
    // The fitted speed is one of this entry's device: an efficiency against another device's peak
    // means little, so say so where the report shows the basis.
    if (system.device && !system.device->name.empty() && system.device->name != t.device)
      run.compute_basis += fmt::format(
          "; NOTE: measured on {}, but the system's device is {} (its efficiency is against that device's peak)",
          t.device, system.device->name);
  } else if (opt.measured_step_s > 0) {
    run.compute_basis = fmt::format("--measured-step-ms {}", opt.measured_step_s * 1e3);
  }
  if (co.measured_step_s > 0 && gpus > 1) {
    const double T = co.measured_step_s;
    co.measured_step_s = fit_on_node(model, system, gpus, co, opt);
    run.compute_basis += fmt::format(
        "; measured on {} devices: the compute is fitted so that the simulated DDP step of one such node takes "
        "{:.3f} ms (compute {:.3f} ms + exposed communication)",
        gpus, T * 1e3, co.measured_step_s * 1e3);
  }
  const auto lc = layer_costs(model, system, run.data_parallel, run.model_parallel, opt.zero, co, &run.compute);
  if (run.compute_basis.empty())
    run.compute_basis = run.compute.flops > 0 ? "device numbers" : "the model's measured seconds";
  const Simulator simulator(system);
  CostOptions copt;
  copt.algo = opt.algo;
  copt.bytes = opt.bucket_mb * 1e6;
  copt.breakdown = false;
  ProgramSource programs(system, axes, {HierarchyKind::ReductionAxes, opt.synth, false});
  for (const auto& x : matrices)
    run.placements.push_back(
        plan_placement(simulator, programs, Placement(system.cardinalities(), axes, x, reduce), lc, opt, copt));
  for (std::size_t i = 1; i < run.placements.size(); ++i)
    if (run.placements[i].best() < run.placements[run.best].best()) run.best = i;
  return run;
}

// ---- the format

namespace {

ScheduleRecord schedule_record(const StepResult& r, const std::vector<std::string>& names, const Model& m) {
  ScheduleRecord s{r.step_s, r.compute_s, r.fwd_s, r.bwd_s, r.sync_s, r.exposed_comm_s, r.autosync_s, {}};
  for (const auto& b : r.buckets) {
    BucketRecord br{m.layers[static_cast<std::size_t>(b.first)].name,
                    m.layers[static_cast<std::size_t>(b.last)].name,
                    b.first,
                    b.last,
                    b.bytes,
                    names[static_cast<std::size_t>(b.program)],
                    b.ready_s,
                    b.start_s,
                    b.end_s,
                    b.sync_s(),
                    std::nullopt,
                    std::nullopt};
    if (b.gather_s() > 0) {
      br.gather_start_s = b.gather_start_s;
      br.gather_end_s = b.gather_end_s;
    }
    s.buckets.push_back(std::move(br));
  }
  return s;
}

json schedule_json(const ScheduleRecord& s) {
  json j{{"step_s", s.step_s},         {"compute_s", s.compute_s}, {"forward_s", s.forward_s},
         {"backward_s", s.backward_s}, {"sync_s", s.sync_s},       {"exposed_comm_s", s.exposed_comm_s},
         {"autosync_s", s.autosync_s}, {"buckets", json::array()}};
  for (const auto& b : s.buckets) {
    json bj{{"first_layer", b.first_layer},
            {"last_layer", b.last_layer},
            {"layers", {b.first, b.last}},
            {"bytes", b.bytes},
            {"program", b.program},
            {"ready_s", b.ready_s},
            {"start_s", b.start_s},
            {"end_s", b.end_s},
            {"sync_s", b.sync_s}};
    if (b.gather_start_s) bj["gather_start_s"] = *b.gather_start_s;
    if (b.gather_end_s) bj["gather_end_s"] = *b.gather_end_s;
    j["buckets"].push_back(std::move(bj));
  }
  return j;
}

using engine::json_read::At;
using engine::json_read::Object;

// Reads the schedule fields of `o` (the top level or "chosen"); the caller finishes `o`.
ScheduleRecord schedule_from_json(Object& o) {
  ScheduleRecord s{
      o["step_s"].number(), o["compute_s"].number(),      o["forward_s"].number(),  o["backward_s"].number(),
      o["sync_s"].number(), o["exposed_comm_s"].number(), o["autosync_s"].number(), {}};
  o["buckets"].each([&](const At& at) {
    Object b(at);
    BucketRecord br;
    br.first_layer = b["first_layer"].string();
    br.last_layer = b["last_layer"].string();
    const auto layers = b["layers"];
    const auto fl = layers.ints();
    if (fl.size() != 2) layers.fail("expected [first, last]");
    br.first = fl[0];
    br.last = fl[1];
    br.bytes = b["bytes"].number();
    br.program = b["program"].string();
    br.ready_s = b["ready_s"].number();
    br.start_s = b["start_s"].number();
    br.end_s = b["end_s"].number();
    br.sync_s = b["sync_s"].number();
    if (const auto v = b.optional("gather_start_s")) br.gather_start_s = v->number();
    if (const auto v = b.optional("gather_end_s")) br.gather_end_s = v->number();
    b.finish();
    s.buckets.push_back(std::move(br));
  });
  return s;
}

PlacementRecord placement_from_json(const At& at) {
  Object o(at);
  PlacementRecord p;
  p.matrix = o["matrix"].int_rows();
  p.fixed_step_s = o["fixed_step_s"].number();
  p.simulator_calls = o["simulator_calls"].integer();
  if (const auto v = o.optional("chosen_step_s")) {
    p.chosen_step_s = v->number();
    p.chosen_buckets = o["chosen_buckets"].integer();
    p.units = o["units"].int32();
  }
  o.finish();
  return p;
}

}  // namespace

StepReport make_report(const Model& model, const System& system, const std::vector<int>& axes,
                       const std::vector<int>& reduce, const StepOptions& opt, const StepRun& run) {
  const auto& br = run.placements.at(run.best);
  StepReport r;
  r.model = model.name;
  r.params = model.total_params();
  r.system = system.name;
  r.mode = opt.zero ? "zero" : "ddp";
  r.axes = axes;
  r.reduce = reduce;
  r.data_parallel = run.data_parallel;
  r.model_parallel = run.model_parallel;
  r.bucket_mb = opt.bucket_mb;
  ComputeRecord cr{run.compute_basis, run.compute.batch, run.compute.step_s, std::nullopt, std::nullopt};
  if (run.compute.flops_per_s > 0) cr.flops_per_s = run.compute.flops_per_s;
  if (run.compute.efficiency > 0) cr.efficiency = run.compute.efficiency;
  r.compute = cr;
  r.matrix = br.matrix;
  r.fixed = schedule_record(br.fixed, br.names, model);
  if (br.has_chosen) {
    r.chosen = schedule_record(br.chosen, br.names, model);
    r.chosen_is_fixed = br.chosen_is_fixed;
    r.gain = br.fixed.step_s / br.chosen.step_s;
  }
  for (const auto& p : run.placements) {
    PlacementRecord pr{p.matrix, p.fixed.step_s, static_cast<std::int64_t>(p.evaluations), std::nullopt, 0, 0};
    if (p.has_chosen) {
      pr.chosen_step_s = p.chosen.step_s;
      pr.chosen_buckets = static_cast<std::int64_t>(p.chosen.buckets.size());
      pr.units = p.units;
    }
    r.placements.push_back(std::move(pr));
  }
  return r;
}

json to_json(const StepReport& r) {
  json j = schedule_json(r.fixed);
  j["format"] = fmt::format("{}/{}", kStepFormat, r.version);
  j["model"] = r.model;
  j["params"] = r.params;
  j["system"] = r.system;
  j["mode"] = r.mode;
  j["axes"] = r.axes;
  j["reduce"] = r.reduce;
  j["data_parallel"] = r.data_parallel;
  j["model_parallel"] = r.model_parallel;
  j["bucket_mb"] = r.bucket_mb;
  if (r.compute) {
    json c{{"basis", r.compute->basis}, {"batch", r.compute->batch}, {"step_s", r.compute->step_s}};
    if (r.compute->flops_per_s) c["flops_per_s"] = *r.compute->flops_per_s;
    if (r.compute->efficiency) c["efficiency"] = *r.compute->efficiency;
    j["compute"] = std::move(c);
  }
  j["matrix"] = r.matrix;
  if (r.chosen) {
    j["chosen"] = schedule_json(*r.chosen);
    j["chosen"]["is_fixed"] = r.chosen_is_fixed;
    j["gain"] = r.gain;
  }
  j["placements"] = json::array();
  for (const auto& p : r.placements) {
    json pj{{"matrix", p.matrix}, {"fixed_step_s", p.fixed_step_s}, {"simulator_calls", p.simulator_calls}};
    if (p.chosen_step_s) {
      pj["chosen_step_s"] = *p.chosen_step_s;
      pj["chosen_buckets"] = p.chosen_buckets;
      pj["units"] = p.units;
    }
    j["placements"].push_back(std::move(pj));
  }
  return j;
}

StepReport step_report_from_json(const json& j, const std::string& origin) {
  const At root(j, origin, "");
  Object o(root);
  engine::json_read::check_format(o, kStepFormat, kStepVersion);
  StepReport r;
  r.model = o["model"].string();
  r.params = o["params"].integer();
  r.system = o["system"].string();
  const At mode = o["mode"];
  r.mode = mode.string();
  if (r.mode != "ddp" && r.mode != "zero") mode.fail(fmt::format("expected ddp or zero, got \"{}\"", r.mode));
  r.axes = o["axes"].ints();
  r.reduce = o["reduce"].ints();
  r.data_parallel = o["data_parallel"].int32();
  r.model_parallel = o["model_parallel"].int32();
  r.bucket_mb = o["bucket_mb"].number();
  if (const auto c = o.optional("compute")) {
    Object co(*c);
    ComputeRecord cr;
    cr.basis = co["basis"].string();
    cr.batch = co["batch"].int32();
    cr.step_s = co["step_s"].number();
    if (const auto v = co.optional("flops_per_s")) cr.flops_per_s = v->number();
    if (const auto v = co.optional("efficiency")) cr.efficiency = v->number();
    co.finish();
    r.compute = cr;
  }
  r.matrix = o["matrix"].int_rows();
  r.fixed = schedule_from_json(o);
  if (const auto c = o.optional("chosen")) {
    Object co(*c);
    r.chosen = schedule_from_json(co);
    r.chosen_is_fixed = co["is_fixed"].boolean();
    co.finish();
    r.gain = o["gain"].number();
  }
  o["placements"].each([&](const At& p) { r.placements.push_back(placement_from_json(p)); });
  // The preset's published accuracy `p2v step --json` adds (sim::accuracy_json): informative.
  if (const auto acc = o.optional("accuracy")) acc->expect(acc->raw().is_object(), "an object");
  o.finish();
  return r;
}

StepReport parse_step_report(const std::string& text, const std::string& origin) {
  return step_report_from_json(parse_json_object(text, origin), origin);
}

}  // namespace p2v::sim::step
