#include "p2v/sim/nccl_model.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>

#include "p2v/engine/error.hpp"
#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/text_util.hpp"
#include "p2v/sim/cost.hpp"

namespace p2v::sim {

using namespace engine;

// Every constant below is NCCL's, from NVIDIA/nccl v2.30.7 (commit 5067397c2676d5aed50042fc39e5c8ee96eb0027),
// src/graph/tuning.cc (ncclTunerConstantsDefaults, ncclTopoTuneModel, treeCorrectionFactor,
// ncclTopoGetAlgoTime), src/enqueue.cc (topoGetAlgoInfo) and src/include/comm.h / device.h
// (thread thresholds and counts). Values are restated, not copied code.
namespace {

// NCCL's algorithm rows used here.
enum Row { kTree = 0, kRing = 1, kCollNetDirect = 2, kNvls = 3, kNvlsTree = 4, kRows = 5 };

int row(Algorithm a) {
  switch (a) {
    case Algorithm::Tree:
      return kTree;
    case Algorithm::CollNet:
      return kCollNetDirect;
    case Algorithm::Nvls:
      return kNvls;
    case Algorithm::NvlsTree:
      return kNvlsTree;
    default:
      return kRing;
  }
}

// tuning.cc baseLatencies [algorithm][LL, LL128, Simple], us: Tree 6.8/14.0/8.4, Ring 6.6/14.0/8.4,
// CollNet, NVLS, NVLS tree 0.
constexpr double kBaseLat[kRows][kNumProtocols] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
// tuning.cc hwLatencies [NVLINK, PCI, NET][algorithm][protocol], us.
constexpr double kHwLat[3][kRows][kNumProtocols] = {
    // NVLINK: Tree .6/1.25/4.0, Ring .6/1.9/3.4, CollNetDirect -/-/3.7, NVLS -/-/25, NVLSTree -/-/25
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 25}, {0, 0, 25}},
    // PCI: Tree 1.0/1.9/4.0, Ring 1.0/2.5/5.7, CollNetDirect -/-/3.7, NVLS none
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 0}, {0, 0, 0}},
    // NET: Tree 5.0/8.5/14, Ring 2.7/4.0/14.0, CollNetDirect -/-/31, NVLS -/-/18, NVLSTree -/-/20.9
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 18}, {0, 0, 20.9}},
};
// tuning.cc llMaxBws [row][nNodes 1, 2, >2], GB/s bus bandwidth; single node: row by architecture,
// multi-node: row 0 (Intel CPU) or 1 (AMD CPU).
constexpr double kLlMaxBw[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
// tuning.cc perChMaxRingLL128Bws [arch][nNodes 1,2,>2], GB/s per channel.
constexpr double kPerChRingLL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}};
// tuning.cc perChMaxTreeLL128Bws.
constexpr double kPerChTreeLL128[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
// tuning.cc perChMaxTreeBws.
constexpr double kPerChTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// tuning.cc perChMaxNVLSTreeBws (Volta/Ampere rows unused: no NVLS there).
constexpr double kPerChNvlsTree[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
// tuning.cc nvlsEfficiency [arch].
constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};
// tuning.cc treeCorrectionFactor [protocol][log2(bytes/64)], 64 B .. 256 MiB.
constexpr double kTreeCorrection[kNumProtocols][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

// NCCL's tuning constants changed between versions; the model holds those it uses, per version from
// v2.19.0 (each read from the tag's src/graph/tuning.cc in NVIDIA/nccl; tags v2.19.4-1, v2.20.5-1,
// v2.21.5-1, v2.22.3-1, v2.23.4-1, v2.27.7-1, v2.28.3-1, v2.29.2-1 and v2.30.7-1 checked). Only the
// Volta/Ampere/Hopper rows; Blackwell keeps v2.30.7's. Starting from v2.30.7 (the tables above):
//  - before v2.29: NVLS tree network latency (hwLatencies[NET][NVLS_TREE][SIMPLE]) 14 us, not 20.9;
//  - before v2.28: no NVLS efficiency model (nvlsEfficiency, (nCh-1)/nCh, perChMaxNVLSTreeBws, AllReduce
//    x2): NVLS bw = min(bwIntra, bwInter), NVLS tree min(bwIntra, bwInter, / 2 beyond 2 nodes), busBw =
//    nCh x bw, AllReduce algbw = busBw x 5/6 (pick only: see bandwidth_time);
//  - before v2.23: tree Simple base latency 0 and hwLat 28 us per hop (NVLink, PCI, network) instead of
//    8.4 and 4.0/4.0/14; ring LL128 busBw x 0.7 with one rank per node; the tree's network latency for
//    every algorithm with one rank per node (ppn == 1) only from v2.23 on;
//  - before v2.21: ring LL busBw x 1/4 (AllReduce, Reduce or multi-node; else 1/3) instead of x 0.5;
//    Hopper one-node llMaxBw 87.7 (the Ampere row) instead of 141; NVLS and NVLS tree NVLink latency
//    23 us instead of 25.
//  - before v2.19 (tags v2.9.6-1, v2.9.8-1, v2.9.9-1, v2.10.3-1, v2.11.4-1, v2.12.7-1, v2.12.10-1,
//    v2.12.12-1, v2.13.4-1, v2.14.3-1, v2.15.1-1, v2.15.5-1, v2.16.2-1, v2.16.5-1, v2.17.1-1, v2.18.1-1,
//    v2.18.3-1, v2.18.5-1 and v2.18.6-1 read): v2.18 has NVLS and NVLS tree base latencies 23 us (NVLink
//    hop 0, network hop 18 / 19 us; the NVLS tree's network term 2 (nodes - 1) hops, not 2 log2(nodes)),
//    CollNet Direct 0.5 us arity serialization and NVLink/PCI/network hops 8.0/8.0/10.7 us; from v2.18.3
//    the tree's Simple hops are 4/6/14 us (v2.18.1: 28). Before v2.18: base latencies tree 4.4/4.4/0,
//    ring 3.6/10.0/8.4, CollNet 4.4/4.4/0 us; NVLink hops tree .52/1.25/28, ring .47/1.9/3.4; PCI tree
//    1.0/1.9/28, ring 1.0/2.5/5.7; network tree 5.0/8.5/28, ring 2.7/4.0/9.6 (28 in v2.12-v2.13); CollNet
//    2 (ppn - 1) intra hops + one network hop (NVLink/PCI 8.0, network 10.7; v2.9: NVLink 4.0, PCI 5.5);
//    multi-node LL intra hops x 1.8; no host net overhead per ring step (getNetOverhead, v2.18 on); the
//    ring Simple AllReduce plateau x 1.9 (v2.17: x 1.5 on Hopper) once nBytes >= nRanks / 16 x 64 KiB
//    (v2.18 on: a channel's per-rank share >= 64 B, x 1.4 from Ampere on); NVLS only from v2.17 (one
//    node, base latency 40 us), NVLS tree from v2.18; LL128 only on Volta and Ampere before v2.15
//    (tuning.cc: minCompCap == maxCompCap == 70 or 80).
struct Tables {
  double base[kRows][kNumProtocols];
  double hw[3][kRows][kNumProtocols];
  double ring_ll = 0.5, ring_ll_other = 0.5;  // ring LL busBw factor (NCCL's estimate)
  bool ll128_one_ppn = false;                 // ring LL128 x 0.7 at one rank per node (estimate)
  bool ppn1_tree_net = true;                  // ppn == 1: the tree's network latency for every algorithm
  bool nvls_eff = true;                       // NVLS efficiency model in NCCL's estimate
  double hopper_ll_max1 = 141.0;              // llMaxBws[Hopper][one node]
  double ll_multinode_intra = 1.0;            // LL intra-node hop latency factor across nodes (1.8 before v2.18)
  bool net_overhead = true;                   // ring steps floored at getNetOverhead (v2.18 on)
  int plateau = 2;                            // ring Simple plateau rule: 2 (v2.18 on), 1 (v2.17), 0 (older)
  bool nvls = true, nvls_tree = true;         // the release has NVLS / NVLS tree
  bool nvls_tree_linear = false;              // NVLS tree network term 2 (nodes - 1) hops (v2.18)
  bool nvls_latency_inter = true;             // NVLS (tree) network hops add latencyInter (v2.19 on)
  double collnet_arity = 0.4;                 // CollNet Direct per-local-rank serialization, us
  bool collnet_chain_lat = false;             // CollNet latency 2 (ppn - 1) intra + inter (before v2.18)
  bool ll128_hopper = true;                   // LL128 enabled on Hopper and later (v2.15 on)
  bool nvls_tree_correction = true;           // treeCorrectionFactor on the NVLS tree from Blackwell (v2.29 on)
};

Tables make_tables(int v) {
  Tables t;
  for (int r = 0; r < kRows; ++r)
    for (int q = 0; q < kNumProtocols; ++q) {
      t.base[r][q] = kBaseLat[r][q];
      for (int h = 0; h < 3; ++h) t.hw[h][r][q] = kHwLat[h][r][q];
    }
  constexpr int kLL = 0, kLL128 = 1, kS = 2, kNet = 2, kNvl = 0, kPci = 1;
  if (v < 22900) {
    t.hw[kNet][kNvlsTree][kS] = 14.0;
    t.nvls_tree_correction = false;
  }
  if (v < 22800) t.nvls_eff = false;
  if (v < 22300) {
    t.base[kTree][kS] = 0.0;
    t.hw[kNvl][kTree][kS] = t.hw[kPci][kTree][kS] = t.hw[kNet][kTree][kS] = 28.0;
    t.ll128_one_ppn = true;
    t.ppn1_tree_net = false;
  }
  if (v < 22100) {
    t.ring_ll = 0.25;
    t.ring_ll_other = 1.0 / 3.0;
    t.hopper_ll_max1 = 87.7;
    t.hw[kNvl][kNvls][kS] = t.hw[kNvl][kNvlsTree][kS] = 23.0;
  }
  if (v < 21900) {  // v2.18.x
    t.base[kNvls][kS] = t.base[kNvlsTree][kS] = 23.0;
    t.hw[kNvl][kNvls][kS] = t.hw[kNvl][kNvlsTree][kS] = 0.0;
    t.hw[kNet][kNvls][kS] = 18.0;
    t.hw[kNet][kNvlsTree][kS] = 19.0;
    t.nvls_tree_linear = true;
    // v2.18.x prices the NVLS and NVLS tree network hops with hwLat[NET] alone, without the
    // network's latencyInter (src/graph/tuning.cc @ v2.18.5-1 = 559b70f8 and v2.18.6-1; v2.19.4-1
    // uses interLat = hwLat[NET] + latencyInter, as Ring and Tree do).
    t.nvls_latency_inter = false;
    t.base[kCollNetDirect][kLL] = 6.8;
    t.base[kCollNetDirect][kLL128] = 14.0;
    t.hw[kNvl][kCollNetDirect][kS] = t.hw[kPci][kCollNetDirect][kS] = 8.0;
    t.hw[kNet][kCollNetDirect][kS] = 10.7;
    t.collnet_arity = 0.5;
    if (v >= 21803) {
      t.hw[kNvl][kTree][kS] = 4.0;
      t.hw[kPci][kTree][kS] = 6.0;
      t.hw[kNet][kTree][kS] = 14.0;
    }
  }
  if (v < 21800) {  // v2.9 .. v2.17
    const double base_tree[3] = {4.4, 4.4, 0.0}, base_ring[3] = {3.6, 10.0, 8.4};
    const double nvl_tree[3] = {.52, 1.25, 28}, nvl_ring[3] = {.47, 1.9, 3.4};
    const double pci_tree[3] = {1.0, 1.9, 28}, pci_ring[3] = {1.0, 2.5, 5.7};
    const double net_tree[3] = {5.0, 8.5, 28}, net_ring[3] = {2.7, 4.0, 9.6};
    for (int q = 0; q < kNumProtocols; ++q) {
      t.base[kTree][q] = t.base[kCollNetDirect][q] = base_tree[q];
      t.base[kRing][q] = base_ring[q];
      t.hw[kNvl][kTree][q] = nvl_tree[q];
      t.hw[kNvl][kRing][q] = nvl_ring[q];
      t.hw[kPci][kTree][q] = pci_tree[q];
      t.hw[kPci][kRing][q] = pci_ring[q];
      t.hw[kNet][kTree][q] = net_tree[q];
      t.hw[kNet][kRing][q] = net_ring[q];
    }
    if (v >= 21200 && v < 21400) t.hw[kNet][kRing][kS] = 28.0;
    t.ll_multinode_intra = 1.8;
    t.net_overhead = false;
    t.plateau = v >= 21700 ? 1 : 0;
    t.nvls_tree = false;
    t.nvls = v >= 21700;
    t.base[kNvls][kS] = 40.0;
    t.hw[kNet][kNvls][kS] = 0.0;
    t.collnet_chain_lat = true;
    if (v < 21000) {
      t.hw[kNvl][kCollNetDirect][kS] = 4.0;
      t.hw[kPci][kCollNetDirect][kS] = 5.5;
    }
  }
  if (v < 21500) t.ll128_hopper = false;
  return t;
}

const Tables& newest_tables() {
  static const Tables t = make_tables(kNcclNewestVersion);
  return t;
}

const Tables& tables(const NcclParams& p) {
  // One table per release whose constants differ (make_tables): the first version of each.
  static const int kFrom[] = {20900, 21000, 21200, 21400, 21500, 21700, 21800,
                              21803, 21900, 22100, 22300, 22800, 22900};
  static const std::vector<Tables> all = [] {
    std::vector<Tables> v;
    for (int f : kFrom) v.push_back(make_tables(f));
    return v;
  }();
  const int v = p.effective_version();
  std::size_t i = 0;
  while (i + 1 < std::size(kFrom) && v >= kFrom[i + 1]) ++i;
  return all[i];
}

int log2i(long long n) {
  int l = -1;
  while (n > 0) {
    n >>= 1;
    ++l;
  }
  return l;
}

// "algorithms" names, bit i of NcclParams::algorithms.
constexpr const char* kAlgoNames[5] = {"ring", "tree", "nvls", "nvls-tree", "collnet"};
int algo_bit(Algorithm a) {
  switch (a) {
    case Algorithm::Ring:
      return 1;
    case Algorithm::Tree:
      return 2;
    case Algorithm::Nvls:
      return 4;
    case Algorithm::NvlsTree:
      return 8;
    case Algorithm::CollNet:
      return 16;
    case Algorithm::Auto:
      return 0;
  }
  return 0;
}

int node_index(int nodes) { return nodes <= 2 ? nodes - 1 : 2; }  // tuning.cc index2

// Steps of a ring (tuning.cc nsteps): AllReduce 2(n-1), ReduceScatter/AllGather n-1, else n.
double ring_steps(Collective c, int n) {
  switch (c) {
    case Collective::AllReduce:
      return 2.0 * (n - 1);
    case Collective::ReduceScatter:
    case Collective::AllGather:
      return n - 1.0;
    default:
      return n;
  }
}

double hw_lat(const Tables& tb, const NcclLevelParams* lv, HwClass hw, int r, int proto) {
  const auto i = static_cast<std::size_t>(proto);
  if (!lv) return tb.hw[static_cast<int>(hw)][r][proto];
  return (lv->hop_latency_us[i] >= 0 ? lv->hop_latency_us[i] : tb.hw[static_cast<int>(hw)][r][proto]) *
         lv->hop_latency_scale[i];
}

using engine::text::lower;

}  // namespace

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::LL:
      return "LL";
    case Protocol::LL128:
      return "LL128";
    case Protocol::Simple:
      return "Simple";
    case Protocol::Auto:
      return "auto";
  }
  return "?";
}

