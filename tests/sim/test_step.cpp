// p2v step (docs/step.md): model files, the event simulation by hand, the DP against brute force,
// the per-flow cap, and the bounds max(compute, sync) <= step <= compute + sync on every bundled
// model and preset.
#include <doctest/doctest.h>
#include <unistd.h>
#include <cstdio>
#include <fstream>

#include <cmath>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/preset_devices.hpp"
#include "p2v/sim/step.hpp"
#include "p2v/sim/step_plan.hpp"

using namespace p2v::engine;
namespace sim = p2v::sim;
namespace st = p2v::sim::step;

namespace {

std::string model_path(const std::string& n) { return std::string(P2V_SOURCE_DIR) + "/examples/models/" + n; }

// Two devices on a NIC: one AllReduce over both.
struct Fixture {
  System sys = simtest::two_level(2, 1, 1, 10, 100, 1);
  sim::Simulator sim{sys};
  LoweredProgram ar = sim::single_allreduce({{0, 1}});
  LoweredProgram rs_ag{{Collective::ReduceScatter, {{0, 1}}}, {Collective::AllGather, {{0, 1}}}};
};

std::vector<st::LayerCost> layers(std::vector<double> fwd, std::vector<double> bytes) {
  std::vector<st::LayerCost> v;
  for (std::size_t i = 0; i < fwd.size(); ++i) v.push_back({fwd[i], 2 * fwd[i], bytes[i]});
  return v;
}

}  // namespace

TEST_CASE("step: model files are strict") {
  const std::string ok = R"({"name":"m","layers":[{"name":"a","params":10,"fwd_flops":1e9}]})";
  CHECK(st::parse_model_json(ok, "t").total_params() == 10);
  CHECK_THROWS_WITH_AS(st::parse_model_json(R"({"layers":[{"params":10,"fwd_flops":1,"flops":2}]})", "t"),
                       doctest::Contains("unknown field 'flops'"), p2v::Error);
  CHECK_THROWS_WITH_AS(st::parse_model_json(R"({"layers":[{"params":10}]})", "t"), doctest::Contains("fwd_flops"),
                       p2v::Error);
  CHECK_THROWS_WITH_AS(st::parse_model_json(R"({"total_params":11,"layers":[{"params":10,"fwd_s":1}]})", "t"),
                       doctest::Contains("sum to 10"), p2v::Error);
  // FLOPs need device numbers.
  const auto m = st::parse_model_json(ok, "t");
  System s = simtest::two_level(2, 1, 1, 10, 100, 1);
  CHECK_THROWS_WITH_AS(st::layer_costs(m, s, 2, 1, false), doctest::Contains("no device numbers"), p2v::Error);
  s.device = Device{"x", 10, 0.5, 0, {}, {}};
  const auto lc = st::layer_costs(m, s, 2, 1, false);
  CHECK(lc[0].fwd_s == simtest::rel(1e9 / 5e12));
  CHECK(lc[0].bwd_s == simtest::rel(2e9 / 5e12));
  CHECK(lc[0].grad_bytes == 40);
}

TEST_CASE("step: bundled models have the parameter counts of their architectures") {
  const std::pair<const char*, std::int64_t> want[] = {{"resnet50.json", 25557032},
                                                       {"vgg16.json", 138357544},
                                                       {"bert-base.json", 109482240},
                                                       {"bert-large.json", 335141888},
                                                       {"gpt-1.3b.json", 1315723264}};
  for (auto [f, n] : want) {
    CAPTURE(f);
    CHECK(st::load_model_file(model_path(f)).total_params() == n);
  }
}

