// Topology graph and cost model: hand-computed costs and monotonicity.
#include <doctest/doctest.h>

#include <cmath>

#include "helpers.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/rank.hpp"
#include "p2v/sim/topology.hpp"

using namespace p2v::engine;
using namespace p2v::sim;

TEST_CASE("topology: per-level tree of stars") {
  auto s = simtest::two_level(4, 16, 8, 5, 270, 1);
  auto t = Topology::build(s);
  CHECK(t.num_devices() == 64);
  // 64 devices + 4 node switches + 1 network hub; 64 + 4 links.
  CHECK(t.vertices().size() == 69);
  CHECK(t.edges().size() == 2 * 68);
  CHECK(t.route(0, 1).size() == 2);   // gpu -> switch -> gpu
  CHECK(t.route(0, 16).size() == 4);  // gpu -> switch -> net -> switch -> gpu
  CHECK(t.route(5, 5).empty());
  CHECK(t.route_latency(0, 1) == simtest::rel(1e-6));
  CHECK(t.route_latency(0, 16) == simtest::rel(6e-6));
  CHECK(t.node_of(17) == 1);
  CHECK(t.edge_name(t.route(0, 16)[1]) == "node0:switch->root:nic");
}

TEST_CASE("topology: explicit V100 section (ring + PCIe + QPI + NIC)") {
  auto t = Topology::build(load_system_file(simtest::example("v100-2node.json")));
  CHECK(t.explicit_section());
  CHECK(t.num_devices() == 16);
  // Ring neighbours: one NVLink hop.
  REQUIRE(t.route(0, 1).size() == 1);
  CHECK(t.edges()[static_cast<std::size_t>(t.route(0, 1)[0])].kind == "nvlink");
  CHECK(t.route(7, 0).size() == 1);
  // GPUs do not forward: gpu0 -> gpu2 goes through the PCIe switch.
  REQUIRE(t.route(0, 2).size() == 2);
  CHECK(t.edge_name(t.route(0, 2)[0]) == "node0/gpu0->node0/pcie0");
  // Across CPUs: gpu0 -> pcie0 -> cpu0 -> cpu1 -> pcie1 -> gpu5.
  CHECK(t.route(0, 5).size() == 5);
  // Across nodes through the NIC.
  bool via_nic = false;
  for (int e : t.route(0, 8)) via_nic |= t.edge_name(e) == "node0/nic->root:nic";
  CHECK(via_nic);
}

TEST_CASE("topology: errors") {
  System s;
  s.name = "bad";
  s.levels.push_back({"node", 2, std::nullopt});
  s.levels.push_back({"gpu", 2, Interconnect{LinkKind::Switch, 10, 1}});
  CHECK_THROWS_AS(Topology::build(s), p2v::Error);
  s.levels[0].interconnect = Interconnect{LinkKind::Nic, 1, 1};
  s.topology =
      nlohmann::json::parse(R"({"scope":"node","uplink":"nic","links":[{"a":"gpu0","b":"gpu9","bandwidth_gbps":1}]})");
  CHECK_THROWS_AS(Topology::build(s), p2v::Error);
  s.topology = nlohmann::json::parse(
      R"({"scope":"node","uplink":"nic","vertices":[{"name":"nic"}],"links":[{"a":"gpu0","b":"nic","bandwidth_gbps":1}]})");
  CHECK_THROWS_AS(Topology::build(s), p2v::Error);  // gpu1 unreachable
  s.topology = nlohmann::json::parse(
      R"({"scope":"node","uplink":"nic","vertices":[{"name":"nic"}],"links":[{"a":"gpu0","b":"nic","bandwidth_gbps":1},{"a":"gpu1","b":"nic","bandwidth_gbps":1}]})");
  CHECK_NOTHROW(Topology::build(s));
  s.topology = nlohmann::json::parse(R"({"scope":"rack","links":[]})");
  CHECK_THROWS_AS(Topology::build(s), p2v::Error);
}

