// The paper's qualitative results on the bundled A100 and V100 models, calibration, and the
// simulate / explore / calibrate commands end to end.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/sim/calibrate.hpp"
#include "p2v/sim/rank.hpp"

using namespace p2v::engine;
using namespace p2v::sim;

namespace {

MatrixRanking rank(const System& s, std::vector<int> axes, ParallelismMatrix x, std::vector<int> reduce,
                   Algorithm algo = Algorithm::Ring) {
  Simulator sim(s);
  CostOptions o;
  o.algo = algo;
  o.bytes = default_bytes(s);
  ProgramSource programs(s, axes, {});
  return rank_placement(sim, programs, Placement(s.cardinalities(), axes, x, reduce), o);
}

double time_of(const MatrixRanking& r, const std::string& name) {
  for (const auto& p : r.programs)
    if (p.name == name) return p.time_s;
  FAIL("program not found: " << name);
  return 0;
}

const char* kRsArAg = "ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; AllGather@(node,Inside)";
const char* kRArB = "Reduce@(node,Inside) ; AllReduce@(node,Master(root)) ; Broadcast@(node,Inside)";

using simtest::Run;
using simtest::run;

}  // namespace

TEST_CASE("paper: a reduction axis inside one node is best served by one AllReduce there") {
  for (auto algo : {Algorithm::Ring, Algorithm::Auto}) {
    const auto a100 = load_system_file(simtest::example("a100-4node.json"));
    auto r = rank(a100, {4, 16}, {{4, 1}, {1, 16}}, {1}, algo);
    REQUIRE(!r.programs.empty());
    CHECK(r.best_s() == simtest::rel(r.allreduce_s));
    CHECK(r.programs.front().name == "AllReduce@(node,Inside)");
    const auto v100 = load_system_file(simtest::example("v100-4node.json"));
    auto q = rank(v100, {4, 8}, {{4, 1}, {1, 8}}, {1}, algo);
    CHECK(q.best_s() == simtest::rel(q.allreduce_s));
    CHECK(q.programs.front().name == "AllReduce@(node,Inside)");
  }
}

TEST_CASE("paper: across nodes, RS-AR-AG and Reduce-AR-Broadcast beat a single AllReduce") {
  for (const char* f : {"a100-4node.json", "a100-2node.json", "v100-4node.json", "v100-2node.json"}) {
    CAPTURE(f);
    const auto s = load_system_file(simtest::example(f));
    const int nd = static_cast<int>(s.num_devices());
    const int nodes = s.levels[0].cardinality;
    auto r = rank(s, {nd}, {{nodes, nd / nodes}}, {0});
    CHECK(time_of(r, kRsArAg) < r.allreduce_s);
    CHECK(time_of(r, kRArB) < r.allreduce_s);
    CHECK(r.speedup() > 1.2);
    // [4 16]-style placements with the reduction axis spread over nodes and GPUs.
    if (nd == 64) {
      auto q = rank(s, {4, 16}, {{2, 2}, {2, 8}}, {0});
      CHECK(time_of(q, kRsArAg) < q.allreduce_s);
      CHECK(time_of(q, kRArB) < q.allreduce_s);
    }
  }
}

TEST_CASE("paper: placement matters — keeping a reduction inside a node wins") {
  const auto s = load_system_file(simtest::example("a100-4node.json"));
  auto inside = rank(s, {4, 16}, {{1, 4}, {4, 4}}, {0});
  auto across = rank(s, {4, 16}, {{4, 1}, {1, 16}}, {0});
  CHECK(inside.best_s() * 10 < across.best_s());
}