Protocol parse_protocol(const std::string& s) {
  const auto l = lower(s);
  if (l == "ll") return Protocol::LL;
  if (l == "ll128") return Protocol::LL128;
  if (l == "simple") return Protocol::Simple;
  if (l == "auto") return Protocol::Auto;
  throw Error("--proto '" + s + "': expected ll, ll128, simple or auto");
}

const char* to_string(HwClass h) {
  switch (h) {
    case HwClass::NVLink:
      return "nvlink";
    case HwClass::PCI:
      return "pci";
    case HwClass::Net:
      return "net";
  }
  return "?";
}

HwClass hw_class_of(LinkKind k) {
  switch (k) {
    case LinkKind::Nic:
      return HwClass::Net;
    case LinkKind::Pcie:
      return HwClass::PCI;
    default:
      return HwClass::NVLink;
  }
}

HwClass hw_class_of(const std::string& kind) {
  const auto k = lower(kind);
  if (k == "nic" || k == "network" || k == "net" || k == "ib" || k == "ethernet") return HwClass::Net;
  if (k == "pcie" || k == "pci" || k == "qpi" || k == "upi" || k == "cpu") return HwClass::PCI;
  return HwClass::NVLink;
}

const char* to_string(Arch a) {
  switch (a) {
    case Arch::Volta:
      return "volta";
    case Arch::Ampere:
      return "ampere";
    case Arch::Hopper:
      return "hopper";
    case Arch::Blackwell:
      return "blackwell";
  }
  return "?";
}