TEST_CASE("step: the event simulation queues buckets behind each other and behind their gradients") {
  Fixture fx;
  st::SyncCosts costs(fx.sim, {fx.ar}, sim::Algorithm::Ring, false);
  // Three layers, forward 1 ms each, backward 2 ms; 1 MB of gradients each: one bucket per layer.
  const auto lc = layers({1e-3, 1e-3, 1e-3}, {1e6, 1e6, 2e6});
  const auto b = st::ddp_buckets(lc, 1e6);
  REQUIRE(b.size() == 3);
  CHECK(b[0] == std::pair{2, 2});
  CHECK(b[2] == std::pair{0, 0});
  const auto r = st::simulate_step(lc, b, {0, 0, 0}, costs, 0);
  const double c1 = costs.sync(0, 1e6), c2 = costs.sync(0, 2e6);
  REQUIRE(c2 > 2e-3);                         // the first sync outlasts the next layer's backward: queueing
  const double e0 = 5e-3 + c2;                // layer 2's gradients ready at 3 + 2 ms
  const double e1 = std::max(7e-3, e0) + c1;  // layer 1 ready at 7 ms
  const double e2 = std::max(9e-3, e1) + c1;
  CHECK(r.buckets[0].end_s == simtest::rel(e0));
  CHECK(r.buckets[1].start_s == simtest::rel(std::max(7e-3, e0)));
  CHECK(r.step_s == simtest::rel(std::max(9e-3, e2)));
  CHECK(r.compute_s == simtest::rel(9e-3));
  CHECK(r.sync_s == simtest::rel(c2 + 2 * c1));
  CHECK(r.autosync_s == simtest::rel(std::max(9e-3, c2 + 2 * c1)));
  CHECK(r.exposed_comm_s == simtest::rel(r.step_s - 9e-3));
}

TEST_CASE("step: ZeRO gathers parameters before the forward pass, one bucket ahead") {
  Fixture fx;
  st::SyncCosts costs(fx.sim, {fx.rs_ag}, sim::Algorithm::Ring, true);
  const double rs = costs.sync(0, 1e6), ag = costs.gather(0, 1e6);
  sim::CostOptions o;
  o.bytes = 1e6;
  CHECK(rs + ag == simtest::rel(fx.sim.time(fx.rs_ag, o)));
  CHECK(rs > 0);
  CHECK(ag > 0);
  const auto lc = layers({1e-3, 1e-3}, {1e6, 1e6});
  const auto r = st::simulate_step(lc, st::ddp_buckets(lc, 1e6), {0, 0}, costs, 0);
  // Forward order: bucket 1 (layer 0) gathered first, then bucket 0 (layer 1) while layer 0 computes.
  CHECK(r.buckets[1].gather_start_s == 0);
  CHECK(r.layer_fwd_start[0] == simtest::rel(ag));
  CHECK(r.buckets[0].gather_start_s == simtest::rel(ag));
  CHECK(r.layer_fwd_start[1] == simtest::rel(std::max(ag + 1e-3, 2 * ag)));
  CHECK(r.step_s >= r.compute_s);
  CHECK(r.step_s <= r.compute_s + r.sync_s + 1e-12);
}

TEST_CASE("step: the DP over boundaries and programs matches brute force") {
  Fixture fx;
  st::SyncCosts costs(fx.sim, {fx.ar, fx.rs_ag}, sim::Algorithm::Ring, false);
  const auto lc = layers({2e-4, 1e-3, 5e-4, 3e-4, 1e-3, 2e-4}, {3e5, 2e6, 1e5, 8e5, 4e6, 5e5});
  st::ChooseOptions co;
  co.max_units = 1000;         // every layer is a unit
  co.max_bucket_bytes = 1e12;  // no size limit
  const auto c = st::choose(lc, costs, 1e6, co);
  const double dp = st::simulate_step(lc, c.buckets, c.programs, costs, 0).step_s;
  double best = 1e9;
  const int L = static_cast<int>(lc.size());
  for (int mask = 0; mask < (1 << (L - 1)); ++mask) {  // bit i: boundary between layers i+1 and i
    std::vector<std::pair<int, int>> b;
    int last = L - 1;
    for (int i = L - 1; i >= 1; --i)
      if (mask >> (i - 1) & 1) {
        b.emplace_back(i, last);
        last = i - 1;
      }
    b.emplace_back(0, last);
    for (int pm = 0; pm < (1 << b.size()); ++pm) {
      std::vector<int> progs;
      for (std::size_t k = 0; k < b.size(); ++k) progs.push_back(pm >> k & 1);
      best = std::min(best, st::simulate_step(lc, b, progs, costs, 0).step_s);
    }
  }
  CHECK(dp == simtest::rel(best));
}

