// The simulator's file formats (docs/formats.md "Simulator"): what simulate, step and
// calibrate write reads back equal, and the strict readers refuse unknown, missing and mistyped
// fields with a message naming the field's path.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/sim/calibrate.hpp"
#include "p2v/sim/nccl_model.hpp"
#include "p2v/sim/simulate.hpp"
#include "p2v/sim/step_plan.hpp"
#include "p2v/sim/topology.hpp"

using namespace p2v::engine;
namespace sim = p2v::sim;
namespace st = p2v::sim::step;
using nlohmann::json;

namespace {

// The message of the p2v::Error f throws ("" when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const p2v::Error& e) {
    return e.what();
  }
  return "";
}

// 2 nodes x 4 GPUs, both axes ranked, every program recorded with its steps (as --json does).
sim::SimulateRun simulate_small(sim::SimModel model, const std::string& measurements = "") {
  const System s = simtest::two_level(2, 4, 25, 5, 150, 1);
  sim::SimulateOptions o;
  o.model = model;
  o.cost.bytes = 1e8;
  o.program_steps = true;
  o.links = 2;
  o.measurements = measurements;
  const std::vector<int> axes{2, 4};
  return sim::simulate(s, axes, {0}, enumerate_matrices(s.cardinalities(), axes), o);
}

// The strict reader's message on `j` after `edit`.
std::string simulate_error(json j, const std::function<void(json&)>& edit) {
  edit(j);
  return error_of([&] { sim::parse_simulate_report(j.dump(), "sim.json"); });
}

}  // namespace

TEST_CASE("formats: simulate --json round-trips (graph and level model)") {
  const std::string csv = "/tmp/p2v_test_formats_meas.csv";
  {
    std::ofstream m(csv);
    m << "collective,groups,bytes,seconds\nAllReduce,0-3|4-7,1e8,0.01\nAllReduce,0 4,1e6,0.0004\n";
  }
  for (const auto model : {sim::SimModel::Graph, sim::SimModel::Levels}) {
    CAPTURE(sim::to_string(model));
    const auto run = simulate_small(model, model == sim::SimModel::Graph ? csv : "");
    const auto& r = run.report;
    REQUIRE(r.results.size() > 1);
    REQUIRE(!r.results[0].programs.empty());
    CHECK(!r.results[0].programs[0].steps.empty());
    CHECK(r.measurements.has_value() == (model == sim::SimModel::Graph));
    const json j = sim::to_json(r);
    CHECK(j.at("format") == "p2v-simulate/1");
    CHECK(!j.contains("version"));
    const auto back = sim::parse_simulate_report(j.dump(2), "sim.json");
    CHECK(sim::same_report(r, back));
    CHECK(sim::to_json(back) == j);
    // A changed value is seen.
    auto other = back;
    other.results[0].programs[0].time_s *= 2;
    CHECK_FALSE(sim::same_report(r, other));
  }
}

TEST_CASE("formats: the simulate reader refuses unknown, missing and mistyped fields by path") {
  const json j = sim::to_json(simulate_small(sim::SimModel::Graph).report);
  CHECK(simulate_error(j, [](json&) {}).empty());
  auto e = simulate_error(j, [](json& x) { x["results"][1]["programs"][0]["stepz"] = 1; });
  CHECK(e.find("sim.json: results[1].programs[0].stepz: unknown field") != std::string::npos);
  e = simulate_error(j, [](json& x) { x["results"][0].erase("allreduce_s"); });
  CHECK(e == "sim.json: results[0].allreduce_s: missing");
  e = simulate_error(j, [](json& x) { x["results"][0]["programs"][0]["steps"][0]["time_s"] = "fast"; });
  CHECK(e.find("results[0].programs[0].steps[0].time_s: expected a number, got \"fast\"") != std::string::npos);
  e = simulate_error(j, [](json& x) { x["results"][0]["allreduce_steps"][0]["collective"] = "AllToAll"; });
  CHECK(e.find("results[0].allreduce_steps[0].collective: unknown collective 'AllToAll'") != std::string::npos);
  e = simulate_error(j, [](json& x) { x["results"][0]["allreduce_steps"][0]["bottleneck"]["busy"] = 0; });
  CHECK(e.find("results[0].allreduce_steps[0].bottleneck.busy: unknown field") != std::string::npos);
  e = simulate_error(j, [](json& x) { x["format"] = "p2v-simulate/2"; });
  CHECK(e.find("sim.json: format: \"p2v-simulate/2\" is not a version this p2v reads") != std::string::npos);
  e = simulate_error(j, [](json& x) { x.erase("format"); });
  CHECK(e == "sim.json: format: missing");
  e = simulate_error(j, [](json& x) { x["format"] = "p2v-step/1"; });
  CHECK(e.find("format: expected \"p2v-simulate/1\"") != std::string::npos);
  e = simulate_error(j, [](json& x) { x["algo"] = "bogus"; });
  CHECK(e.find("algo: expected ring, tree, auto, nvls, nvls-tree or collnet") != std::string::npos);
  // A level-model field in a graph-model report is unknown.
  e = simulate_error(j, [](json& x) { x["results"][0]["shape"] = "x"; });
  CHECK(e.find("results[0].shape: unknown field") != std::string::npos);
  e = simulate_error(j, [](json& x) { x["model"] = "levels"; });
  CHECK(!e.empty());
  CHECK(error_of([] { sim::parse_simulate_report("[1,2]", "a.json"); }).find("a.json") != std::string::npos);
  CHECK(error_of([] { sim::parse_simulate_report("{", "a.json"); }).find("malformed JSON") != std::string::npos);
}