int default_channels(Arch a) {
  // Assumption (docs/simulator.md): what nccl-tests logs typically show as "coll channels" at full
  // size on 8-GPU NVSwitch nodes; a system file or calibration sets the real number.
  switch (a) {
    case Arch::Volta:
      return 8;
    case Arch::Ampere:
      return 16;
    case Arch::Hopper:
      return 16;
    case Arch::Blackwell:
      return 32;
  }
  return 16;
}

const NcclLevelParams* NcclParams::level(const std::string& name) const {
  for (const auto& l : levels)
    if (l.level == name) return &l;
  return nullptr;
}
int NcclParams::effective_channels() const { return channels > 0 ? channels : default_channels(arch); }
int nvls_channels(const NcclParams& p, const CallShape& c) {
  // src/transport/nvls.cc (v2.27.7) NVLS_NCHANNELS_SM90 16; Blackwell 32 across nodes, 24 in one
  // NVLink domain (NVLS_NCHANNELS_SM100, _SM100_NVL). "NCCL INFO ... N nvls channels" prints it.
  if (p.arch >= Arch::Blackwell) return c.nodes > 1 ? 32 : 24;
  return 16;
}

int call_channels(const NcclParams& p, const CallShape& c) {
  // NCCL's search builds a different graph across nodes, where every ring enters and leaves a node
  // through a NIC (src/graph/search.cc), so the channel count can differ from one node's.
  return c.nodes > 1 && p.net_channels > 0 ? p.net_channels : p.effective_channels();
}
double NcclParams::effective_launch_us() const { return launch_us >= 0 ? launch_us : kDefaultLaunchUs; }
double NcclParams::effective_group_launch_us() const {
  return group_launch_us >= 0 ? group_launch_us : kDefaultGroupLaunchUs;
}
double group_launch_s(const NcclParams& p, int gpus_per_thread) {
  return std::max(0, gpus_per_thread - 1) * p.effective_group_launch_us() * 1e-6;
}
double NcclParams::effective_nvls_efficiency() const {
  return nvls_efficiency >= 0 ? nvls_efficiency : kNvlsEfficiency[static_cast<int>(arch)];
}

int parse_nccl_version(const std::string& text, const std::string& what) {
  std::string t = text;
  if (!t.empty() && (t[0] == 'v' || t[0] == 'V')) t.erase(0, 1);
  // the release: digits and dots up to a '-' (package release) or '+' (CUDA build)
  const auto end = t.find_first_of("-+");
  const std::string core = t.substr(0, end);
  int part[3] = {0, 0, 0}, np = 0;
  std::size_t i = 0;
  bool ok = !core.empty();
  while (ok && i < core.size()) {
    if (np == 3 || !std::isdigit(static_cast<unsigned char>(core[i]))) {
      ok = false;
      break;
    }
    int x = 0;
    while (i < core.size() && std::isdigit(static_cast<unsigned char>(core[i])) && x < 10000)
      x = x * 10 + (core[i++] - '0');
    part[np++] = x;
    if (i < core.size()) {
      if (core[i] != '.' || i + 1 == core.size()) ok = false;
      ++i;
    }
  }
  if (!ok || np < 2 || part[1] > 99 || part[2] > 99)
    throw Error(fmt::format("{}: '{}' is not an NCCL version (expected e.g. 2.26.2)", what, text));
  const int v = part[0] * 10000 + part[1] * 100 + part[2];
  if (v < kNcclOldestVersion)
    throw Error(fmt::format("{}: NCCL {} is older than the oldest version whose tuning constants p2v holds ({})", what,
                            nccl_version_string(v), nccl_version_string(kNcclOldestVersion)));
  return v;
}

std::string nccl_version_string(int v) { return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100); }

NcclParams nccl_params(const System& s) { return nccl_params_from_json(s.nccl, s); }

NcclParams nccl_params_from_json(const nlohmann::json& j, const System& s) {
  NcclParams p;
  if (j.is_null()) return p;
  const std::string origin = fmt::format("system '{}'", s.name);
  json_read::Object o(json_read::At(j, origin, "nccl"));
  auto non_neg = [](const json_read::At& at) {
    const double x = at.number();
    if (x < 0) at.fail(fmt::format("must be a non-negative number, got {}", x));
    return x;
  };
  if (const auto a = o.optional("arch")) {
    const auto v = a->string();
    if (v == "volta")
      p.arch = Arch::Volta;
    else if (v == "ampere")
      p.arch = Arch::Ampere;
    else if (v == "hopper")
      p.arch = Arch::Hopper;
    else if (v == "blackwell")
      p.arch = Arch::Blackwell;
    else
      a->fail("expected volta, ampere, hopper or blackwell, got \"" + v + "\"");
  }
  o.optional("description");
  if (const auto v = o.optional("version")) p.version = parse_nccl_version(v->string(), origin + ": nccl.version");
  if (const auto c = o.optional("channels")) {
    p.channels = c->int32();
    if (p.channels < 1 || p.channels > 64) c->fail("must be between 1 and 64");
  }
  if (const auto c = o.optional("net_channels")) {
    p.net_channels = c->int32();
    if (p.net_channels < 1 || p.net_channels > 64) c->fail("must be between 1 and 64");
  }
  if (const auto v = o.optional("launch_us")) p.launch_us = non_neg(*v);
  if (const auto v = o.optional("group_launch_us")) p.group_launch_us = non_neg(*v);
  if (const auto v = o.optional("nvls")) p.nvls = v->boolean();
  if (const auto v = o.optional("nvls_efficiency")) {
    p.nvls_efficiency = non_neg(*v);
    if (p.nvls_efficiency <= 0 || p.nvls_efficiency > 1) v->fail("must be in (0, 1]");
  }
  if (const auto v = o.optional("sharp")) p.sharp = v->boolean();
  if (const auto v = o.optional("amd_cpu")) p.amd_cpu = v->boolean();
  if (const auto v = o.optional("net_overhead_us")) p.net_overhead_us = non_neg(*v);
  if (const auto v = o.optional("fill_stage")) p.fill_stage = non_neg(*v);
  if (const auto v = o.optional("ll128_net_fill")) p.ll128_net_fill = v->boolean();
  if (const auto v = o.optional("ll128_net")) p.ll128_net = v->boolean();
  if (const auto v = o.optional("buffsize")) {  // NCCL_BUFFSIZE
    p.buffsize = non_neg(*v);
    if (p.buffsize < 65536) v->fail("must be at least 65536 bytes");
  }
  if (const auto v = o.optional("nvls_chunksize")) {  // NCCL_NVLS_CHUNKSIZE
    p.nvls_chunk = v->int32();
    if (p.nvls_chunk < 16384) v->fail("must be at least 16384 bytes");
  }
  if (const auto v = o.optional("nvlstree_max_chunksize")) {  // NCCL_NVLSTREE_MAX_CHUNKSIZE
    p.nvls_tree_max_chunk = v->int32();
    if (p.nvls_tree_max_chunk < 16384) v->fail("must be at least 16384 bytes");
  }
  if (const auto v = o.optional("tuner")) {  // NCCL_TUNER_PLUGIN
    const auto t = v->string();
    const auto it = std::find(std::begin(kNcclTunerNames), std::end(kNcclTunerNames), t);
    if (it == std::end(kNcclTunerNames))
      v->fail(
          "expected \"fastest\" (a tuner plugin picking the fastest candidate), \"aws-ofi-p5\" (aws-ofi-nccl's "
          "p5 regions) or \"none\", got \"" +
          t + "\"");
    p.tuner = static_cast<NcclTuner>(it - std::begin(kNcclTunerNames));
  }
  if (const auto v = o.optional("protocols")) {  // NCCL_PROTO
    p.protocols = 0;
    for (const auto& e : v->raw()) {
      if (!e.is_string()) v->fail("expected a list of ll, ll128, simple");
      const std::string n = lower(e.get<std::string>());
      const Protocol q = n == "ll"       ? Protocol::LL
                         : n == "ll128"  ? Protocol::LL128
                         : n == "simple" ? Protocol::Simple
                                         : Protocol::Auto;
      if (q == Protocol::Auto) v->fail("expected a list of ll, ll128, simple, got \"" + n + "\"");
      p.protocols |= 1 << static_cast<int>(q);
    }
    if (p.protocols == 0) v->fail("must name at least one protocol");
  }
  if (const auto v = o.optional("algorithms")) {  // NCCL_ALGO
    p.algorithms = 0;
    for (const auto& e : v->raw()) {
      if (!e.is_string()) v->fail("expected a list of ring, tree, nvls, nvls-tree, collnet");
      const std::string n = lower(e.get<std::string>());
      int bit = 0;
      for (int i = 0; i < 5; ++i)
        if (n == kAlgoNames[i]) bit = 1 << i;
      if (bit == 0) v->fail("expected a list of ring, tree, nvls, nvls-tree, collnet, got \"" + n + "\"");
      p.algorithms |= bit;
    }
    if (!(p.algorithms & 1)) v->fail("must include ring (NCCL's fallback)");
  }
  if (const auto lv = o.optional("levels")) {
    json_read::Object lo(*lv);
    for (auto it = lv->raw().begin(); it != lv->raw().end(); ++it) {
      const std::string name = it.key();
      const auto at = *lo.optional(name.c_str());
      const bool known = std::any_of(s.levels.begin(), s.levels.end(), [&](const Level& l) { return l.name == name; });
      if (!known) at.fail("not a level of the system");
      json_read::Object x(at);
      NcclLevelParams l;
      l.level = name;
      if (const auto h = x.optional("hw")) {
        const auto v = h->string();
        if (v == "nvlink")
          l.hw = HwClass::NVLink;
        else if (v == "pci")
          l.hw = HwClass::PCI;
        else if (v == "net")
          l.hw = HwClass::Net;
        else
          h->fail("expected nvlink, pci or net, got \"" + v + "\"");
      }
      if (const auto v = x.optional_renamed("bus_bw_GBps", "bus_bw_gbps")) {
        l.bus_bw_gbps = non_neg(*v);
        if (l.bus_bw_gbps <= 0) v->fail("must be positive");
      }
      // {"ll", "ll128", "simple"} objects: each given protocol's non-negative number.
      auto per_protocol = [&](const char* key, std::array<double, kNumProtocols>& out) {
        if (const auto v = x.optional(key)) {
          json_read::Object h(*v);
          for (int i = 0; i < kNumProtocols; ++i)
            if (const auto e = h.optional(kProtocolKeys[i])) out[static_cast<std::size_t>(i)] = non_neg(*e);
          h.finish();
        }
      };
      per_protocol("hop_latency_us", l.hop_latency_us);
      per_protocol("hop_latency_scale", l.hop_latency_scale);
      if (const auto v = x.optional("nics")) {
        l.nics = v->int32();
        if (l.nics < 1) v->fail("must be at least 1");
      }
      if (const auto v = x.optional_renamed("nic_GBps", "nic_gbps")) l.nic_gbps = non_neg(*v);
      if (const auto v = x.optional("reported_latency_us")) l.reported_latency_us = non_neg(*v);
      x.finish();
      p.levels.push_back(std::move(l));
    }
    lo.finish();
  }
  o.finish();
  return p;
}