TEST_CASE("step: a per-flow cap limits a single flow, not the link") {
  System s = simtest::two_level(2, 2, 8, 0, 100, 0);
  s.levels[0].interconnect->flow_bandwidth_gbps = 2;
  sim::Simulator capped(s);
  sim::Simulator free(simtest::two_level(2, 2, 8, 0, 100, 0));
  sim::CostOptions o;
  o.bytes = 1e9;
  o.algo = sim::Algorithm::Ring;  // the ring's flows (auto may take the tree, whose flows are halves)
  // One cross-node ring flow per direction: it gets the cap (2 GB/s), not the link's 8 GB/s.
  const LoweredProgram one = sim::single_allreduce({{0, 2}});
  // (up to the fixed NCCL latency, ~55 us of 0.125 s)
  CHECK(capped.time(one, o) == simtest::rel(4 * free.time(one, o)).epsilon(1e-3));
  // Two concurrent flows: each gets min(cap, share) = 2 GB/s, so two rings take as long as one.
  const LoweredProgram two = sim::single_allreduce({{0, 2}, {1, 3}});
  CHECK(capped.time(two, o) == simtest::rel(capped.time(one, o)));
  CHECK(free.time(two, o) == simtest::rel(2 * free.time(one, o)).epsilon(1e-3));
  const auto g4 = load_system_file(simtest::example("g4dn-4node.json"));
  CHECK(g4.levels[0].interconnect->flow_bandwidth_gbps == 1.25);
  CHECK(system_to_json(g4).find("flow_bandwidth_GBps") != std::string::npos);
}

TEST_CASE("p2v step: bounds on every bundled model and preset, both modes") {
  const std::pair<const char*, const char*> presets[] = {{"a100-2node.json", "32"},    {"a100-4node.json", "4,16"},
                                                         {"v100-2node.json", "16"},    {"v100-4node.json", "32"},
                                                         {"titanx-16node.json", "16"}, {"g4dn-4node.json", "16"}};
  int ran = 0, unfit = 0;
  for (const char* m : {"resnet50.json", "vgg16.json", "bert-base.json", "bert-large.json", "gpt-1.3b.json"})
    for (auto [sys, axes] : presets)
      for (const char* mode : {"ddp", "zero"}) {
        CAPTURE(m);
        CAPTURE(sys);
        CAPTURE(mode);
        const auto r = simtest::run(std::string("step --json --model ") + model_path(m) + " --system " +
                                    simtest::example(sys) + " --axes " + axes + " --reduce 0 --mode " + mode);
        if (r.code != 0) {
          // Only a model too big for the device may fail (GPT 1.3B without ZeRO on 12-32 GB).
          CHECK(r.out.find("needs") != std::string::npos);
          CHECK(std::string(m) == "gpt-1.3b.json");
          CHECK(std::string(mode) == "ddp");
          ++unfit;
          continue;
        }
        const auto j = nlohmann::json::parse(r.out);
        for (const auto* x : {&j, &j["chosen"]}) {
          const double step = (*x)["step_s"], comp = (*x)["compute_s"], sync = (*x)["sync_s"];
          CHECK(step >= std::max(comp, sync) * (1 - 1e-12));
          CHECK(step <= (comp + sync) * (1 + 1e-12));
          CHECK((*x)["exposed_comm_s"].get<double>() == simtest::rel(step - comp));
          CHECK((*x)["autosync_s"].get<double>() >= comp);
          CHECK(!(*x)["buckets"].empty());
        }
        CHECK(j["chosen"]["step_s"].get<double>() <= j["step_s"].get<double>());
        ++ran;
      }
  CHECK(ran >= 55);
  CHECK(unfit >= 1);
}

TEST_CASE("p2v step: without --reduce every axis is data-parallel") {
  const auto r = simtest::run("step --json --no-choose --model " + model_path("resnet50.json") + " --system " +
                              simtest::example("g4dn-4node.json") + " --axes 4,4");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["data_parallel"] == 16);
  CHECK(j["model_parallel"] == 1);
  CHECK(!j.contains("chosen"));
}