TEST_CASE("calibration recovers perturbed link parameters") {
  const auto truth_sys = load_system_file(simtest::example("a100-2node.json"));
  Simulator truth(truth_sys);
  // The truth: NIC at 6 GB/s, 20 us; NVSwitch at 200 GB/s; 15 us per collective call.
  truth.topology().set_class("node", 6e9, 20e-6);
  truth.topology().set_class("gpu", 200e9, 3e-6);
  truth.topology().set_step_overhead(15e-6);
  std::string csv = "collective,groups,bytes,seconds\n";
  const std::vector<std::pair<std::string, std::string>> cases{{"AllReduce", "0-15|16-31"}, {"AllReduce", "0 16"},
                                                               {"AllReduce", "0-31"},       {"ReduceScatter", "0-15"},
                                                               {"AllGather", "0-7"},        {"Broadcast", "0 16|1 17"}};
  for (const auto& [c, g] : cases)
    for (double b : {1e7, 3e7, 1e8, 1e9}) {
      Measurement m;
      m.step.collective = parse_collective(c);
      m.groups_text = g;
      auto parsed = parse_measurements("collective,groups,bytes,seconds\n" + c + "," + g + ",1,1\n", "x", 32);
      const double t = truth.collective(parsed[0].step, b, Algorithm::Ring).time_s;
      csv += c + "," + g + "," + std::to_string(b) + "," + std::to_string(t) + "\n";
    }
  const auto ms = parse_measurements(csv, "test.csv", 32);
  CHECK(ms.size() == 24);
  Simulator sim(truth_sys);
  const auto cal = calibrate(sim, ms, Algorithm::Ring);
  // Since the NCCL model (docs/simulator.md §2) a call's latency is mostly NCCL's per-protocol tables, which
  // this alpha-beta fit does not touch (their calibration is the "nccl" section's, not done here):
  // the measurements are bandwidth-dominated (>= 10 MB), and the bandwidths are what is
  // recovered, within 5% (the fit assumes time is homogeneous in (alpha, beta), which NCCL's fixed
  // latencies break: before the NCCL model it recovered them within 1%; a fit of the NCCL
  // parameters themselves is not done here).
  CHECK(cal.error_before > 0.1);
  CHECK(cal.error_after < cal.error_before / 2);
  auto [nic_bw, nic_lat] = sim.topology().class_params("node");
  CHECK(nic_bw == simtest::rel(6e9).epsilon(0.05));
  auto [sw_bw, sw_lat] = sim.topology().class_params("gpu");
  CHECK(sw_bw == simtest::rel(200e9).epsilon(0.05));
  // The calibrated system file round-trips through the parser with the new numbers.
  const auto text = calibrated_system_json(truth_sys, sim.topology(), "calibrated");
  const auto back = system_from_json(text, "calibrated");
  CHECK(back.levels[0].interconnect->bandwidth_gbps == simtest::rel(6).epsilon(0.05));
}

TEST_CASE("measurements CSV: errors name the line") {
  CHECK_THROWS_WITH_AS(parse_measurements("collective,groups,bytes,seconds\nAllReduce,0 99,10,1\n", "m.csv", 32),
                       doctest::Contains("m.csv:2"), p2v::Error);
  CHECK_THROWS_AS(parse_measurements("collective,groups,bytes,seconds\nFoo,0 1,10,1\n", "m.csv", 32), p2v::Error);
  CHECK_THROWS_AS(parse_measurements("collective,groups,bytes,seconds\nAllReduce,0 1,-1,1\n", "m.csv", 32), p2v::Error);
  CHECK_THROWS_AS(parse_measurements("collective,groups\n", "m.csv", 32), p2v::Error);
  CHECK_THROWS_AS(parse_measurements("", "m.csv", 32), p2v::Error);
  auto ms =
      parse_measurements("# comment\ncollective,x,groups,bytes,seconds\nReduce,7,\"0,1;2,3\",100,0.5\n", "m.csv", 4);
  REQUIRE(ms.size() == 1);
  CHECK(ms[0].step.groups == Groups{{0, 1}, {2, 3}});
}