nlohmann::json nccl_json(const NcclParams& p) {
  nlohmann::json j = nlohmann::json::object();
  j["arch"] = to_string(p.arch);
  if (p.version > 0) j["version"] = nccl_version_string(p.version);
  if (p.channels > 0) j["channels"] = p.channels;
  if (p.net_channels > 0) j["net_channels"] = p.net_channels;
  if (p.launch_us >= 0) j["launch_us"] = p.launch_us;
  if (p.group_launch_us >= 0) j["group_launch_us"] = p.group_launch_us;
  if (p.nvls) j["nvls"] = true;
  if (p.nvls_efficiency >= 0) j["nvls_efficiency"] = p.nvls_efficiency;
  if (p.sharp) j["sharp"] = true;
  if (p.amd_cpu) j["amd_cpu"] = true;
  if (p.net_overhead_us >= 0) j["net_overhead_us"] = p.net_overhead_us;
  if (p.fill_stage >= 0) j["fill_stage"] = p.fill_stage;
  if (!p.ll128_net_fill) j["ll128_net_fill"] = false;  // on by default
  if (!p.ll128_net) j["ll128_net"] = false;            // on by default
  if (p.buffsize > 0) j["buffsize"] = p.buffsize;
  if (p.nvls_chunk > 0) j["nvls_chunksize"] = static_cast<long long>(p.nvls_chunk);
  if (p.nvls_tree_max_chunk > 0) j["nvlstree_max_chunksize"] = static_cast<long long>(p.nvls_tree_max_chunk);
  if (p.tuner != NcclTuner::None) j["tuner"] = kNcclTunerNames[static_cast<int>(p.tuner)];
  if (p.protocols != 7) {
    nlohmann::json a = nlohmann::json::array();
    for (int i = 0; i < kNumProtocols; ++i)
      if (p.protocols & (1 << i)) a.push_back(kProtocolKeys[i]);
    j["protocols"] = a;
  }
  if (p.algorithms != 31) {
    nlohmann::json a = nlohmann::json::array();
    for (int i = 0; i < 5; ++i)
      if (p.algorithms & (1 << i)) a.push_back(kAlgoNames[i]);
    j["algorithms"] = a;
  }
  if (!p.levels.empty()) {
    nlohmann::json lv = nlohmann::json::object();
    for (const auto& l : p.levels) {
      nlohmann::json x = nlohmann::json::object();
      if (l.hw) x["hw"] = to_string(*l.hw);
      if (l.bus_bw_gbps > 0) x["bus_bw_GBps"] = l.bus_bw_gbps;
      // A per-protocol object of the values that differ from the default (absent when none does).
      auto per_protocol = [&](const char* key, const std::array<double, kNumProtocols>& v, auto is_default) {
        nlohmann::json h = nlohmann::json::object();
        for (int i = 0; i < kNumProtocols; ++i)
          if (!is_default(v[static_cast<std::size_t>(i)])) h[kProtocolKeys[i]] = v[static_cast<std::size_t>(i)];
        if (!h.empty()) x[key] = h;
      };
      per_protocol("hop_latency_us", l.hop_latency_us, [](double d) { return d < 0; });
      per_protocol("hop_latency_scale", l.hop_latency_scale, [](double d) { return d == 1.0; });
      if (l.nics > 0) x["nics"] = l.nics;
      if (l.nic_gbps > 0) x["nic_GBps"] = l.nic_gbps;
      if (l.reported_latency_us >= 0) x["reported_latency_us"] = l.reported_latency_us;
      lv[l.level] = x;
    }
    j["levels"] = lv;
  }
  return j;
}

namespace {
// trees.cc ncclGetBtree: parent and children of `rank` in the btree over n ranks rooted at 0.
void btree(int n, int rank, int& up, int& d0, int& d1) {
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  if (rank == 0) {
    up = d0 = -1;
    d1 = n > 1 ? bit >> 1 : -1;
    return;
  }
  up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  int low = bit >> 1;
  d0 = low == 0 ? -1 : rank - low;
  d1 = low == 0 ? -1 : rank + low;
  while (d1 >= n) {
    d1 = low == 0 ? -1 : rank + low;
    low >>= 1;
  }
}
// Rank `rank`'s role in tree t (trees.cc ncclGetDtree: mirror for even n, shift for odd n) and back.
int role(int n, int rank, int t) { return t == 0 ? rank : (n % 2 == 1 ? (rank - 1 + n) % n : n - 1 - rank); }
int unrole(int n, int r, int t) { return t == 0 || r < 0 ? r : (n % 2 == 1 ? (r + 1) % n : n - 1 - r); }
int tree_degree(int n, int rank, int t) {
  int up = -1, d0 = -1, d1 = -1;
  btree(n, role(n, rank, t), up, d0, d1);
  return (up >= 0) + (d0 >= 0) + (d1 >= 0);
}
}  // namespace
int nccl_tree_parent(int n, int rank, int t) {
  int up = -1, d0 = -1, d1 = -1;
  btree(n, role(n, rank, t), up, d0, d1);
  return unrole(n, up, t);
}

int nccl_tree_max_degree(long long n) {
  if (n < 2) return 0;
  // Every rank is a leaf (one link) in at least one of the two trees and has at most three links in
  // the other, so 4 bounds the degree; it is reached from 4 ranks on (enumerated up to 2^16).
  if (n > 65536) return 4;
  int best = 0;
  const int k = static_cast<int>(n);
  for (int r = 0; r < k && best < 4; ++r) best = std::max(best, tree_degree(k, r, 0) + tree_degree(k, r, 1));
  return best;
}

int nccl_graph_channels(const NcclParams& p, const CallShape& c) {
  // NVIDIA/nccl v2.30.7 src/init.cc: comm->nChannels = treeGraph->nChannels = ringGraph->nChannels (the
  // smaller); src/graph/connect.cc ncclTopoPostset then duplicates the channels, comm->nChannels =
  // min(MAXCHANNELS, 2 x nChannels), and ncclTopoTuneModel (called after it) caps the bus bandwidth
  // with graphs[a]->nChannels x perChMax*Bw: half the collective channels a log shows. (Hopper's
  // further doubling across nodes when the doubled count is under 16, connect.cc "4 compute channels
  // per search channel", can give the same count from a graph half as large, e.g. 16 from 4 or 8:
  // the model takes the larger.)
  return std::max(1, call_channels(p, c) / 2);
}