TEST_CASE("cost: one ring in one switch: the alpha-beta limit of ring/Simple (hand-computed)") {
  // 4 GPUs on one 100 GB/s switch; AllReduce of 1e9 bytes, NCCL's ring with the Simple protocol,
  // per-hop latency 2 us (the section's hop_latency_us), no launch overhead.
  System s;
  s.name = "one-switch";
  s.levels.push_back({"gpu", 4, Interconnect{LinkKind::Switch, 100, 2}});
  s.nccl = nlohmann::json::parse(R"({"launch_us": 0, "levels": {"gpu": {"hop_latency_us": {"simple": 2}}}})");
  Simulator sim(s);
  CostOptions o;
  o.bytes = 1e9;
  o.algo = Algorithm::Ring;
  o.proto = Protocol::Simple;
  const LoweredProgram prog{{Collective::AllReduce, {{0, 1, 2, 3}}}};
  const auto pc = sim.simulate(prog, o);
  // NCCL's ring Simple base latency (8.4 us) + 2(p-1) = 6 hops of 2 us + 6 rounds of n/p = 250 MB
  // over 100 GB/s: the alpha-beta formula of docs/model.md §8 with alpha = 2 us, beta = 1/100 GB/s, plus
  // NCCL's fixed base latency.
  const double base = 8.4e-6;
  CHECK(pc.time_s == simtest::rel(base + 2 * 3 * 2e-6 + 2.0 * 3 / 4 * 1e9 / 100e9).epsilon(1e-12));
  REQUIRE(pc.steps.size() == 1);
  CHECK(pc.steps[0].algo == Algorithm::Ring);
  CHECK(pc.steps[0].proto == Protocol::Simple);
  CHECK(pc.steps[0].bandwidth_s == simtest::rel(1.5e9 / 100e9));
  CHECK(pc.steps[0].bottleneck_bytes == simtest::rel(1.5e9));
  CHECK(pc.steps[0].busbw_gbps == simtest::rel(1.5e9 / pc.time_s / 1e9).epsilon(1e-9));
  // At this size auto picks the same (ring, Simple): the model reduces to alpha-beta there.
  CostOptions a;
  a.bytes = 1e9;
  CHECK(sim.time(prog, a) == simtest::rel(pc.time_s));
  // ReduceScatter then AllGather: the AllReduce's bandwidth and hops, but two calls (two base latencies).
  const LoweredProgram rsag{{Collective::ReduceScatter, {{0, 1, 2, 3}}}, {Collective::AllGather, {{0, 1, 2, 3}}}};
  CHECK(sim.time(rsag, o) == simtest::rel(pc.time_s + base));
  // Reduce and Broadcast: pipelined chains, n bytes per hop, nsteps = p = 4 hops (tuning.cc).
  const LoweredProgram rb{{Collective::Reduce, {{0, 1, 2, 3}}}, {Collective::Broadcast, {{0, 1, 2, 3}}}};
  CHECK(sim.time(rb, o) == simtest::rel(2 * (1e9 / 100e9 + base + 4 * 2e-6)));
  // The launch overhead is paid per call.
  s.nccl["launch_us"] = 5;
  CHECK(Simulator(s).time(rsag, o) == simtest::rel(sim.time(rsag, o) + 2 * 5e-6));
  // After ReduceScatter each device holds a quarter.
  std::vector<double> frac(4, 1.0);
  sim.step({Collective::ReduceScatter, {{0, 1, 2, 3}}}, 1e9, frac, Algorithm::Ring, false);
  CHECK(frac[2] == simtest::rel(0.25));
}

TEST_CASE("cost: 16 parallel groups through one NIC (hand-computed)") {
  auto s = simtest::two_level(4, 16, 8, 5, 270, 1);
  s.nccl = nlohmann::json::parse(R"({"launch_us": 0})");
  Simulator sim(s);
  Groups g;
  for (int i = 0; i < 16; ++i) g.push_back({i, 16 + i, 32 + i, 48 + i});
  CostOptions o;
  o.bytes = 1e9;
  o.algo = Algorithm::Ring;
  o.proto = Protocol::Simple;
  const auto pc = sim.simulate({{Collective::AllReduce, g}}, o);
  // Each node's NIC carries one flow of every group in every round: 16 * n/4 per round, 6 rounds,
  // 8 GB/s. Latency (NCCL, one rank per node): 6 network steps of the tree's Simple net latency
  // (14 us) + the network's 5 us twice (Simple flush), base 8.4 us, x 1.4 (multi-node ring plateau).
  CHECK(pc.steps[0].bandwidth_s == simtest::rel(6 * 16 * 0.25e9 / 8e9).epsilon(1e-12));
  CHECK(pc.steps[0].latency_s == simtest::rel((8.4 + 6 * (14 + 2 * 5)) * 1.4 * 1e-6));
  CHECK(pc.steps[0].nodes == 4);
  CHECK(pc.steps[0].bottleneck_bytes == simtest::rel(24e9));
  CHECK(sim.topology().edge_name(pc.steps[0].bottleneck_edge).find("root:nic") != std::string::npos);
  // One group alone is 16 times less bandwidth-bound.
  const auto one = sim.time({{Collective::AllReduce, {{0, 16, 32, 48}}}}, o);
  CHECK(one == simtest::rel(6 * 0.25e9 / 8e9 + pc.steps[0].latency_s));
  // The default bytes: 2^29 x 4 nodes float32 = 8 GiB.
  CHECK(default_bytes(s) == simtest::rel(8.0 * 1024 * 1024 * 1024));
}