TEST_CASE("CLI: simulate --json, explore, calibrate, errors") {
  const std::string a100 = simtest::example("a100-4node.json");
  auto r = run("simulate --system " + a100 + " --axes 4,16 --reduce 1 --json --links 3");
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["results"].size() == 3);
  for (const auto& res : j["results"]) {
    CHECK(res.contains("matrix"));
    CHECK(res["allreduce_s"].get<double>() > 0);
    CHECK(res["best"]["time_s"].get<double>() <= res["allreduce_s"].get<double>() * (1 + 1e-9));
    CHECK(res["programs"].size() == res["num_programs"].get<std::size_t>());
    const auto& p0 = res["programs"][0];
    CHECK(p0["program"] == res["best"]["program"]);
    CHECK(p0["steps"][0].contains("bottleneck"));
    CHECK(p0["steps"][0]["links"].size() <= 3);
  }
  auto t =
      run("simulate --system " + a100 + " --axes 4,16 --reduce 0 --matrix \"2 2;2 8\" --algo auto --top 3 --steps");
  CHECK(t.code == 0);
  CHECK(t.out.find("single AllReduce") != std::string::npos);
  CHECK(t.out.find("speedup") != std::string::npos);

  auto e = run("explore --system " + a100 + " --axes 4,16 --reduction 0@1 --reduction 1@2 --json");
  REQUIRE(e.code == 0);
  auto ej = nlohmann::json::parse(e.out);
  CHECK(ej["results"].size() == 3);
  CHECK(ej["results"][0]["total_s"].get<double>() <= ej["results"][2]["total_s"].get<double>());

  const std::string svg1 = "/tmp/p2v_test_sim_topo.svg", svg2 = "/tmp/p2v_test_sim_rank.svg";
  auto v = run("simulate --system " + simtest::example("v100-2node.json") + " --axes 16 --reduce 0 --svg-topology " +
               svg1 + " --svg-ranking " + svg2);
  CHECK(v.code == 0);
  std::ifstream f1(svg1), f2(svg2);
  std::string s1((std::istreambuf_iterator<char>(f1)), {}), s2((std::istreambuf_iterator<char>(f2)), {});
  CHECK(s1.rfind("<svg", 0) == 0);
  CHECK(s2.find("single AllReduce") != std::string::npos);

  // Calibrate from a CSV, then simulate reports the error on it.
  const std::string csv = "/tmp/p2v_test_sim_meas.csv", out = "/tmp/p2v_test_sim_cal.json";
  {
    std::ofstream m(csv);
    m << "collective,groups,bytes,seconds\nAllReduce,0-15|16-31,1e9,0.02\nAllReduce,0 16,1e9,0.5\n"
         "AllReduce,0 16,1e6,0.0006\nAllReduce,0-15,1e6,0.00005\n";
  }
  auto c = run("calibrate --system " + simtest::example("a100-2node.json") + " --measurements " + csv + " -o " + out);
  CHECK(c.code == 0);
  auto s = run("simulate --system " + out + " --axes 32 --reduce 0 --measurements " + csv);
  CHECK(s.code == 0);
  CHECK(s.out.find("mean |error|") != std::string::npos);

  // Errors: exit 2 with a message, never a crash.
  CHECK(run("simulate --system " + a100 + " --axes 4,16 --reduce 0 --algo bogus").code == 2);
  CHECK(run("simulate --system " + a100 + " --axes 4,16 --reduce 0 --bytes -5").code == 2);
  // Inline systems have no interconnects: a preset fills them, and the output names it.
  const auto inl = run("simulate --system node=4,gpu=16 --axes 4,16 --reduce 0 --top 1");
  CHECK(inl.code == 0);
  CHECK(inl.out.find("interconnects: preset h100") != std::string::npos);
  CHECK(
      run("simulate --system node=4,gpu=16 --axes 4,16 --reduce 0 --preset a100 --top 1").out.find("preset p2-a100") !=
      std::string::npos);
  CHECK(run("simulate --system node=4,gpu=16 --axes 4,16 --reduce 0 --preset b200").code == 2);  // unknown preset
  CHECK(run("simulate --system node=4,gpu=16 --axes 4,16 --reduce 0 --model bogus").code == 2);
  // Above 2048 devices the level model ranks; options that need the graph are refused by name.
  const auto big = run("simulate --system node=1024,gpu=8 --axes 8192 --reduce 0 --top 1");
  CHECK(big.code == 0);
  CHECK(big.out.find("level model") != std::string::npos);
  CHECK(run("simulate --system node=1024,gpu=8 --axes 8192 --reduce 0 --svg-topology /tmp/x.svg").code == 2);
  CHECK(run("explore --system " + a100 + " --axes 4,16").code == 2);
  CHECK(run("explore --system " + a100 + " --axes 4,16 --reduction 5@1").code == 2);
  CHECK(run("calibrate --system " + a100 + " --measurements /nonexistent.csv").code == 2);
}

TEST_CASE("measured programs: parse and rank accuracy") {
  const auto s = load_system_file(simtest::example("a100-4node.json"));
  auto r = rank(s, {4, 16}, {{2, 2}, {2, 8}}, {0});
  REQUIRE(r.programs.size() > 3);
  // Measurements that agree with the prediction's order: top-1 hit, Spearman 1.
  std::string csv = "matrix,program,seconds\n";
  for (std::size_t i = 0; i < 5; ++i)
    csv += "\"2 2;2 8\",\"" + r.programs[i].name + "\"," + std::to_string(1.0 + static_cast<double>(i)) + "\n";
  csv += "\"1 4;4 4\",\"" + r.programs[0].name + "\",0.001\n";  // another matrix: ignored
  csv += "\"2 2;2 8\",\"NotAProgram@(x,Inside)\",0.5\n";
  const auto pm = parse_program_measurements(csv, "pm.csv");
  CHECK(pm.size() == 7);
  auto acc = rank_accuracy(r, pm);
  CHECK(acc.measured == 5);
  CHECK(acc.unmatched == 1);
  CHECK(acc.predicted_rank_of_best == 1);
  CHECK(acc.best_measured == r.programs[0].name);
  CHECK(acc.spearman > 0.9);  // < 1 only because some predicted times tie
  CHECK(acc.measured_s[2] == simtest::rel(3.0));
  CHECK_THROWS_AS(parse_program_measurements("program\nfoo\n", "pm.csv"), p2v::Error);
  CHECK_THROWS_AS(parse_program_measurements("program,seconds\nfoo,abc\n", "pm.csv"), p2v::Error);
}