int nvls_graph_channels(const CallShape& c) {
  const int ppn = c.ranks / std::max(1, c.nodes);
  return std::min(32, std::max(1, ppn));  // search.cc: maxChannels = min(NCCL_MAX_NVLS_ARITY, GPUs)
}

int nccl_channels_used(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr) {
  int nc = call_channels(p, c);
  if (a != Algorithm::Ring && a != Algorithm::Tree) return nc;
  // src/include/device.h NCCL_{SIMPLE,LL}_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS 640; src/include/comm.h
  // NCCL_{LL,LL128}_THREAD_THRESHOLD 8, NCCL_SIMPLE_THREAD_THRESHOLD 64; tuning.cc: ring LL's x nRanks.
  const double threads = pr == Protocol::LL128 ? 640 : 512;
  double threshold = pr == Protocol::Simple ? 64 : 8;
  if (a == Algorithm::Ring && pr == Protocol::LL) threshold *= c.ranks;
  while (nc >= 2 && c.bytes < nc * threads * threshold) --nc;
  return nc;
}

ProxyOps proxy_ops(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr) {
  ProxyOps r;
  const int nodes = std::max(1, c.nodes), n = c.ranks;
  if (nodes < 2 || n < 2 || (a != Algorithm::Ring && a != Algorithm::Tree)) return r;
  const int ppn = std::max(1, n / nodes);
  const int nc = nccl_channels_used(p, c, a, pr);
  const double per_channel = c.bytes / nc;
  // Data bytes per network send (one step of the protocol's buffer; src/init.cc, src/enqueue.cc
  // calcCollChunking): Simple ring a chunk of ALLREDUCE_CHUNKSTEPS = NCCL_STEPS / 2 = 4 steps of
  // buffsize / 8 (src/include/collectives.h), LL128 576000 B, LL 32 KiB (64 KiB of lines).
  const double simple_step = (p.buffsize > 0 ? p.buffsize : 4.0 * 1024 * 1024) / 8;
  if (a == Algorithm::Ring) {
    // device/all_reduce.h runRing (all_gather.h, reduce_scatter.h alike): per loop of ranks x chunk
    // bytes a channel runs every ring step once; each channel's ring crosses the network once per node,
    // and the node's GPUs share those crossings (NCCL's rings enter and leave a node at different GPUs).
    // Counted per ring step, as NCCL's latency counts its net overhead (a Simple step's two slices are
    // two sends; NCCL's x3 for Simple stands for them).
    const double chunk = pr == Protocol::Simple ? 4 * simple_step : pr == Protocol::LL128 ? 576000.0 : 32768.0;
    const double loops = std::max(1.0, std::ceil(per_channel / (n * chunk)));
    const double conns = std::ceil(static_cast<double>(nc) / ppn);
    r.ops = ring_steps(c.coll, n) * loops * conns;
    r.path = ring_steps(c.coll, n);
    return r;
  }
  // Tree: every chunk goes once over each of a node's tree links (up to the parent or down to a
  // child); half the channels run tree 0, half its mirror (trees.cc), the node's GPUs share them.
  // The chunk: the tree's pipeline chunk where pipeline_shape has one (Simple, LL128 across nodes,
  // with calcCollChunking's halving), else one step of the protocol's buffer.
  const PipelineShape ps = pipeline_shape(p, c, a, pr);
  const double chunk = ps.stages > 1           ? ps.chunk
                       : pr == Protocol::LL    ? 32768.0
                       : pr == Protocol::LL128 ? 576000.0
                                               : simple_step;
  const double chunks = std::max(1.0, std::ceil(per_channel / chunk));
  double links = 0;
  int deg_path = 1;
  for (int node = 0; node < nodes; ++node) {
    const int d0 = tree_degree(nodes, node, 0), d1 = tree_degree(nodes, node, 1);
    links = std::max(links, std::ceil(nc / 2.0) * d0 + std::floor(nc / 2.0) * d1);
    deg_path = std::max({deg_path, d0, d1});
  }
  r.ops = chunks * std::ceil(links / ppn);
  r.path = deg_path;
  return r;
}

// The host's cost of one network operation, us: tuning.cc getNetOverhead (1 us on Intel, 2 on AMD;
// "net_overhead_us" overrides), x3 for Simple as NCCL's ring latency counts it.
static double host_net_overhead_us(const NcclParams& p, Protocol pr) {
  const double o = p.net_overhead_us >= 0 ? p.net_overhead_us : (p.amd_cpu ? 2.0 : 1.0);
  return pr == Protocol::Simple ? 3 * o : o;
}

double proxy_bound_s(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr) {
  const ProxyOps o = proxy_ops(p, c, a, pr);
  if (o.ops <= o.path) return 0.0;
  return (o.ops - o.path) * host_net_overhead_us(p, pr) * 1e-6;
}

bool available(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr) {
  if (c.ranks < 2) return a == Algorithm::Ring;
  // NCCL_PROTO / NCCL_ALGO (the system's "protocols" / "algorithms"; ring is always allowed).
  if (pr != Protocol::Auto && !(p.protocols & (1 << static_cast<int>(pr)))) return false;
  if (a != Algorithm::Ring && !(p.algorithms & algo_bit(a))) return false;
  // tuning.cc (v2.30.7, ncclTopoTuneModel): LL128 is on by default only where the algorithm's graph
  // stays on NVLink inside a node (graphs[a]->typeIntra <= PATH_NVB); a path through a PCIe switch
  // or the CPU turns it off. (Its other condition, the GPU-NIC path typeInter <= PATH_PXB before
  // Hopper and <= PATH_PXN from Hopper on, holds on the presets' NVSwitch nodes, where every GPU
  // shares a PCIe switch with a NIC; this model does not derive it: docs/simulator.md.)
  if (pr == Protocol::LL128 && c.intra_pci) return false;
  // "ll128_net": false (the p4d preset): LL128 inside one node only.
  if (pr == Protocol::LL128 && c.nodes > 1 && !p.ll128_net) return false;
  // before v2.15 LL128 is enabled only on Volta and Ampere (tuning.cc: compute capability 70 or 80)
  if (pr == Protocol::LL128 && p.arch >= Arch::Hopper && !tables(p).ll128_hopper) return false;
  const bool simple = pr == Protocol::Simple;
  const int ppn = c.ranks / std::max(1, c.nodes);
  switch (a) {
    case Algorithm::Ring:
      return true;
    case Algorithm::Tree:  // tuning.cc: tree only for AllReduce (Broadcast/Reduce ring only)
      return c.coll == Collective::AllReduce;
    case Algorithm::Nvls:
      // NVLS: Simple only; needs NVSwitch multicast (Hopper+); not Reduce/Broadcast; across nodes
      // only together with CollNet (enqueue.cc updateCollCostTable); AllGather/ReduceScatter need
      // localRanks <= NCCL_MAX_NVLS_ARITY (32) and, multi-node, CollNet heads.
      // tuning.cc: "NVLS/NVLStree needs at least 2 channels" (of the NVLS graph: heads, one per GPU).
      if (!simple || !p.nvls || !tables(p).nvls || p.effective_nvls_efficiency() <= 0 || nvls_graph_channels(c) < 2)
        return false;
      if (!tables(p).nvls_tree && c.nodes > 1) return false;  // v2.17: NVLS inside one node only
      if (c.coll == Collective::Reduce || c.coll == Collective::Broadcast) return false;
      if (c.nodes > 1) return p.sharp && c.coll == Collective::AllReduce;
      return ppn <= 32;
    case Algorithm::NvlsTree:  // multi-node AllReduce only (tuning.cc disables it on one node)
      return simple && p.nvls && tables(p).nvls_tree && p.effective_nvls_efficiency() > 0 &&
             nvls_graph_channels(c) >= 2 && c.nodes > 1 && c.coll == Collective::AllReduce;
    case Algorithm::CollNet:
      // CollNet Direct: Simple only, AllReduce (AllGather/ReduceScatter need plugin support and
      // one NIC per GPU: not modelled), at most 8 local ranks (NCCL_MAX_DIRECT_ARITY + 1), nodes > 1.
      return simple && p.sharp && c.nodes > 1 && c.coll == Collective::AllReduce && ppn <= 8;
    case Algorithm::Auto:
      return false;
  }
  return false;
}

