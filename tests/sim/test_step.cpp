// p2v step (issue 15): model files, the event simulation by hand, the DP against brute force,
// the per-flow cap, and the bounds max(compute, sync) <= step <= compute + sync on every bundled
// model and preset.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/step.hpp"

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
  s.device = Device{"x", 10, 0.5, 0};
  const auto lc = st::layer_costs(m, s, 2, 1, false);
  CHECK(lc[0].fwd_s == doctest::Approx(1e9 / 5e12));
  CHECK(lc[0].bwd_s == doctest::Approx(2e9 / 5e12));
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
  CHECK(r.buckets[0].end_s == doctest::Approx(e0));
  CHECK(r.buckets[1].start_s == doctest::Approx(std::max(7e-3, e0)));
  CHECK(r.step_s == doctest::Approx(std::max(9e-3, e2)));
  CHECK(r.compute_s == doctest::Approx(9e-3));
  CHECK(r.sync_s == doctest::Approx(c2 + 2 * c1));
  CHECK(r.autosync_s == doctest::Approx(std::max(9e-3, c2 + 2 * c1)));
  CHECK(r.exposed_comm_s == doctest::Approx(r.step_s - 9e-3));
}

TEST_CASE("step: ZeRO gathers parameters before the forward pass, one bucket ahead") {
  Fixture fx;
  st::SyncCosts costs(fx.sim, {fx.rs_ag}, sim::Algorithm::Ring, true);
  const double rs = costs.sync(0, 1e6), ag = costs.gather(0, 1e6);
  sim::CostOptions o;
  o.bytes = 1e6;
  CHECK(rs + ag == doctest::Approx(fx.sim.time(fx.rs_ag, o)));
  CHECK(rs > 0);
  CHECK(ag > 0);
  const auto lc = layers({1e-3, 1e-3}, {1e6, 1e6});
  const auto r = st::simulate_step(lc, st::ddp_buckets(lc, 1e6), {0, 0}, costs, 0);
  // Forward order: bucket 1 (layer 0) gathered first, then bucket 0 (layer 1) while layer 0 computes.
  CHECK(r.buckets[1].gather_start_s == 0);
  CHECK(r.layer_fwd_start[0] == doctest::Approx(ag));
  CHECK(r.buckets[0].gather_start_s == doctest::Approx(ag));
  CHECK(r.layer_fwd_start[1] == doctest::Approx(std::max(ag + 1e-3, 2 * ag)));
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
  CHECK(dp == doctest::Approx(best));
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
  CHECK(capped.time(one, o) == doctest::Approx(4 * free.time(one, o)).epsilon(1e-3));
  // Two concurrent flows: each gets min(cap, share) = 2 GB/s, so two rings take as long as one.
  const LoweredProgram two = sim::single_allreduce({{0, 2}, {1, 3}});
  CHECK(capped.time(two, o) == doctest::Approx(capped.time(one, o)));
  CHECK(free.time(two, o) == doctest::Approx(2 * free.time(one, o)).epsilon(1e-3));
  const auto g4 = load_system_file(simtest::example("g4dn-4node.json"));
  CHECK(g4.levels[0].interconnect->flow_bandwidth_gbps == 1.25);
  CHECK(system_to_json(g4).find("flow_bandwidth_gbps") != std::string::npos);
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
          CHECK((*x)["exposed_comm_s"].get<double>() == doctest::Approx(step - comp));
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
  auto r =
      simtest::run("step --model " + model_path("bert-base.json") + " --system node=4,gpu=16 --axes 4,16 --reduce 0");
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