TEST_CASE("cost: tree AllReduce and NCCL's pick") {
  auto s = simtest::two_level(4, 16, 8, 5, 270, 1);
  Simulator sim(s);
  Groups all{{}};
  for (int d = 0; d < 64; ++d) all[0].push_back(d);
  std::vector<double> frac(64, 1.0);
  // Large message: ring, Simple; tiny message: tree with LL (fewer, cheaper latencies).
  auto big = sim.step({Collective::AllReduce, all}, 1e9, frac, Algorithm::Auto, false);
  auto small = sim.step({Collective::AllReduce, all}, 1e3, frac, Algorithm::Auto, false);
  CHECK(small.nccl_pick == Algorithm::Tree);
  CHECK(small.algo == Algorithm::Tree);
  CHECK(small.proto == Protocol::LL);
  CHECK(big.algo == Algorithm::Ring);  // NCCL credits the tree with the ring's bandwidth x .92
  CHECK(big.proto == Protocol::Simple);
  auto tr = sim.step({Collective::AllReduce, all}, 1e9, frac, Algorithm::Tree, false);
  CHECK(tr.algo == Algorithm::Tree);
  // Non-AllReduce collectives have no tree in NCCL.
  auto rs = sim.step({Collective::ReduceScatter, all}, 1e9, frac, Algorithm::Tree, false);
  CHECK(rs.algo == Algorithm::Ring);
}

namespace {
// Every program of every matrix of a problem, lowered.
std::vector<LoweredProgram> programs_of(const System& s, std::vector<int> axes, std::vector<int> reduce) {
  std::vector<LoweredProgram> out;
  const std::vector<std::string> names = s.level_names();
  for (const auto& x : enumerate_matrices(s.cardinalities(), axes)) {
    Placement p(s.cardinalities(), axes, x, reduce);
    auto r = synthesize(p, names, HierarchyKind::ReductionAxes, SynthOptions{});
    for (const auto& prog : r.programs) out.push_back(lower(r, prog));
    out.push_back(single_allreduce(p.reduction_groups()));
  }
  return out;
}
}  // namespace

TEST_CASE("monotonicity: more bytes never faster; a faster link never slower") {
  for (const char* file : {"a100-4node.json", "v100-4node.json", "fig2a.json"}) {
    CAPTURE(file);
    const auto s = load_system_file(simtest::example(file));
    const int nd = static_cast<int>(s.num_devices());
    const std::vector<int> axes = nd == 64   ? std::vector<int>{4, 16}
                                  : nd == 32 ? std::vector<int>{4, 8}
                                             : std::vector<int>{4, 4};
    const auto progs = programs_of(s, axes, {0});
    REQUIRE(progs.size() > 10);
    Simulator sim(s);
    for (auto algo : {Algorithm::Ring, Algorithm::Tree, Algorithm::Auto}) {
      CostOptions small, big;
      small.algo = big.algo = algo;
      small.bytes = 1e6;
      big.bytes = 1e9;
      for (const auto& p : progs) CHECK(sim.time(p, small) <= sim.time(p, big));
    }
    // Every link class twice as fast (bandwidth) or with half the latency: never slower.
    for (const auto& cls : sim.topology().classes()) {
      CAPTURE(cls);
      Simulator faster = sim;
      auto [bw, lat] = faster.topology().class_params(cls);
      faster.topology().set_class(cls, bw * 2, lat / 2);
      CostOptions o;
      o.bytes = 1e8;
      for (const auto& p : progs) CHECK(faster.time(p, o) <= sim.time(p, o) * (1 + 1e-12));
    }
  }
}