double latency_us(const NcclParams& p, const CallShape& c, const GroupLevels& g, Algorithm a, Protocol pr,
                  bool nccl_estimate) {
  const int r = row(a), pi = static_cast<int>(pr);
  const int n = c.ranks, nodes = std::max(1, c.nodes), ppn = n / nodes;
  // The version's tables; for the time, the tree's Simple latency stays v2.30.7's (header).
  const Tables& tb = !nccl_estimate && a == Algorithm::Tree && pr == Protocol::Simple ? newest_tables() : tables(p);
  double lat = tb.base[r][pi];
  // before v2.18: LL's intra-node hops x 1.8 when the call spans nodes (tuning.cc)
  const double intra =
      hw_lat(tb, g.intra, g.intra_hw, r, pi) * (nodes > 1 && pr == Protocol::LL ? tb.ll_multinode_intra : 1.0);
  // tuning.cc: with one rank per node the tree's network latency is used for every algorithm;
  // graph->latencyInter (the network's own latency) is added, twice for Simple (flush).
  // NCCL's estimate adds what the plugin reports; the time, the network's own latency.
  const double li = nccl_estimate ? g.estimate_latency_inter_us() : g.latency_inter_us;
  double inter = hw_lat(tb, g.inter, HwClass::Net, ppn == 1 && tb.ppn1_tree_net ? kTree : r, pi) + li;
  if (pr == Protocol::Simple) inter += li;
  // v2.18 priced the NVLS (tree) network hops with hwLat[NET] alone; the hop still crosses the
  // network, so the time adds its latency in every version (docs/simulator.md §2: the 2-node p5 log
  // run at v2.18.5, where NCCL picks the NVLS tree, measures 172-202 us at 4 B-8 KiB).
  const bool nvls_inter = tb.nvls_latency_inter || !nccl_estimate;
  switch (a) {
    case Algorithm::Ring: {
      const double steps = ring_steps(c.coll, n);
      if (c.coll == Collective::Reduce || c.coll == Collective::Broadcast) {
        // Pipelined chain: nsteps hops; Simple prices its hops with the tree's latency (tuning.cc,
        // the !sameChannels branch).
        const HwClass hw = nodes == 1 ? g.intra_hw : HwClass::Net;
        const NcclLevelParams* lv = nodes == 1 ? g.intra : g.inter;
        lat += steps * hw_lat(tb, lv, hw, pr == Protocol::Simple ? kTree : kRing, pi);
      } else {
        // NCCL's estimate (v2.18 on): inter-node rings pay the host's net overhead per step (x3 for
        // Simple). Not the time: the proxy posts those sends while the chain goes on, and what they
        // cost beyond the chain is the proxy bound's (bandwidth_time). The forced ring of the 2-node
        // p5 log (NCCL 2.22.3, AMD, 2 us) runs at 71 us where the floor would give 113 us
        // (docs/simulator.md §2, "Proxy bound").
        double intra_eff = intra;
        if (nodes > 1 && tb.net_overhead && nccl_estimate) intra_eff = std::max(intra_eff, host_net_overhead_us(p, pr));
        const double inter_steps = nodes == 1 ? 0.0 : (c.coll == Collective::AllReduce ? 2.0 : 1.0) * (nodes - 1);
        lat += (steps - inter_steps) * intra_eff + inter_steps * inter;
        // ncclTopoGetAlgoTime: multi-node ring Simple AllReduce plateau, x1.4 (x1.9 before Ampere)
        // once a channel's per-rank share is at least 64 B; before v2.18 once nBytes >= nRanks / 16
        // x 64 KiB, x1.9 (v2.17: x1.5 from Hopper on).
        if (nodes > 1 && pr == Protocol::Simple && c.coll == Collective::AllReduce) {
          if (tb.plateau == 2 && c.bytes / (call_channels(p, c) * static_cast<double>(n)) >= 64)
            lat *= p.arch == Arch::Volta ? 1.9 : 1.4;
          else if (tb.plateau < 2 && c.bytes >= n / 16.0 * 65536)
            lat *= tb.plateau == 1 && p.arch >= Arch::Hopper ? 1.5 : 1.9;
        }
      }
      break;
    }
    case Algorithm::Tree:
      lat += 2.0 * ((ppn - 1) * intra + log2i(nodes) * inter);
      break;
    case Algorithm::CollNet:  // CollNet Direct: 0.4 us arity serialization per local rank (v2.18: 0.5)
      if (tb.collnet_chain_lat)
        lat += 2.0 * (ppn - 1) * intra + inter;
      else
        lat += 2.0 * (std::min(1, ppn - 1) * intra + (ppn - 1) * tb.collnet_arity) + inter;
      break;
    case Algorithm::Nvls:
      lat += intra + (nodes > 1 ? (nvls_inter ? inter : hw_lat(tb, g.inter, HwClass::Net, r, pi)) : 0.0);
      break;
    case Algorithm::NvlsTree: {
      const double hop = nvls_inter ? inter : hw_lat(tb, g.inter, HwClass::Net, r, pi);
      lat += intra + 2.0 * (tb.nvls_tree_linear ? nodes - 1 : log2i(nodes)) * hop;
      break;
    }
    case Algorithm::Auto:
      break;
  }
  return lat;
}