TEST_CASE("p2v step: clear errors") {
  const std::string sys = " --system " + simtest::example("a100-4node.json") + " --axes 4,16 --reduce 0";
  // A system file without "device" (inline systems get the preset's device numbers).
  const std::string bare = "/tmp/p2v_step_bare_" + std::to_string(::getpid()) + ".json";
  std::ofstream(bare) << R"({"levels": [{"name": "node", "cardinality": 4, "interconnect": {"kind": "nic",
      "bandwidth_gbps": 8, "latency_us": 5}}, {"name": "gpu", "cardinality": 16, "interconnect": {"kind": "switch",
      "bandwidth_gbps": 270, "latency_us": 1}}]})";
  auto r =
      simtest::run("step --model " + model_path("bert-base.json") + " --system " + bare + " --axes 4,16 --reduce 0");
  std::remove(bare.c_str());
  CHECK(r.code == 2);
  CHECK(r.out.find("no device numbers") != std::string::npos);
  r = simtest::run("step --model " + model_path("gpt-1.3b.json") + " --system " +
                   simtest::example("titanx-16node.json") + " --axes 16 --reduce 0");
  CHECK(r.code == 2);
  CHECK(r.out.find("--mode zero") != std::string::npos);
  r = simtest::run("step --model " + model_path("bert-base.json") + sys + " --program nope");
  CHECK(r.code == 2);
  CHECK(r.out.find("not a program") != std::string::npos);
  r = simtest::run("step --model " + model_path("bert-base.json") + sys + " --mode fsdp");
  CHECK(r.code == 2);
  r = simtest::run("export --format torch --system node=2,gpu=4 --axes 8 --reduce 0 --program nope -o /dev/null");
  CHECK(r.code == 2);
  CHECK(r.out.find("not a program") != std::string::npos);
  r = simtest::run("export --format onnx --system node=2,gpu=4 --axes 8 --reduce 0 --all-programs -o /dev/null");
  CHECK(r.code == 2);
}

TEST_CASE("step: a measured step time fits the compute speed and recovers a known efficiency") {
  // Synthetic: FLOPs run at efficiency 0.37 of a 100 TFLOP/s device; the measured step is what
  // that gives. A system assuming another efficiency (0.9), or none at all, fits it back.
  const auto m = st::parse_model_json(
      R"({"name":"m","batch":4,"layers":[{"name":"a","params":10,"fwd_flops":3e11},
          {"name":"b","params":20,"fwd_flops":1e11,"bwd_flops":5e11},{"name":"c","params":5,"fwd_flops":2e11}]})",
      "t");
  System truth = simtest::two_level(2, 1, 1, 10, 100, 1);
  truth.device = Device{"x", 100, 0.37, 0, {}, {}};
  st::ComputeFit f0;
  const auto want = st::layer_costs(m, truth, 2, 1, false, {}, &f0);
  CHECK(!f0.fitted);
  const double T = (3e11 * 3 + 1e11 + 5e11 + 2e11 * 3) / 37e12;  // by hand: forward + backward FLOPs / speed
  CHECK(f0.step_s == simtest::rel(T));
  CHECK(f0.efficiency == simtest::rel(0.37));

  System assumed = truth;
  assumed.device->efficiency = 0.9;
  st::ComputeOptions co;
  co.measured_step_s = T;
  st::ComputeFit f;
  const auto got = st::layer_costs(m, assumed, 2, 1, false, co, &f);
  CHECK(f.fitted);
  CHECK(f.efficiency == simtest::rel(0.37));
  CHECK(f.flops_per_s == simtest::rel(37e12));
  CHECK(f.time_scale == simtest::rel(0.9 / 0.37));
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].fwd_s == simtest::rel(want[i].fwd_s));
    CHECK(got[i].bwd_s == simtest::rel(want[i].bwd_s));  // the model's backward share is kept
    CHECK(got[i].grad_bytes == want[i].grad_bytes);
  }
  // Without device numbers: the speed is fitted, no efficiency (no peak to relate it to).
  System bare = simtest::two_level(2, 1, 1, 10, 100, 1);
  const auto g2 = st::layer_costs(m, bare, 2, 1, false, co, &f);
  CHECK(f.flops_per_s == simtest::rel(37e12));
  CHECK(f.efficiency == 0);
  CHECK(g2[1].bwd_s == simtest::rel(want[1].bwd_s));
  // Model parallelism divides the fitted single-device times; a larger batch scales them.
  const auto g3 = st::layer_costs(m, assumed, 1, 2, false, co, &f);
  CHECK(g3[0].fwd_s == simtest::rel(want[0].fwd_s / 2));
  co.batch = 8;
  co.measured_step_s = 2 * T;  // twice the batch at the same speed
  st::layer_costs(m, assumed, 2, 1, false, co, &f);
  CHECK(f.efficiency == simtest::rel(0.37));
  CHECK(f.batch == 8);
  co.measured_step_s = 0;
  const auto g4 = st::layer_costs(m, truth, 2, 1, false, co, &f);
  CHECK(g4[2].bwd_s == simtest::rel(2 * want[2].bwd_s));
  // Measured seconds: the fit scales them.
  const auto ms = st::parse_model_json(R"({"layers":[{"params":1,"fwd_s":0.001},{"params":1,"fwd_s":0.003}]})", "t");
  st::ComputeOptions c2;
  c2.measured_step_s = 0.024;  // 2 x (0.001 + 0.003) x 3
  const auto g5 = st::layer_costs(ms, bare, 1, 1, false, c2, &f);
  CHECK(f.time_scale == simtest::rel(2));
  CHECK(g5[1].bwd_s == simtest::rel(0.012));
  // A model mixing FLOPs and seconds needs device numbers to be fitted.
  const auto mixed =
      st::parse_model_json(R"({"layers":[{"params":1,"fwd_s":0.001},{"params":1,"fwd_flops":1e9}]})", "t");
  CHECK_THROWS_WITH_AS(st::layer_costs(mixed, bare, 1, 1, false, c2), doctest::Contains("no device numbers"),
                       p2v::Error);
}