TEST_CASE("formats: p2v simulate --json is read by the strict reader") {
  const std::string out = "/tmp/p2v_test_formats_sim.json";
  const auto r = simtest::run("simulate --system " + simtest::example("a100-2node.json") +
                              " --axes 2,16 --reduce 0 --json --top 2 > " + out);
  REQUIRE(r.code == 0);
  const auto rep = sim::load_simulate_report(out);
  CHECK(rep.system.name == "a100-2node");
  CHECK(rep.results.size() > 1);
  for (const auto& m : rep.results) CHECK(m.programs.size() <= 2);
  std::ifstream f(out);
  CHECK(sim::to_json(rep) == json::parse(f));  // nothing the command writes is lost on reading
}

TEST_CASE("formats: step --json round-trips and is strict") {
  const auto model = st::load_model_file(std::string(P2V_SOURCE_DIR) + "/examples/models/bert-base.json");
  const System s = load_system_file(simtest::example("a100-2node.json"));
  for (const bool zero : {false, true}) {
    st::StepOptions o;
    o.zero = zero;
    o.candidates = 2;
    const std::vector<int> axes{32}, reduce{0};
    const auto run = st::plan_step(model, s, axes, reduce, enumerate_matrices(s.cardinalities(), axes), o);
    const auto rep = st::make_report(model, s, axes, reduce, o, run);
    REQUIRE(rep.chosen.has_value());
    REQUIRE(!rep.fixed.buckets.empty());
    const json j = st::to_json(rep);
    CHECK(j.at("format") == "p2v-step/1");
    CHECK(st::parse_step_report(j.dump(), "step.json") == rep);
    json bad = j;
    bad["chosen"]["buckets"][0]["layer"] = 1;
    CHECK(error_of([&] {
            st::parse_step_report(bad.dump(), "step.json");
          }).find("step.json: chosen.buckets[0].layer: unknown field") != std::string::npos);
    bad = j;
    bad["placements"][0].erase("fixed_step_s");
    CHECK(error_of([&] { st::parse_step_report(bad.dump(), "step.json"); }) ==
          "step.json: placements[0].fixed_step_s: missing");
    bad = j;
    bad.erase("chosen");  // "gain" without "chosen" is not part of the format
    CHECK(error_of([&] { st::parse_step_report(bad.dump(), "step.json"); }).find("gain: unknown field") !=
          std::string::npos);
  }
}