double bandwidth_time(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr, const FlowTime& flow,
                      bool nccl_estimate) {
  const double flow_s = flow.s;
  const int n = c.ranks, nodes = std::max(1, c.nodes);
  const int ai = static_cast<int>(p.arch), ni = node_index(nodes);
  // Channels the per-channel caps multiply: the search graph's (nccl_graph_channels), half the collective
  // channels that run, in the time as in NCCL's estimate. The caps (perChMax*Bws) are constants NVIDIA
  // tuned inside that formula, which has always multiplied them by graphs[a]->nChannels while
  // ncclTopoPostset ran twice as many channels, so graph channels x cap is the aggregate limit they
  // were tuned to; the channels that run would double it (docs/simulator.md §2, §6 fifth session).
  const double nch = nccl_graph_channels(p, c);
  const double S = c.bytes;
  const int li = nodes == 1 ? ai : (p.amd_cpu ? 1 : 0);
  const double ll_max = kLlMaxBw[li][ni] * 1e9;
  // Bus bytes: the bytes a bus bandwidth is measured against (NCCL's algbw/busbw ratio):
  // ring/NVLS nsteps/nRanks * S; tree and CollNet 2 * S.
  const double ring_bus = S * ring_steps(c.coll, n) / n;
  double t = flow_s;
  auto cap = [&](double bus_bytes, double bw) { t = std::max(t, bus_bytes / bw); };
  // The NVLS tree's stages' own paces for its pipeline fill: the NVSwitch side (over the NVLS
  // efficiency) and the network; < 0 unknown.
  double intra_pace = -1, net_pace = -1;
  switch (a) {
    case Algorithm::Ring:
      if (pr == Protocol::LL) {  // busBw = min(llMaxBw, busBw * .5)
        // tuning.cc's factor is ring_ll for AllReduce, Reduce or across nodes, else ring_ll_other.
        const bool quarter = c.coll == Collective::AllReduce || c.coll == Collective::Reduce || nodes > 1;
        if (nccl_estimate) {  // the version's factor and cap (tables())
          const Tables& tb = tables(p);
          t /= quarter ? tb.ring_ll : tb.ring_ll_other;
          cap(ring_bus, nodes == 1 && p.arch == Arch::Hopper ? tb.hopper_ll_max1 * 1e9 : ll_max);
        } else {
          // The time: v2.21 raised the factor to .5 together with Hopper's llMaxBws row (87.7 -> 141 GB/s
          // in one node) and left the LL kernel as it was (src/device/prims_ll.h unchanged from v2.20.5-1
          // to v2.21.5-1): a re-tuning on Hopper. Volta and Ampere keep the factors of the tables tuned
          // while they were NCCL's newest GPUs (v2.20's: 1/4, else 1/3), Hopper on the newest's .5
          // (docs/simulator.md §2).
          static const Tables pre_hopper = make_tables(22005);
          const Tables& tb = p.arch >= Arch::Hopper ? newest_tables() : pre_hopper;
          t /= quarter ? tb.ring_ll : tb.ring_ll_other;
          cap(ring_bus, ll_max);
        }
      } else if (pr == Protocol::LL128) {  // min(busBw * .92, nCh * perChMaxRingLL128Bw)
        // before v2.23 NCCL's estimate used x 0.7 with one rank per node (tables())
        t /= nccl_estimate && tables(p).ll128_one_ppn && n < 2 * nodes ? 0.7 : 0.92;
        cap(ring_bus, nch * kPerChRingLL128[ai][ni] * 1e9);
      }
      break;
    case Algorithm::Tree: {
      t /= 0.92;  // AllReduce tree: min(busBw * .92, nCh * perChMaxTreeBw)
      cap(2 * S, nch * kPerChTree[ai][ni] * 1e9);
      if (pr == Protocol::LL) {  // min(busBw / 3.8, llMaxBw)
        t *= 3.8;
        cap(2 * S, ll_max);
      } else if (pr == Protocol::LL128) {  // min(busBw * (7/9 one node, 120/128 else), nCh * perChMaxTreeLL128Bw)
        t /= nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
        cap(2 * S, nch * kPerChTreeLL128[ai][ni] * 1e9);
      }
      // NCCL's static correction for trees at medium sizes: in its estimate always; in p2v's time
      // for LL and LL128 (for Simple the pipeline fill below models the same effect). Across nodes
      // the LL128 tree pays both the factor and its network fill: with the fill alone the suite's
      // multi-node LL128 trees (IB, RoCE and EFA clusters, 256 KiB-64 MiB) came out 0.62-0.94,
      // with both 0.68-1.08 but for one 4-node H100 cluster (docs/simulator.md §6, third session).
      const int ls = log2i(static_cast<long long>(S) >> 6);
      if (ls >= 0 && ls < 23 && (nccl_estimate || pr != Protocol::Simple))
        t /= kTreeCorrection[static_cast<int>(pr)][ls];
      break;
    }
    case Algorithm::Nvls:
    case Algorithm::NvlsTree: {
      // tuning.cc (v2.30.7): busBw = nCh x min(bwIntra * nvlsEfficiency * (nCh-1)/nCh [x2 AllReduce],
      // bwInter [x2 NVLS tree on <= 2 nodes], perChMaxNVLSTreeBw [NVLS tree]): the efficiency is the
      // NVSwitch's, so it slows the links inside the nodes, not the network's (the x2 factors are in
      // this model's flows). nCh there is the NVLS graph's channel count (graphs[NCCL_ALGO_NVLS]->
      // nChannels), not the collective channels: the NVLS search makes one channel per head GPU,
      // at most min(NCCL_MAX_NVLS_ARITY = 32, GPUs per node) (src/graph/search.cc ncclTopoCompute:
      // graph->maxChannels; src/graph/connect.cc: nvls.nHeads = the graph's distinct heads), i.e. this
      // model's heads = GPUs per node. So on 8 GPUs per node: 7/8 and 8 x 57.7 GB/s (2 nodes) or
      // 8 x 45.5 GB/s (> 2 nodes) of bus bandwidth.
      // The NVSwitch side is the flows that stay inside a node (local_s: a GPU's traffic to its
      // NIC goes over PCIe, not NVLink); where not known, the busiest link inside nodes.
      const double g = nvls_graph_channels(c);
      const double eff = p.effective_nvls_efficiency() * (g - 1) / g;
      const double in = flow.local_s >= 0 ? flow.local_s : flow.intra_s;
      if (nccl_estimate && !tables(p).nvls_eff) {
        // Before v2.28 (tables()): NCCL's estimate has no NVLS efficiency, no NVLS-tree cap and no x2
        // credits, and converts AllReduce bus bandwidth to algbw by 5/6 instead of nRanks/nsteps. Against
        // v2.30.7's estimate (this model's flows, above, with nccl_estimate_factor) that is, before the
        // efficiency: NVLS tree (and multi-node NVLS) x 1.2 n/(n-1) (both formulas are nCh x min(bwIntra,
        // bwInter'), converted by 5/6 against 2 n/(2(n-1))); one-node NVLS AllReduce x 1.2 x
        // eff (n-1)/n over v2.30.7's, i.e. 1.2 x the flow; AllGather/ReduceScatter busBw = nCh x bwIntra
        // without (ppn-1)/ppn and efficiency, i.e. n/(n-1) x the flow. nccl_estimate_factor is 1 here.
        const double t0 = in >= 0 && flow.net_s >= 0 ? std::max(in, flow.net_s) : flow_s;
        const double q = n > 1 ? static_cast<double>(n) / (n - 1) : 1.0;
        if (c.coll != Collective::AllReduce)
          t = t0 * q;
        else
          t = t0 * (a == Algorithm::Nvls && nodes == 1 ? 1.2 : 1.2 * q);
        break;
      }
      if (in >= 0 && flow.net_s >= 0) {
        t = std::max(in / eff, flow.net_s);
        intra_pace = in / eff;
        net_pace = flow.net_s;
      } else {
        t /= eff;
      }
      if (a == Algorithm::NvlsTree) cap(ring_bus, g * kPerChNvlsTree[ai][ni] * 1e9);
      // ncclTopoGetAlgoTime (from v2.29.2, NVIDIA/nccl tag v2.29.2-1 = ebd1e929, src/graph/tuning.cc;
      // the same in v2.30.7): the NVLS tree AllReduce's bandwidth is multiplied by the tree's
      // treeCorrectionFactor[protocol][log2(bytes/64)] (indices 0-23: 64 B up to 1 GiB) when
      // minCompCap >= 100 (Blackwell) and the host CPU is x86. In NCCL's estimate only, as the Simple
      // tree's (the pipeline fill stands for the effect in the time). p2v has no CPU-architecture
      // setting: Blackwell systems are taken as x86 hosts (DGX/HGX B200; a Grace-hosted GB200 is not).
      if (a == Algorithm::NvlsTree && nccl_estimate && p.arch >= Arch::Blackwell && tables(p).nvls_tree_correction &&
          c.coll == Collective::AllReduce) {
        const int ls = log2i(static_cast<long long>(S) >> 6);
        if (ls >= 0 && ls < 24) t /= kTreeCorrection[static_cast<int>(pr)][ls];
      }
      break;
    }
    case Algorithm::CollNet:
      // tuning.cc, CollNet Direct AllReduce: busBw * .85 from Hopper on (the .9 factor is for
      // AllGather/ReduceScatter, which this model does not offer on CollNet).
      if (p.arch >= Arch::Hopper) t /= 0.85;
      break;
    case Algorithm::Auto:
      break;
  }
  // No channel term at small sizes: enqueue.cc topoGetAlgoInfo drops ring/tree channels only while
  // a channel would get less than `threshold` bytes per thread (nBytes < nc x nthreads x threshold;
  // NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD, ring LL's x nRanks), i.e. while each step of a channel
  // is a single line per thread, which the per-hop latency already prices; NCCL's own estimate
  // (ncclTopoGetAlgoTime) prices the call with all channels' bandwidth. (Scaling the bandwidth term
  // by channels / channels used was tried: docs/simulator.md, "Tried and not kept".)
  if (!nccl_estimate) {
    t += pipeline_fill_s(p, c, a, pr, t, intra_pace, net_pace);
    // The net proxy's per-operation cost bounds the bandwidth part (proxy_bound_s; not in NCCL's
    // estimate, which counts one overhead per ring step in its latency).
    t = std::max(t, proxy_bound_s(p, c, a, pr));
  }
  return t;
}

double nccl_estimate_factor(const NcclParams& p, const CallShape& c, Algorithm a) {
  const double n = c.ranks;
  const int nodes = std::max(1, c.nodes);
  const double ppn = std::max(1.0, n / nodes);
  switch (a) {
    case Algorithm::Nvls:
      if (!tables(p).nvls_eff) return 1.0;  // before v2.28: the whole estimate is in bandwidth_time
      if (nodes > 1) return 1.0;
      // tuning.cc: NVLS busBw = bwIntra * nvlsEfficiency * (nCh-1)/nCh, x2 for AllReduce
      // ("pipelines two operations"), x(ppn-1)/ppn for AllGather/ReduceScatter; AllReduce converts
      // to algbw by nRanks/nsteps, AllGather/ReduceScatter use the bus bandwidth as is. This
      // model's NVLS flows move S per GPU link (AllReduce) and (p-1)/p S (the ring's bytes, AG/RS),
      // so NCCL's estimate is the model's x (p-1)/p (AllReduce) and x (p/(p-1))^2 (AG/RS).
      if (c.coll == Collective::AllReduce) return (ppn - 1) / ppn;
      if (c.coll == Collective::AllGather || c.coll == Collective::ReduceScatter) return (n / (n - 1)) * (n / (n - 1));
      return 1.0;
    case Algorithm::CollNet: {
      // tuning.cc: CollNet Direct AllReduce busBw / factor, factor = ppn / nChannels (GPU/NIC ratio)
      // less half its excess over 1.
      double f = ppn / call_channels(p, c);
      f -= (f - 1) / 2;
      return f;
    }
    default:
      return 1.0;
  }
}