TEST_CASE("step: published throughputs are read strictly and give a step time") {
  const std::string head = R"({"name":"m","batch":32,"layers":[{"params":1,"fwd_flops":1e9}],"throughput":[)";
  const std::string entry =
      R"({"id":"a","device":"A100","precision":"tf32","framework":"f","source":"s","batch":256,"gpus":8,"samples_per_s":8000})";
  const auto m = st::parse_model_json(head + entry + "]}", "t");
  REQUIRE(m.throughput.size() == 1);
  CHECK(m.find_throughput("a").step_s() == simtest::rel(256.0 / 1000));
  CHECK_THROWS_WITH_AS(m.find_throughput("b"), doctest::Contains("it has a"), p2v::Error);
  auto bad = [&](const std::string& e) {
    try {
      st::parse_model_json(head + e + "]}", "t");
    } catch (const p2v::Error& x) {
      return std::string(x.what());
    }
    return std::string("accepted");
  };
  auto with = [&](const std::string& from, const std::string& to) {
    std::string e = entry;
    e.replace(e.find(from), from.size(), to);
    return e;
  };
  CHECK(bad(with(R"("gpus":8)", R"("gpus":8,"img_per_s":1)")).find("unknown field 'img_per_s'") != std::string::npos);
  CHECK(bad(with(R"("source":"s",)", "")).find("throughput[0].source: missing") != std::string::npos);
  CHECK(bad(with(R"("source":"s")", R"("source":"")")).find("source: missing or not a non-empty") != std::string::npos);
  CHECK(bad(with("8000", "0")).find("samples_per_s: must be positive") != std::string::npos);
  CHECK(bad(with(R"("batch":256)", R"("batch":2.5)")).find("batch: missing or not a positive integer") !=
        std::string::npos);
  CHECK(bad(entry + "," + entry).find("'a' appears twice") != std::string::npos);
  CHECK(bad("3").find("throughput[0]: must be an object") != std::string::npos);
  // The bundled published numbers: every entry has its source, ResNet-50 and BERT-large have some.
  for (const char* f : {"resnet50.json", "bert-large.json"}) {
    const auto bm = st::load_model_file(model_path(f));
    CHECK(bm.throughput.size() >= 5);
    for (const auto& t : bm.throughput) {
      CAPTURE(t.id);
      CHECK(t.source.size() > 20);
      CHECK(t.step_s() > 0);
    }
  }
  const auto rn = st::load_model_file(model_path("resnet50.json"));
  CHECK(rn.find_throughput("horovod-oci-a100-8gpu").step_s() == simtest::rel(32 / 600.2));
}