TEST_CASE("formats: calibrate --json round-trips and is strict") {
  const std::string csv = "/tmp/p2v_test_formats_cal.csv";
  {
    std::ofstream m(csv);
    m << "collective,groups,bytes,seconds\nAllReduce,0-15|16-31,1e9,0.02\nAllReduce,0 16,1e9,0.5\n"
         "AllReduce,0 16,1e6,0.0006\nAllReduce,0-15,1e6,0.00005\n";
  }
  const System s = load_system_file(simtest::example("a100-2node.json"));
  sim::Simulator simulator(s);
  const auto ms = sim::load_measurements(csv, 32);
  const auto cal = sim::calibrate(simulator, ms, sim::Algorithm::Ring);
  const auto rep =
      sim::calibration_report(cal, ms.size(), sim::calibrated_system_json(s, simulator.topology(), "test"), "out.json");
  const json j = sim::to_json(rep);
  CHECK(j.at("format") == "p2v-calibrate/1");
  CHECK(sim::parse_calibration_report(j.dump(), "cal.json") == rep);
  json bad = j;
  bad["classes"][0]["bandwidth"] = 1;
  CHECK(error_of([&] {
          sim::parse_calibration_report(bad.dump(), "cal.json");
        }).find("cal.json: classes[0].bandwidth: unknown field") != std::string::npos);
  bad = j;
  bad["system"] = 3;
  CHECK(error_of([&] {
          sim::parse_calibration_report(bad.dump(), "cal.json");
        }).find("cal.json: system: expected a system object") != std::string::npos);
  // Written under the names that say the unit; the deprecated names still read, both at once refused.
  CHECK(j.dump().find("bandwidth_GBps_before") != std::string::npos);
  CHECK(j.dump().find("_gbps") == std::string::npos);
  json old = j;
  for (auto& c : old["classes"]) {
    c["bandwidth_gbps_before"] = c["bandwidth_GBps_before"];
    c["bandwidth_gbps_after"] = c["bandwidth_GBps_after"];
    c.erase("bandwidth_GBps_before");
    c.erase("bandwidth_GBps_after");
  }
  CHECK(sim::parse_calibration_report(old.dump(), "cal.json") == rep);
  bad = j;
  bad["classes"][0]["bandwidth_gbps_after"] = 1;
  CHECK(error_of([&] {
          sim::parse_calibration_report(bad.dump(), "cal.json");
        }).find("classes[0].bandwidth_gbps_after: give \"bandwidth_GBps_after\" or its deprecated name") !=
        std::string::npos);
}

TEST_CASE("formats: bandwidths are written as _GBps; the deprecated _gbps names are read, never both") {
  // A system file in the old vocabulary: interconnect, topology link and NCCL level.
  const std::string old_names = R"({"name": "t", "levels": [
      {"name": "node", "cardinality": 2, "interconnect": {"kind": "nic", "bandwidth_gbps": 12.5, "latency_us": 5,
                                                          "flow_bandwidth_gbps": 1.25}},
      {"name": "gpu", "cardinality": 2, "interconnect": {"kind": "switch", "bandwidth_gbps": 100, "latency_us": 1}}],
    "topology": {"scope": "node", "uplink": "nic", "vertices": [{"name": "nic", "kind": "nic"}],
                 "links": [{"a": "gpu0", "b": "nic", "bandwidth_gbps": 7}, {"a": "gpu1", "b": "nic", "bandwidth_GBps": 7}]},
    "nccl": {"levels": {"node": {"bus_bw_gbps": 11, "nics": 1, "nic_gbps": 12.5}}}})";
  const System s = parse_system_json(old_names, "old.json");
  CHECK(s.levels[0].interconnect->bandwidth_gbps == 12.5);
  CHECK(s.levels[0].interconnect->flow_bandwidth_gbps == 1.25);
  CHECK(sim::nccl_params(s).level("node")->bus_bw_gbps == 11);
  CHECK(sim::nccl_params(s).level("node")->nic_gbps == 12.5);
  CHECK(error_of([&] { sim::Topology::build(s); }).empty());
  // Written back: only the new names, and read again to the same system.
  const std::string written = system_to_json(s);
  CHECK(written.find("gbps") == std::string::npos);
  for (const char* k : {"\"bandwidth_GBps\"", "\"flow_bandwidth_GBps\"", "\"bus_bw_GBps\"", "\"nic_GBps\""})
    CHECK(written.find(k) != std::string::npos);
  const System t = parse_system_json(written, "new.json");
  CHECK(system_to_json(t) == written);
  CHECK(sim::Topology::build(t).edges().size() == sim::Topology::build(s).edges().size());
  CHECK(sim::nccl_params(t).level("node")->bus_bw_gbps == 11);
  // Both names in one object: refused, by path, naming both.
  auto both = [&](const std::string& from, const std::string& to) {
    std::string x = old_names;
    x.replace(x.find(from), from.size(), to);
    System b = parse_system_json(x, "both.json");
    sim::Topology::build(b);
    sim::nccl_params(b);
  };
  CHECK(error_of([&] {
          both(R"("flow_bandwidth_gbps": 1.25)", R"("flow_bandwidth_gbps": 1.25, "flow_bandwidth_GBps": 1.25)");
        }).find("levels[0].interconnect.flow_bandwidth_gbps: give \"flow_bandwidth_GBps\" or its deprecated name") !=
        std::string::npos);
  CHECK(error_of([&] {
          both(R"("bandwidth_gbps": 7})", R"("bandwidth_gbps": 7, "bandwidth_GBps": 7})");
        }).find("topology.links[0].bandwidth_gbps: give \"bandwidth_GBps\"") != std::string::npos);
  CHECK(error_of([&] {
          both(R"("nic_gbps": 12.5)", R"("nic_gbps": 12.5, "nic_GBps": 12.5)");
        }).find("nccl.levels.node.nic_gbps: give \"nic_GBps\"") != std::string::npos);
}