PipelineShape pipeline_shape(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr) {
  PipelineShape ps;
  // LL and LL128 forward at line granularity (8 and 120 data bytes per flag) inside a node: no
  // store-and-forward per chunk there (across nodes, LL128 trees only with "ll128_net_fill").
  // Ring: every rank sends step k after receiving step k-1 (lockstep), which the flow and latency
  // terms already price. CollNet and multi-node NVLS: not modelled (stages = 1).
  if (c.coll != Collective::AllReduce || c.ranks < 2) return ps;
  const int nodes = std::max(1, c.nodes), ppn = std::max(1, c.ranks / nodes);
  // NVLS and the NVLS tree run on NCCL's NVLS channels, the others on the collective channels.
  const bool nvls = a == Algorithm::Nvls || a == Algorithm::NvlsTree;
  const double nch = nvls ? nvls_channels(p, c) : call_channels(p, c);
  const double per_channel = c.bytes / nch;  // enqueue.cc: calcCollChunking(nChannels = 1, per-channel bytes)
  if (pr == Protocol::LL128 && a == Algorithm::Tree && nodes > 1 && p.ll128_net_fill) {
    // The net proxy posts an LL128 step to the NIC once the GPU has written all of it, and the
    // receiver sees it once it has fully arrived (src/transport/net.cc sendProxyProgress /
    // recvProxyProgress), so across nodes the tree is a chunk pipeline with the Simple tree's
    // stages. Chunk: one step of the LL128 buffer in data bytes (init.cc DEFAULT_LL128_BUFFSIZE =
    // 120 x 640 x 8 steps x 8 B; a step is 614400 B, 576000 of them data), halved by enqueue.cc
    // calcCollChunking while the per-channel bytes hold fewer than (1 + log2(nodes) + 0.1 ppn) x
    // 64 / ppn chunks (down to 128 KiB) or x 16 / ppn (down to 32 KiB); integer division as there.
    const double nsteps = 1 + log2i(nodes) + 0.1 * ppn;
    double chunk = 576000;
    while (std::floor(per_channel / chunk) < nsteps * 64 / ppn && chunk > 131072) chunk = std::floor(chunk / 2);
    while (std::floor(per_channel / chunk) < nsteps * 16 / ppn && chunk > 32768) chunk = std::floor(chunk / 2);
    ps.stages = 2 + 2 * log2i(nodes);
    ps.chunk = chunk;
    ps.heads = 1;
    ps.chunks = std::max(1.0, std::ceil(per_channel / chunk));
    return ps;
  }
  if (pr != Protocol::Simple) return ps;
  // init.cc DEFAULT_BUFFSIZE 4 MiB (NCCL_BUFFSIZE overrides) / NCCL_STEPS 8
  const double kSimpleStep = (p.buffsize > 0 ? p.buffsize : 4.0 * 1024 * 1024) / 8;
  // transport/nvls.cc: NCCL_NVLS_CHUNKSIZE, 128 KiB by default ("nvls_chunksize")
  const double nvls_chunk = p.nvls_chunk > 0 ? p.nvls_chunk : 128.0 * 1024;
  switch (a) {
    case Algorithm::Tree:
      // device/all_reduce.h runTreeSplit: reduce up the intra-node chain and the inter-node tree,
      // broadcast back down; every hop receives a whole step before forwarding it (Simple). Across
      // nodes the stages at the network's pace are counted: the node head's reduction feeding the
      // NIC, one per tree level up and down, the broadcast fed by it (the NVLink chain hops run
      // faster and overlap); inside one node, every chain hop up and down.
      ps.stages = nodes > 1 ? 2 + 2 * log2i(nodes) : 2 * (ppn - 1);
      ps.chunk = kSimpleStep;  // Simple tree: stepSize x chunkSteps (1)
      ps.heads = 1;
      break;
    case Algorithm::Nvls:
    case Algorithm::NvlsTree: {
      if (a == Algorithm::Nvls && nodes > 1) return ps;
      // device/all_reduce.h NVLS: scatter -> reduce+multicast -> gather warp groups, each handing
      // a chunk to the next through a buffer, all at NVLink pace (3 stages). NVLS tree: the stages
      // at the network's pace, as for the tree: the NVLS reduction feeding the NIC, one network
      // hop per tree level up and down, the multicast fed by it (scatter/gather copies overlap).
      ps.stages = a == Algorithm::Nvls ? 3 : 2 + 2 * log2i(nodes);
      ps.heads = ppn;
      // v2.27.7 enqueue.cc calcCollChunking: NVLS starts from one Simple step capped by the NVLS
      // chunk, the NVLS tree from the NVLS chunk.
      double chunk = a == Algorithm::Nvls ? std::min(kSimpleStep, nvls_chunk) : nvls_chunk;
      const double ops = ps.heads;  // concurrentOps = nChannels (1) x nvls.nHeads
      if (a == Algorithm::Nvls) {   // enqueue.cc calcCollChunking, NVLS branch
        if (per_channel < 64 * ops * chunk && chunk > 65536) chunk = 65536;
        if (per_channel < 8 * ops * chunk && chunk > 32768) chunk = 32768;
        if (per_channel < 2 * ops * chunk && chunk > 16384) chunk = 16384;
      } else {  // NVLS tree branch: NCCL_NVLSTREE_MAX_CHUNKSIZE caps the chunk, by default 64 KiB from 4 nodes on
        chunk = std::min(chunk, p.nvls_tree_max_chunk > 0 ? p.nvls_tree_max_chunk : nodes >= 4 ? 65536.0 : chunk);
        if (per_channel < 32 * ops * chunk && chunk > 262144) chunk = 262144;
        if (per_channel < 16 * ops * chunk && chunk > 131072) chunk = 131072;
        if (per_channel < 4 * ops * chunk && chunk > 65536) chunk = 65536;
        if (per_channel < 1 * ops * chunk && chunk > 32768) chunk = 32768;
      }
      ps.chunk = chunk;
      break;
    }
    default:
      return ps;
  }
  const double loop = ps.chunk * ps.heads;  // bytes per channel per pipeline step
  ps.chunks = std::max(1.0, std::ceil(per_channel / loop));
  return ps;
}

double pipeline_fill_s(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr, double bw_s,
                       double intra_pace_s, double net_pace_s) {
  const PipelineShape ps = pipeline_shape(p, c, a, pr);
  if (ps.stages <= 1) return 0.0;
  const int nodes = std::max(1, c.nodes);
  if (nodes > 1 && intra_pace_s >= 0 && net_pace_s >= 0 && a == Algorithm::NvlsTree) {
    // A pipeline whose stages run at different paces takes (sum of the stages' chunk times) +
    // (chunks - 1) x the bottleneck's chunk time; the bandwidth term is chunks x the bottleneck's,
    // so the fill is sum - bottleneck. The NVLS tree's stages (pipeline_shape): the NVLS reduction
    // feeding the NIC and the multicast fed by it at the NVSwitch's pace, one network hop per tree
    // level up and down. A network hop of the fill moves one tree's chunk: NCCL's double binary
    // tree (src/graph/trees.cc) gives half the channels to each tree, and this model's flows charge
    // a node's network links with both trees' traffic, of which a hop in the fill carries one.
    const int net_stages = ps.stages - 2;
    const double sum = (2 * intra_pace_s + net_stages * net_pace_s / 2) / ps.chunks;
    return std::max(0.0, sum - bw_s / ps.chunks) * p.effective_fill_stage();
  }
  // A pipeline of `stages` equal store-and-forward stages moving `chunks` chunks per channel takes
  // (chunks + stages - 1) chunk times; the bandwidth term is chunks x chunk time.
  return bw_s / ps.chunks * (ps.stages - 1) * p.effective_fill_stage();
}

static constexpr Algorithm kAlgos[] = {Algorithm::Ring, Algorithm::Tree, Algorithm::Nvls, Algorithm::NvlsTree,
                                       Algorithm::CollNet};
static constexpr Protocol kProtos[] = {Protocol::LL, Protocol::LL128, Protocol::Simple};

// Candidate (algorithm, protocol) pairs for a call under the user's choice: everything NCCL offers
// (auto), or the forced algorithm (nvls: NVLS or NVLS tree) and/or protocol where offered;
// a forced algorithm the call does not offer falls back to ring (as NCCL's fallback does).
std::vector<std::pair<Algorithm, Protocol>> nccl_candidates(const NcclParams& np, const CallShape& cs, Algorithm algo,
                                                            Protocol proto) {
  std::vector<std::pair<Algorithm, Protocol>> out;
  auto want_algo = [&](Algorithm a) {
    if (algo == Algorithm::Auto) return true;
    if (algo == Algorithm::Nvls || algo == Algorithm::NvlsTree) return a == Algorithm::Nvls || a == Algorithm::NvlsTree;
    return a == algo;
  };
  for (int pass = 0; pass < 3 && out.empty(); ++pass)
    for (Algorithm a : kAlgos) {
      if (pass < 2 ? !want_algo(a) : a != Algorithm::Ring) continue;
      for (Protocol p : kProtos)
        if ((pass == 0 ? (proto == Protocol::Auto || p == proto) : true) && available(np, cs, a, p))
          out.emplace_back(a, p);
    }
  return out;
}

}  // namespace p2v::sim