TEST_CASE("step: exposed communication on a tiny model, by hand") {
  Fixture fx;
  st::SyncCosts costs(fx.sim, {fx.ar}, sim::Algorithm::Ring, false);
  const double c = costs.sync(0, 1e6);
  REQUIRE(c > 0);
  // Two layers, one bucket each. Forward 1 ms per layer, backward b per layer. Layer 1's gradients
  // are ready at 2 ms + b, layer 0's at 2 ms + 2b (the end of compute).
  for (const double b : {2 * c, c / 2}) {
    CAPTURE(b);
    const auto lc = layers({1e-3, 1e-3}, {1e6, 1e6});
    std::vector<st::LayerCost> l2 = lc;
    for (auto& x : l2) x.bwd_s = b;
    const auto r = st::simulate_step(l2, st::ddp_buckets(l2, 1e6), {0, 0}, costs, 0);
    const double compute = 2e-3 + 2 * b;
    // Bucket 0 (layer 1) syncs from 2 ms + b to 2 ms + b + c. If c <= b it is hidden behind layer 0's
    // backward and only the last bucket's sync is exposed: c. Otherwise bucket 1 queues behind it
    // on the one communication stream and the exposed time is (2 ms + b + 2c) - compute = 2c - b.
    const double exposed = c <= b ? c : 2 * c - b;
    CHECK(r.compute_s == simtest::rel(compute));
    CHECK(r.exposed_comm_s == simtest::rel(exposed));
    CHECK(r.buckets[1].start_s == simtest::rel(std::max(compute, 2e-3 + b + c)));  // never before its gradients
  }
  // One bucket for everything: nothing overlaps, the whole sync is exposed.
  const auto lc = layers({1e-3, 1e-3}, {1e6, 1e6});
  const auto r = st::simulate_step(lc, {{0, 1}}, {0}, costs, 0);
  CHECK(r.exposed_comm_s == simtest::rel(costs.sync(0, 2e6)));
}

TEST_CASE("p2v step: --measured-step-ms and --throughput") {
  const std::string rn = model_path("resnet50.json");
  const auto model = st::load_model_file(rn);
  double flops = 0;
  for (const auto& l : model.layers) flops += l.fwd_flops + l.bwd_flops;
  auto r = simtest::run("step --json --no-choose --model " + rn + " --system " + simtest::example("a100-2node.json") +
                        " --axes 32 --measured-step-ms 100");
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["compute"]["step_s"].get<double>() == simtest::rel(0.1));
  CHECK(j["compute"]["efficiency"].get<double>() == simtest::rel(flops / (156e12 * 0.1)));
  CHECK(j["compute_s"].get<double>() == simtest::rel(0.1));  // data parallel only: one device's step
  CHECK(j["step_s"].get<double>() >= 0.1);
  // Published numbers need no device numbers; the per-sample time is rescaled to --batch.
  r = simtest::run("step --json --no-choose --model " + rn +
                   " --system node=1,gpu=8 --preset a100 --axes 8 --throughput dle-a100-tf32-1gpu --batch 64");
  REQUIRE(r.code == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j["compute"]["step_s"].get<double>() == simtest::rel(64.0 / 938));
  CHECK(j["compute"]["batch"] == 64);
  // The preset gives the device (A100, 312 TFLOP/s dense bf16): the fitted speed's efficiency is against it.
  CHECK(j["compute"]["efficiency"].get<double>() == simtest::rel(j["compute"]["flops_per_s"].get<double>() / 312e12));
  CHECK(j["compute"]["basis"].get<std::string>().find("DeepLearningExamples") != std::string::npos);
  r = simtest::run("step --model " + rn + " --system node=1,gpu=8 --preset a100 --axes 8 --throughput nope");
  CHECK(r.code == 2);
  CHECK(r.out.find("horovod-oci-a100-8gpu") != std::string::npos);
  r = simtest::run(
      "step --model " + rn +
      " --system node=1,gpu=8 --preset a100 --axes 8 --throughput dle-a100-tf32-1gpu --measured-step-ms 5");
  CHECK(r.code == 2);
  CHECK(r.out.find("not both") != std::string::npos);
  r = simtest::run("step --model " + rn + " --system node=1,gpu=8 --preset a100 --axes 8 --measured-step-ms -3");
  CHECK(r.code == 2);
  r = simtest::run("step --model " + rn + " --system node=1,gpu=8 --preset a100 --axes 8 --measured-gpus 8");
  CHECK(r.code == 2);
  CHECK(r.out.find("goes with --measured-step-ms") != std::string::npos);
}

