// The level model (docs/shape.md §7) against the graph simulator: the same time for every program
// of every placement on systems both can price, for ring, tree and auto.
#include <doctest/doctest.h>

#include "helpers.hpp"

#include <cmath>

#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/levels.hpp"

using namespace p2v::engine;
namespace sim = p2v::sim;

namespace {

void compare_models(System sys, const std::vector<int>& axes, const std::vector<int>& reduce) {
  if (sys.levels.back().interconnect == std::nullopt) {
    sim::apply_preset(sys, sim::find_preset("h100-oversub"));
    // With network levels above the nodes (racks, pods) the level model charges the NVLS tree's
    // inter-node traffic to every upper uplink it could cross (an upper bound; docs/simulator.md),
    // the graph model only to those its tree edges cross: compare without NVLS there.
    if (sys.levels.size() > 2) sys.nccl["nvls"] = false;
  }
  const sim::Simulator graph(sys);
  const sim::LevelSimulator levels(sys);
  const auto names = sys.level_names();
  int programs = 0;
  for (const auto& x : enumerate_matrices(sys.cardinalities(), axes)) {
    const Placement p(sys.cardinalities(), axes, x, reduce);
    const Shape s = make_shape(sys.cardinalities(), names, x, p.reduce(), HierarchyKind::ReductionAxes);
    const SynthResult r = synthesize_shape(s, SynthOptions{});
    for (auto algo : {sim::Algorithm::Ring, sim::Algorithm::Tree, sim::Algorithm::Auto, sim::Algorithm::Nvls}) {
      sim::CostOptions o;
      o.algo = algo;
      o.bytes = 1 << 26;
      CAPTURE(format_matrix(x));
      const std::string algo_name = sim::to_string(algo);
      CAPTURE(algo_name);
      const double g0 = graph.time(sim::single_allreduce(p.reduction_groups()), o);
      CHECK(levels.allreduce_time(s, o) == simtest::rel(g0).epsilon(1e-9));
      for (const auto& prog : r.programs) {
        CAPTURE(program_name(r, prog));
        std::vector<Collective> cs;
        for (int i : prog) cs.push_back(r.instructions[i].collective);
        const double lt = levels.simulate(s, cs, program_patterns(s, r, prog), o).time_s;
        const double gt = graph.time(lower_shape_program(s, r, prog), o);
        CHECK(lt == simtest::rel(gt).epsilon(1e-9));
        ++programs;
      }
    }
  }
  CHECK(programs > 0);
}

}  // namespace

TEST_CASE("level model = graph model: bundled A100 systems, every placement and program") {
  for (int red : {0, 1})
    compare_models(load_system_file(P2V_SOURCE_DIR "/examples/systems/a100-4node.json"), {4, 16}, {red});
  compare_models(load_system_file(P2V_SOURCE_DIR "/examples/systems/a100-2node.json"), {2, 16}, {0});
  // NVLS, NVLS tree (and their pick) on H100 nodes.
  System h = parse_system_arg("node=4,gpu=4");
  sim::apply_preset(h, sim::find_preset("dgx-h100"));
  compare_models(h, {4, 4}, {0});
  compare_models(h, {4, 4}, {1});
}

TEST_CASE("level model = graph model: three- and four-level systems with oversubscribed uplinks") {
  compare_models(parse_system_arg("rack=3,node=2,gpu=4"), {24}, {0});
  compare_models(parse_system_arg("rack=3,node=2,gpu=4"), {6, 4}, {1});
  compare_models(parse_system_arg("pod=2,rack=3,node=2,gpu=2"), {4, 6}, {0, 1});
}

TEST_CASE("level model = graph model: per-flow caps (AWS g4dn nodes) and one GPU per node (TITAN X)") {
  compare_models(load_system_file(P2V_SOURCE_DIR "/examples/systems/g4dn-4node.json"), {16}, {0});
  compare_models(load_system_file(P2V_SOURCE_DIR "/examples/systems/g4dn-4node.json"), {4, 4}, {1});
  compare_models(load_system_file(P2V_SOURCE_DIR "/examples/systems/titanx-16node.json"), {16}, {0});
}