TEST_CASE("topology: a whole-system section (scope root) and a ring of 4") {
  System s;
  s.name = "ring4";
  s.levels.push_back({"gpu", 4, std::nullopt});
  // 4 GPUs on a ring of 100 GB/s links, 1 us each; no other path.
  s.topology = nlohmann::json::parse(R"({"scope":"root","links":[
    {"a":"gpu0","b":"gpu1","kind":"nvlink","bandwidth_gbps":100,"latency_us":1},
    {"a":"gpu1","b":"gpu2","kind":"nvlink","bandwidth_gbps":100,"latency_us":1},
    {"a":"gpu2","b":"gpu3","kind":"nvlink","bandwidth_gbps":100,"latency_us":1},
    {"a":"gpu3","b":"gpu0","kind":"nvlink","bandwidth_gbps":100,"latency_us":1}]})");
  // gpu0 cannot reach gpu2 without forwarding through a GPU: rejected with a clear error.
  CHECK_THROWS_WITH_AS(Topology::build(s), doctest::Contains("cannot reach"), p2v::Error);
  // With a host switch for the non-neighbours it builds; the ring AllReduce over 0..3 is pure NVLink.
  s.topology = nlohmann::json::parse(R"({"scope":"root","vertices":[{"name":"host","kind":"pcie"}],"links":[
    {"a":"gpu0","b":"gpu1","kind":"nvlink","bandwidth_gbps":100,"latency_us":1},
    {"a":"gpu1","b":"gpu2","kind":"nvlink","bandwidth_gbps":100,"latency_us":1},
    {"a":"gpu2","b":"gpu3","kind":"nvlink","bandwidth_gbps":100,"latency_us":1},
    {"a":"gpu3","b":"gpu0","kind":"nvlink","bandwidth_gbps":100,"latency_us":1},
    {"a":"gpu0","b":"host","kind":"pcie","bandwidth_gbps":10,"latency_us":1},
    {"a":"gpu1","b":"host","kind":"pcie","bandwidth_gbps":10,"latency_us":1},
    {"a":"gpu2","b":"host","kind":"pcie","bandwidth_gbps":10,"latency_us":1},
    {"a":"gpu3","b":"host","kind":"pcie","bandwidth_gbps":10,"latency_us":1}]})");
  Simulator sim(s);
  CostOptions o;
  o.bytes = 1e9;
  o.algo = Algorithm::Ring;
  o.proto = Protocol::Simple;
  const auto ring = sim.simulate({{Collective::AllReduce, {{0, 1, 2, 3}}}}, o);
  CHECK(ring.steps[0].bandwidth_s == simtest::rel(6 * 0.25e9 / 100e9));
  // {0,2} and {1,3} are not neighbours: over the 10 GB/s host links, both groups at once.
  // Each GPU's host link carries its own ring traffic only: 2 rounds x 0.5 GB each way.
  const auto far = sim.simulate({{Collective::AllReduce, {{0, 2}, {1, 3}}}}, o);
  CHECK(far.steps[0].bandwidth_s == simtest::rel(2 * 0.5e9 / 10e9));
  // NCCL's hop latency follows the route's hardware: NVLink neighbours (ring Simple 3.4 us per
  // hop) vs PCIe (5.7 us per hop), base 8.4 us, plus the launch overhead.
  const double launch = kDefaultLaunchUs * 1e-6;
  CHECK(ring.steps[0].latency_s == simtest::rel((8.4 + 6 * 3.4) * 1e-6 + launch));
  CHECK(far.steps[0].latency_s == simtest::rel((8.4 + 2 * 5.7) * 1e-6 + launch));
  CHECK(sim.topology().classes() == std::vector<std::string>{"nvlink", "pcie"});
}

TEST_CASE("topology: several NICs per node (uplink list) share the inter-node traffic") {
  System s;
  s.name = "two-nic";
  s.levels.push_back({"node", 2, Interconnect{LinkKind::Nic, 10, 2}});
  s.levels.push_back({"gpu", 4, std::nullopt});
  const std::string links = R"("links":[
    {"a":"gpu0","b":"pcie0","kind":"pcie","bandwidth_gbps":100},{"a":"gpu1","b":"pcie0","kind":"pcie","bandwidth_gbps":100},
    {"a":"gpu2","b":"pcie1","kind":"pcie","bandwidth_gbps":100},{"a":"gpu3","b":"pcie1","kind":"pcie","bandwidth_gbps":100},
    {"a":"pcie0","b":"pcie1","kind":"cpu","bandwidth_gbps":100},
    {"a":"pcie0","b":"nic0","kind":"pcie","bandwidth_gbps":100},{"a":"pcie1","b":"nic1","kind":"pcie","bandwidth_gbps":100}])";
  const std::string verts =
      R"("vertices":[{"name":"pcie0"},{"name":"pcie1"},{"name":"nic0","kind":"nic"},{"name":"nic1","kind":"nic"}])";
  CostOptions o;
  o.bytes = 1e9;
  const LoweredProgram prog{{Collective::AllReduce, {{0, 4}, {1, 5}, {2, 6}, {3, 7}}}};
  s.topology = nlohmann::json::parse(R"({"scope":"node","uplink":"nic0",)" + verts + "," + links + "}");
  const double one = Simulator(s).time(prog, o);
  s.topology = nlohmann::json::parse(R"({"scope":"node","uplink":["nic0","nic1"],)" + verts + "," + links + "}");
  Simulator two(s);
  const double both = two.time(prog, o);
  // 4 groups x 2 rounds x n/2 through one 10 GB/s NIC, or 2 groups per NIC.
  CHECK(one == simtest::rel(4 * 2 * 0.5e9 / 10e9).epsilon(1e-3));
  CHECK(both == simtest::rel(2 * 2 * 0.5e9 / 10e9).epsilon(1e-3));
  s.topology = nlohmann::json::parse(R"({"scope":"node","uplink":["nic0","nope"],)" + verts + "," + links + "}");
  CHECK_THROWS_AS(Topology::build(s), p2v::Error);
}