TEST_CASE("formats: a system file's topology section is read strictly") {
  System s;
  s.name = "t";
  s.levels.push_back({"node", 2, Interconnect{LinkKind::Nic, 1, 1}});
  s.levels.push_back({"gpu", 2, Interconnect{LinkKind::Switch, 10, 1}});
  const std::string ok =
      R"({"scope":"node","uplink":"nic","vertices":[{"name":"nic","kind":"nic"}],"links":[)"
      R"({"a":"gpu0","b":"nic","bandwidth_gbps":1,"latency_us":2},{"a":"gpu1","b":"nic","bandwidth_gbps":1}]})";
  s.topology = json::parse(ok);
  CHECK(error_of([&] { sim::Topology::build(s); }).empty());
  auto err = [&](const std::string& from, const std::string& to) {
    std::string t = ok;
    t.replace(t.find(from), from.size(), to);
    s.topology = json::parse(t);
    return error_of([&] { sim::Topology::build(s); });
  };
  // A misspelt latency was silently 0 before; now it is named.
  CHECK(err("\"latency_us\"", "\"latency\"").find("system 't': topology.links[0].latency: unknown field") !=
        std::string::npos);
  CHECK(err("\"kind\":\"nic\"", "\"kind\":\"nic\",\"color\":1").find("topology.vertices[0].color: unknown field") !=
        std::string::npos);
  CHECK(err("\"scope\"", "\"scop\"").find("topology.scope: missing") != std::string::npos);
  CHECK(err("\"bandwidth_gbps\":1,\"latency_us\"", "\"bandwidth_gbps\":-1,\"latency_us\"")
            .find("topology.links[0].bandwidth_gbps: must be a non-negative number") != std::string::npos);
}

TEST_CASE("formats: p2v step --json and p2v calibrate --json are read by the strict readers") {
  const std::string step_out = "/tmp/p2v_test_formats_step.json", cal_out = "/tmp/p2v_test_formats_cal.json";
  auto r = simtest::run("step --model " + std::string(P2V_SOURCE_DIR) + "/examples/models/resnet50.json --system " +
                        simtest::example("a100-2node.json") + " --axes 2,16 --mode zero --json > " + step_out);
  REQUIRE(r.code == 0);
  std::ifstream sf(step_out);
  const std::string step_text((std::istreambuf_iterator<char>(sf)), {});
  const auto step = st::parse_step_report(step_text, step_out);
  CHECK(step.mode == "zero");
  CHECK(step.placements.size() > 1);
  CHECK(st::to_json(step) == json::parse(step_text));
  // The "accuracy" object step --json adds on a preset's own system (informative) is read; it must
  // be an object.
  auto with_acc = json::parse(step_text);
  with_acc["accuracy"] = {{"preset", "dgx-a100"}, {"points", 0}};
  CHECK(st::step_report_from_json(with_acc, "t").mode == "zero");
  with_acc["accuracy"] = 3;
  CHECK_THROWS_WITH_AS(st::step_report_from_json(with_acc, "t"), doctest::Contains("accuracy"), p2v::Error);

  const std::string csv = "/tmp/p2v_test_formats_cal2.csv";
  {
    std::ofstream m(csv);
    m << "collective,groups,bytes,seconds\nAllReduce,0-15|16-31,1e9,0.02\nAllReduce,0 16,1e9,0.5\n";
  }
  r = simtest::run("calibrate --system " + simtest::example("a100-2node.json") + " --measurements " + csv +
                   " --json > " + cal_out);
  REQUIRE(r.code == 0);
  std::ifstream cf(cal_out);
  const std::string cal_text((std::istreambuf_iterator<char>(cf)), {});
  const auto cal = sim::parse_calibration_report(cal_text, cal_out);
  CHECK(cal.measurements == 2);
  CHECK(sim::to_json(cal) == json::parse(cal_text));
}