TEST_CASE("step: a step measured on one node is fitted with that node's exposed communication") {
  const auto m = st::parse_model_json(
      R"({"name":"m","batch":4,"layers":[{"name":"a","params":20000000,"fwd_flops":2e11},
          {"name":"b","params":20000000,"fwd_flops":2e11},{"name":"c","params":20000000,"fwd_flops":2e11}]})",
      "t");
  // The truth: one node of 4 devices at efficiency 0.37, a slow switch so that communication shows.
  System node = simtest::two_level(1, 4, 10, 5, 20, 1);
  node.device = Device{"x", 100, 0.37, 0, {}, {}};
  st::StepOptions o;
  o.choose = false;
  const std::vector<int> ax4{4}, ax8{8}, red{0};
  const auto truth = st::plan_step(m, node, ax4, red, enumerate_matrices(node.cardinalities(), ax4), o);
  const double T = truth.placements[0].fixed.step_s;
  REQUIRE(T > truth.placements[0].fixed.compute_s * 1.05);  // exposed communication in the measurement
  // Two such nodes, assuming efficiency 0.9: fitted to the one-node step, the efficiency comes back.
  System two = simtest::two_level(2, 4, 10, 5, 20, 1);
  two.device = Device{"x", 100, 0.9, 0, {}, {}};
  o.measured_step_s = T;
  o.measured_gpus = 4;
  const auto mats = enumerate_matrices(two.cardinalities(), ax8);
  auto run = st::plan_step(m, two, ax8, red, mats, o);
  CHECK(run.compute.efficiency == simtest::rel(0.37).epsilon(1e-6));
  CHECK(run.compute_basis.find("measured on 4 devices") != std::string::npos);
  // Taken as one device's step, the exposed communication would count as compute: too slow.
  o.measured_gpus = 1;
  run = st::plan_step(m, two, ax8, red, mats, o);
  CHECK(run.compute.efficiency < 0.37 * 0.95);
  o.measured_gpus = 3;
  CHECK_THROWS_WITH_AS(st::plan_step(m, two, ax8, red, mats, o), doctest::Contains("hold 4 devices, not 3"),
                       p2v::Error);
  // A measurement shorter than the node's communication alone leaves nothing for the compute.
  o.measured_gpus = 4;
  o.measured_step_s = 1e-6;
  CHECK_THROWS_WITH_AS(st::plan_step(m, two, ax8, red, mats, o), doctest::Contains("nothing is left"), p2v::Error);
}

TEST_CASE("every system preset carries device numbers with their datasheet") {
  for (const auto& p : p2v::sim::presets()) {
    CAPTURE(p.name);
    const auto& d = p2v::sim::preset_device(p);
    CHECK(d.node_devices == 8);
    CHECK(d.device.peak_tflops > 0);
    CHECK(d.device.memory_gb > 0);
    CHECK(d.device.efficiency > 0);
    CHECK(d.device.source.find("https://") != std::string::npos);
    // peak_tflops is the table's half-precision tensor number (bf16, or f16 where there is no bf16).
    const auto& t = d.device.peak_tflops_by_dtype;
    const auto half = t.count("bf16") ? t.at("bf16") : t.at("f16");
    CHECK(d.device.peak_tflops == half);
    CHECK(t.at("f32") < half);
  }
}