TEST_CASE("cost: tree AllReduce across 4 single-GPU nodes (hand-computed)") {
  // 4 nodes of 1 GPU on a 10 GB/s, 4 us network: the double binary tree over 4 heads.
  System s;
  s.name = "tree4";
  s.levels.push_back({"node", 4, Interconnect{LinkKind::Nic, 10, 4}});
  s.levels.push_back({"gpu", 1, std::nullopt});
  Simulator sim(s);
  std::vector<double> frac(4, 1.0);
  const auto st = sim.step({Collective::AllReduce, {{0, 1, 2, 3}}}, 1e9, frac, Algorithm::Tree, true);
  // NCCL's double binary tree (trees.cc): tree 0 is 0 - 2, with 1 and 3 under 2; tree 1 its mirror
  // (rank r plays 3 - r): 3 - 1, with 2 and 0 under 1. Each tree carries n/2 up and down per link;
  // node 2 has 3 links in tree 0 and 1 in tree 1 (so has node 1): its uplink carries 4 x n/2 = 2 n.
  // Bandwidth term 2 n / 10 GB/s / 0.92 (NCCL's tree efficiency); latency
  // (NCCL): base 8.4 + 2 x log2(4) x (14 us tree Simple net hop + 2 x the network's 4 us), plus launch.
  // Pipeline fill (Simple): 2 + 2 log2(4) = 6 stages; 16 channels of 1e9/16 bytes in 512 KiB chunks
  // = 120 chunks per channel; fill = 5/120 of the bandwidth term.
  CHECK(st.bottleneck_bytes == simtest::rel(2e9));
  CHECK(st.proto == Protocol::Simple);
  CHECK(st.bandwidth_s == simtest::rel(2e9 / 10e9 / 0.92 * (1 + 5.0 / 120)));
  CHECK(st.latency_s == simtest::rel((8.4 + 2 * 2 * (14 + 2 * 4)) * 1e-6 + kDefaultLaunchUs * 1e-6));
  // The ring moves 2 x 3/4 n = 1.5 n per uplink, without the tree's efficiency loss: NCCL's pick.
  CHECK(st.nccl_pick == Algorithm::Ring);
}

TEST_CASE("cost: no LL128 where NCCL's graph leaves NVLink inside a node (tuning.cc typeIntra <= NVB)") {
  // V100 node: gpu0-7 on an NVLink ring, gpu0-3 and gpu4-7 behind two PCIe switches.
  Simulator sim(load_system_file(simtest::example("v100-2node.json")));
  std::vector<double> frac(16, 1.0);
  // {0, 1}: both ring hops (0 -> 1 -> 0) are NVLink; forcing LL128 keeps it.
  const auto nv = sim.step({Collective::AllReduce, {{0, 1}}}, 4e6, frac, Algorithm::Ring, false, Protocol::LL128);
  CHECK(nv.proto == Protocol::LL128);
  // {0, 2}: not NVLink neighbours, the ring goes through pcie0: NCCL offers no LL128, so a forced
  // LL128 falls back to a protocol NCCL offers, and auto never picks it at any size.
  const auto pci = sim.step({Collective::AllReduce, {{0, 2}}}, 4e6, frac, Algorithm::Ring, false, Protocol::LL128);
  CHECK(pci.proto != Protocol::LL128);
  // {0, 1, 2, 3}: the ring closes 3 -> 0 over PCIe.
  for (double b : {1e4, 1e5, 1e6, 4e6, 1.6e7, 6.4e7}) {
    CHECK(sim.step({Collective::AllReduce, {{0, 1, 2, 3}}}, b, frac, Algorithm::Auto, false).proto != Protocol::LL128);
    CHECK(sim.step({Collective::AllReduce, {{0, 2}}}, b, frac, Algorithm::Auto, false).proto != Protocol::LL128);
  }
}
