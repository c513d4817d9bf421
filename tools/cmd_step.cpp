// p2v step: one training step (forward, backward, gradient sync in buckets) simulated on every
// placement, with the DDP default schedule and the chosen buckets and programs (issue 15).
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/sim/rank.hpp"
#include "p2v/sim/report.hpp"
#include "p2v/sim/step.hpp"

namespace p2v::tools {
namespace {

namespace st = sim::step;

struct StepArgs {
  ProblemArgs problem;
  SearchArgs search;
  std::string model, program, mode = "ddp", algo = "ring", svg;
  double bucket_mb = 25;
  int candidates = 8, units = 64;
  bool json = false, no_choose = false;
};

// One placement: its programs and the default and chosen schedules.
struct PlacementResult {
  engine::ParallelismMatrix matrix;
  std::vector<std::string> names;  // per SyncCosts program
  st::StepResult fixed, chosen;
  bool has_chosen = false;
  bool chosen_is_fixed = false;  // the DP's schedule was not faster than the fixed one
  std::size_t evaluations = 0;
  int units = 0;
  double best() const { return has_chosen ? chosen.step_s : fixed.step_s; }
};

nlohmann::json result_json(const st::StepResult& r, const std::vector<std::string>& names, const st::Model& m) {
  nlohmann::json j{{"step_s", r.step_s},       {"compute_s", r.compute_s},           {"forward_s", r.fwd_s},
                   {"backward_s", r.bwd_s},    {"sync_s", r.sync_s},                 {"exposed_comm_s", r.exposed_comm_s},
                   {"autosync_s", r.autosync_s}, {"buckets", nlohmann::json::array()}};
  for (const auto& b : r.buckets) {
    nlohmann::json bj{{"first_layer", m.layers[static_cast<std::size_t>(b.first)].name},
                      {"last_layer", m.layers[static_cast<std::size_t>(b.last)].name},
                      {"layers", {b.first, b.last}},
                      {"bytes", b.bytes},
                      {"program", names[static_cast<std::size_t>(b.program)]},
                      {"ready_s", b.ready_s},
                      {"start_s", b.start_s},
                      {"end_s", b.end_s},
                      {"sync_s", b.sync_s()}};
    if (b.gather_s() > 0) {
      bj["gather_start_s"] = b.gather_start_s;
      bj["gather_end_s"] = b.gather_end_s;
    }
    j["buckets"].push_back(std::move(bj));
  }
  return j;
}

void print_result(const char* what, const st::StepResult& r, const std::vector<std::string>& names, const st::Model& m) {
  fmt::print("\n{}: step {}  compute {} (forward {}, backward {})  sync {}  exposed {}  AutoSync max() {}\n", what,
             sim::format_seconds(r.step_s), sim::format_seconds(r.compute_s), sim::format_seconds(r.fwd_s),
             sim::format_seconds(r.bwd_s), sim::format_seconds(r.sync_s), sim::format_seconds(r.exposed_comm_s),
             sim::format_seconds(r.autosync_s));
  fmt::print("  {:>3}  {:>10}  {:>11} {:>11} {:>11}  {:<32}  {}\n", "#", "bytes", "ready", "start", "sync", "layers", "program");
  for (std::size_t i = 0; i < r.buckets.size(); ++i) {
    const auto& b = r.buckets[i];
    const std::string layers = fmt::format("{}..{}", m.layers[static_cast<std::size_t>(b.first)].name,
                                           m.layers[static_cast<std::size_t>(b.last)].name);
    fmt::print("  {:>3}  {:>10}  {:>11} {:>11} {:>11}  {:<32}  {}\n", i, sim::format_bytes(b.bytes),
               sim::format_seconds(b.ready_s), sim::format_seconds(b.start_s), sim::format_seconds(b.sync_s()),
               layers.size() > 32 ? layers.substr(0, 29) + "..." : layers, names[static_cast<std::size_t>(b.program)]);
  }
}

Registrar reg(
    "step", "Simulate a training step (compute + bucketed gradient sync) and choose buckets, programs and placement",
    55, [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<StepArgs>();
      sub.add_option("--model", a->model, "model file (examples/models/*.json)")->required();
      add_problem_options(sub, a->problem, /*need_reduce=*/false);
      add_search_options(sub, a->search, /*with_hierarchy=*/false);
      sub.add_option("--program", a->program,
                     "the program of the fixed schedule, as `p2v simulate` names it (default: one AllReduce; ZeRO: "
                     "ReduceScatter ; AllGather over the reduction groups)");
      sub.add_option("--bucket-mb", a->bucket_mb, "DDP bucket cap, MB (10^6 bytes) per device")->capture_default_str();
      sub.add_option("--mode", a->mode, "ddp (AllReduce of gradients) or zero (ZeRO/FSDP: ReduceScatter of gradients, "
                                        "AllGather of parameters before the forward pass)")
          ->capture_default_str();
      sub.add_option("--algo", a->algo, "NCCL algorithm of the simulator: ring, tree or auto")->capture_default_str();
      sub.add_option("--candidates", a->candidates, "programs considered per bucket when choosing: the default and the "
                                                     "N fastest at the bucket cap")
          ->capture_default_str();
      sub.add_option("--units", a->units, "candidate bucket boundaries: layers merged into at most this many units")
          ->capture_default_str();
      sub.add_flag("--no-choose", a->no_choose, "only the fixed schedule (no bucket/program choice)");
      sub.add_flag("--json", a->json, "machine-readable output");
      sub.add_option("--svg", a->svg, "write a Gantt chart of the reported placement's step");
      return [a] {
        if (a->mode != "ddp" && a->mode != "zero")
          throw Error(fmt::format("--mode '{}': expected ddp or zero", a->mode));
        if (!(a->bucket_mb > 0)) throw Error(fmt::format("--bucket-mb {}: must be positive", a->bucket_mb));
        if (a->candidates < 0 || a->units < 1) throw Error("--candidates must be >= 0 and --units >= 1");
        const bool zero = a->mode == "zero";
        const st::Model model = st::load_model_file(a->model);
        if (a->problem.reduce.empty()) {  // default: every axis is data-parallel
          const auto n = engine::parse_int_list(a->problem.axes, "--axes").size();
          for (std::size_t i = 0; i < n; ++i) a->problem.reduce += (i ? "," : "") + std::to_string(i);
        }
        Problem p = load_problem(a->problem);
        int dp = 1, mp = 1;
        for (std::size_t i = 0; i < p.axes.size(); ++i)
          (std::find(p.reduce.begin(), p.reduce.end(), static_cast<int>(i)) != p.reduce.end() ? dp : mp) *= p.axes[i];
        const auto lc = st::layer_costs(model, p.system, dp, mp, zero);
        const double cap = a->bucket_mb * 1e6;
        sim::Simulator simulator(p.system);
        sim::CostOptions copt;
        copt.algo = sim::parse_algorithm(a->algo);
        copt.bytes = cap;
        copt.breakdown = false;
        const auto sopt = a->search.options();
        const auto names = p.system.level_names();

        std::vector<PlacementResult> results;
        for (const auto& x : p.matrices) {
          const auto pl = p.placement(x);
          const auto rank = sim::rank_placement(simulator, pl, names, sopt, copt);
          PlacementResult pr;
          pr.matrix = x;
          std::vector<engine::LoweredProgram> progs;
          const auto groups = pl.reduction_groups();
          if (zero) {
            progs.push_back({{engine::Collective::ReduceScatter, groups}, {engine::Collective::AllGather, groups}});
            pr.names.push_back("ReduceScatter ; AllGather (ZeRO default)");
          } else {
            progs.push_back(sim::single_allreduce(groups));
            pr.names.push_back("AllReduce (DDP default)");
          }
          int fixed = 0;
          std::vector<int> cands{0};
          for (const auto& rp : rank.programs) {
            if (zero && (rp.lowered.empty() || rp.lowered.back().collective != engine::Collective::AllGather)) continue;
            const bool wanted = rp.name == a->program;
            if (!wanted && static_cast<int>(cands.size()) > a->candidates) continue;
            progs.push_back(rp.lowered);
            pr.names.push_back(rp.name);
            const int idx = static_cast<int>(progs.size()) - 1;
            if (wanted) fixed = idx;
            if (static_cast<int>(cands.size()) <= a->candidates) cands.push_back(idx);
          }
          if (!a->program.empty() && fixed == 0)
            throw Error(fmt::format("--program '{}' is not a program of matrix {}{} (see p2v simulate --top -1 for the names)",
                                    a->program, engine::format_matrix_brackets(x),
                                    zero ? " ending with AllGather (--mode zero)" : ""));
          st::SyncCosts costs(simulator, std::move(progs), copt.algo, zero);
          const auto buckets = st::ddp_buckets(lc, cap);
          pr.fixed = st::simulate_step(lc, buckets, std::vector<int>(buckets.size(), fixed), costs, fixed);
          if (!a->no_choose) {
            st::ChooseOptions co;
            co.max_units = a->units;
            co.programs = cands;
            const auto c = st::choose(lc, costs, cap, co);
            pr.chosen = st::simulate_step(lc, c.buckets, c.programs, costs, 0);
            // The fixed schedule is a candidate too: the DP's boundaries are restricted to units
            // (and, ZeRO, it ignores the gathers), so it can lose to the default.
            pr.chosen_is_fixed = pr.fixed.step_s <= pr.chosen.step_s;
            if (pr.chosen_is_fixed) pr.chosen = pr.fixed;
            pr.units = c.units;
            pr.has_chosen = true;
          }
          pr.evaluations = costs.evaluations();
          results.push_back(std::move(pr));
        }
        std::size_t best = 0;
        for (std::size_t i = 1; i < results.size(); ++i)
          if (results[i].best() < results[best].best()) best = i;
        const auto& br = results[best];
        const st::StepResult& shown = br.has_chosen ? br.chosen : br.fixed;
        if (!a->svg.empty())
          write_file(a->svg, st::step_svg(shown, br.names,
                                          fmt::format("{} on {} ({}), matrix {}, {} schedule", model.name, p.system.name,
                                                      a->mode, engine::format_matrix_brackets(br.matrix),
                                                      br.has_chosen ? "chosen" : "fixed")));
        if (a->json) {
          nlohmann::json j = result_json(br.fixed, br.names, model);
          j["model"] = model.name;
          j["params"] = model.total_params();
          j["system"] = p.system.name;
          j["mode"] = a->mode;
          j["axes"] = p.axes;
          j["reduce"] = p.reduce;
          j["data_parallel"] = dp;
          j["model_parallel"] = mp;
          j["bucket_mb"] = a->bucket_mb;
          j["matrix"] = br.matrix;
          if (br.has_chosen) {
            j["chosen"] = result_json(br.chosen, br.names, model);
            j["chosen"]["is_fixed"] = br.chosen_is_fixed;
            j["gain"] = br.fixed.step_s / br.chosen.step_s;
          }
          j["placements"] = nlohmann::json::array();
          for (const auto& r : results) {
            nlohmann::json pj{{"matrix", r.matrix}, {"fixed_step_s", r.fixed.step_s}, {"simulator_calls", r.evaluations}};
            if (r.has_chosen) {
              pj["chosen_step_s"] = r.chosen.step_s;
              pj["chosen_buckets"] = r.chosen.buckets.size();
              pj["units"] = r.units;
            }
            j["placements"].push_back(std::move(pj));
          }
          fmt::print("{}\n", j.dump(2));
          return 0;
        }
        fmt::print("model {} ({} parameters, {} layers) on {}: mode {}, data-parallel {} x model-parallel {}, algo {}\n",
                   model.name, model.total_params(), model.layers.size(), p.system.name, a->mode, dp, mp, a->algo);
        const std::string fixed_name = a->program.empty() ? (zero ? "ZeRO default" : "DDP default") : "--program";
        fmt::print("fixed schedule: {} MB buckets, {}\n\n", a->bucket_mb, fixed_name);
        std::size_t mw = 6;
        for (const auto& r : results) mw = std::max(mw, engine::format_matrix_brackets(r.matrix).size());
        fmt::print("  {:<{}} {:>11} {:>11} {:>7} {:>8}\n", "matrix", mw, "fixed", "chosen", "gain", "buckets");
        for (std::size_t i = 0; i < results.size(); ++i) {
          const auto& r = results[i];
          fmt::print("  {:<{}} {:>11} {:>11} {:>6.3f}x {:>8}{}\n", engine::format_matrix_brackets(r.matrix), mw,
                     sim::format_seconds(r.fixed.step_s), r.has_chosen ? sim::format_seconds(r.chosen.step_s) : "-",
                     r.has_chosen ? r.fixed.step_s / r.chosen.step_s : 1.0,
                     r.has_chosen ? r.chosen.buckets.size() : r.fixed.buckets.size(),
                     i == best && results.size() > 1 ? "   <- best placement" : "");
        }
        fmt::print("\nmatrix {}\n", engine::format_matrix_brackets(br.matrix));
        print_result("fixed schedule", br.fixed, br.names, model);
        if (br.has_chosen)
          print_result(br.chosen_is_fixed ? "chosen schedule (the fixed one: the DP found nothing faster)" : "chosen schedule",
                       br.chosen, br.names, model);
        return 0;
      };
    });

}  // namespace
}  // namespace p2v::tools