TEST_CASE("presets fill inline systems; unknown presets and missing interconnects are named") {
  System s = parse_system_arg("pod=16,rack=32,node=32,gpu=8");
  CHECK_THROWS_WITH_AS(sim::LevelSimulator{s}, doctest::Contains("--preset"), p2v::Error);
  CHECK(sim::apply_preset(s, sim::find_preset("h100")) == 4);
  CHECK(s.levels[3].interconnect->bandwidth_gbps == 450);
  CHECK(s.levels[2].interconnect->bandwidth_gbps == 400);
  CHECK(s.levels[0].interconnect->bandwidth_gbps == 400);  // beyond the list: its last entry
  CHECK_THROWS_WITH_AS(sim::find_preset("b200"), doctest::Contains("h100"), p2v::Error);
  // 131,072 devices: priced from per-level counts.
  const sim::LevelSimulator lv(s);
  const Shape sh = make_shape(s.cardinalities(), s.level_names(), {{16, 32, 32, 8}}, {0}, HierarchyKind::ReductionAxes);
  sim::CostOptions o;
  o.bytes = 1 << 30;
  const double t = lv.allreduce_time(sh, o);
  // Ring over 131,072 GPUs in device order: every node's NIC carries 2(p-1)/p of 1 GiB.
  const double p = 131072;
  CHECK(t > 2 * (p - 1) / p * (1 << 30) / 400e9);
}

TEST_CASE("presets on part of each node: the node level gets the NICs of the GPUs in use") {
  auto node_bw = [](const std::string& shape, const std::string& preset, std::string* note) {
    System s = parse_system_arg(shape);
    sim::apply_preset(s, sim::find_preset(preset), note);
    return s.levels[0].interconnect->bandwidth_gbps;
  };
  std::string note;
  const double whole = node_bw("node=2,gpu=8", "dgx-h100", &note);
  CHECK(note.empty());
  CHECK(node_bw("node=2,gpu=1", "dgx-h100", &note) == doctest::Approx(whole / 8));
  CHECK(note == "1 of the node's 8 GPUs in use: 1 of its 8 NICs, 48 GB/s per node");
  CHECK(node_bw("node=2,gpu=4", "dgx-h100", nullptr) == doctest::Approx(whole / 2));
  // p5: 4 EFA NICs per GPU (32 for 8); p4d: one NIC for two GPUs (4 for 8), rounded up.
  CHECK(node_bw("node=2,gpu=1", "p5", nullptr) == doctest::Approx(node_bw("node=2,gpu=8", "p5", nullptr) / 8));
  CHECK(node_bw("node=2,gpu=1", "p4d", nullptr) == doctest::Approx(node_bw("node=2,gpu=8", "p4d", nullptr) / 4));
  CHECK(node_bw("node=2,gpu=3", "p4d", nullptr) == doctest::Approx(node_bw("node=2,gpu=8", "p4d", nullptr) / 2));
  // The "nccl" section records the NICs in use; a preset without a NIC count (h100) is not scaled.
  System s = parse_system_arg("node=2,gpu=2");
  sim::apply_preset(s, sim::find_preset("dgx-a100"));
  CHECK(s.nccl.at("levels").at("node").at("nics") == 2);
  CHECK(node_bw("node=2,gpu=1", "h100", nullptr) == node_bw("node=2,gpu=8", "h100", nullptr));
  // Per node is what one instance of the first network level holds: a level of one instance inside
  // it counts, and a level above it is not scaled again.
  CHECK(node_bw("node=10,socket=1,gpu=2", "dgx-h100", &note) == doctest::Approx(whole / 4));
  CHECK(note == "2 of the node's 8 GPUs in use: 2 of its 8 NICs, 96 GB/s per node");
  System r = parse_system_arg("rack=2,node=2,gpu=4");
  sim::apply_preset(r, sim::find_preset("dgx-h100"));
  CHECK(r.levels[1].interconnect->bandwidth_gbps == doctest::Approx(whole / 2));
  CHECK(r.levels[0].interconnect->bandwidth_gbps == doctest::Approx(whole));
  // A Preset a caller builds (not in the table) fills as before, unscaled.
  sim::Preset mine = sim::find_preset("dgx-h100");
  mine.name = "mine";
  System m = parse_system_arg("node=2,gpu=1");
  sim::apply_preset(m, mine);
  CHECK(m.levels[0].interconnect->bandwidth_gbps == whole);
}
