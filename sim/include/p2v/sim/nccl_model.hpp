#pragma once
// NCCL-faithful cost of one collective call (docs/simulator.md §2).
//
// Design. NCCL prices every (algorithm, protocol) pair of a call as latency + bytes / bandwidth
// (src/graph/tuning.cc: ncclTopoTuneModel, ncclTopoGetAlgoTime) and runs the cheapest
// (src/enqueue.cc: topoGetAlgoInfo). p2v keeps that structure but splits the two terms:
//  - the bandwidth term comes from the simulators' own link accounting (every group of a step
//    expanded into the flows of the algorithm - ring, tree, NVLS, CollNet - routed over the
//    system, busiest shared link wins), so contention between the groups of a step stays; NCCL's
//    per-algorithm/protocol efficiencies and bus-bandwidth caps (LL, LL128, tree, NVLS) are then
//    applied to it (bandwidth_time);
//  - the latency term is NCCL's formula: base latency per algorithm and protocol, plus per-hop
//    hardware latencies (NVLink, PCI, network) times the hops of the algorithm (latency_us);
//  - every call pays a launch overhead (NcclParams::launch_us).
// The parameters live in the system file's optional "nccl" section (strictly read, written back
// by calibration): per system the architecture, channels, launch overhead, NVLS/SHARP
// availability; per level (by level name) the bus bandwidth and per-hop latencies per protocol.
// Defaults are NCCL's own constants (NVIDIA/nccl v2.30.7, commit 5067397c, src/graph/tuning.cc).
#include <algorithm>
#include <array>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::sim {

enum class Algorithm;  // cost.hpp: Ring, Tree, Auto, Nvls, NvlsTree, CollNet

// NCCL's protocols (src/include/nccl_common.h: NCCL_PROTO_LL, _LL128, _SIMPLE).
enum class Protocol { LL = 0, LL128 = 1, Simple = 2, Auto = 3 };
inline constexpr int kNumProtocols = 3;
// The protocols' keys in a system file's per-protocol objects and lists, by Protocol index.
inline constexpr const char* kProtocolKeys[kNumProtocols] = {"ll", "ll128", "simple"};
const char* to_string(Protocol p);              // "LL", "LL128", "Simple", "auto"
Protocol parse_protocol(const std::string& s);  // ll, ll128, simple, auto (any case); throws p2v::Error

// The hardware class of a hop, selecting NCCL's hwLat row (tuning.cc: NCCL_HW_NVLINK/PCI/NET).
enum class HwClass { NVLink = 0, PCI = 1, Net = 2 };
const char* to_string(HwClass h);  // "nvlink", "pci", "net"
// Default class of a level's interconnect: nic -> net, pcie -> pci, switch/ring -> nvlink.
HwClass hw_class_of(engine::LinkKind k);
// Class of a topology edge kind (free text of a "topology" section): nic/network/net/ib -> net,
// pcie/pci/qpi/upi/cpu -> pci, anything else -> nvlink.
HwClass hw_class_of(const std::string& edge_kind);

// GPU generation: selects NCCL's per-architecture tables (tuning.cc compCapIndex).
enum class Arch { Volta = 0, Ampere = 1, Hopper = 2, Blackwell = 3 };
const char* to_string(Arch a);  // "volta", "ampere", "hopper", "blackwell"

// Per level (the level whose instances the interconnect joins; keyed by level name).
struct NcclLevelParams {
  std::string level;          // level name (must exist in the system)
  std::optional<HwClass> hw;  // absent: hw_class_of(interconnect kind)
  double bus_bw_gbps = 0.0;   // effective bandwidth NCCL reaches per uplink (Simple ring),
                              // GB/s; 0: the interconnect's bandwidth_gbps
  std::array<double, kNumProtocols> hop_latency_us{-1, -1, -1};  // LL, LL128, Simple; < 0: NCCL's
                                                                 // hwLat for the class and algorithm
  // Per protocol, a factor on the level's hop latency (NCCL's per-algorithm hwLat, or hop_latency_us
  // where set): what `p2v calibrate` fits, so a fitted file keeps NCCL's per-algorithm table.
  std::array<double, kNumProtocols> hop_latency_scale{1, 1, 1};
  // A network level: the latency its network plugin reports to NCCL (ncclNetProperties_t::latency,
  // NCCL's graph->latencyInter), us. NCCL's own estimate, so its pick, adds this one; the time adds
  // the interconnect's latency_us, the hop's real cost. < 0: the interconnect's latency_us for both.
  // (AWS's EFA plugin reports 75 us on p4d and p5 alike, a tuning value: docs/simulator.md §2.)
  double reported_latency_us = -1.0;
  // What NCCL's estimate adds for a hop whose real latency is `latency_us`.
  double estimate_latency_us(double latency_us) const {
    return reported_latency_us >= 0 ? reported_latency_us : latency_us;
  }
  int nics = 0;           // informative: NICs per instance (0 = not stated)
  double nic_gbps = 0.0;  // informative: per-NIC line rate, GB/s
};

// NCCL versions whose tuning constants this model holds (docs/simulator.md §2, "NCCL version"),
// encoded major * 10000 + minor * 100 + patch. Versions after the newest use the newest's tables.
inline constexpr int kNcclNewestVersion = 23007;  // v2.30.7: the model's default
inline constexpr int kNcclOldestVersion = 20900;  // v2.9.0
// "2.26.2", "2.26.2-1", "v2.26.2", "2.26.2+cuda12.8", "2.26" -> 22602 (patch 0 when absent).
// Malformed text or a version before kNcclOldestVersion: p2v::Error naming `what`.
int parse_nccl_version(const std::string& text, const std::string& what);
std::string nccl_version_string(int v);  // 22602 -> "2.26.2"

// Per system ("nccl" section of a system file; presets carry one).
enum class NcclTuner { None, Fastest, AwsOfiP5 };
// The tuners' names in a system file's "tuner" and on --nccl-tuner, by NcclTuner index.
inline constexpr const char* kNcclTunerNames[] = {"none", "fastest", "aws-ofi-p5"};

struct NcclParams {
  Arch arch = Arch::Ampere;
  // NCCL version whose tuning constants apply (latencies in the time and the pick; NCCL's bandwidth
  // formulas in the pick); 0: kNcclNewestVersion.
  int version = 0;
  int channels = 0;               // collective channels NCCL uses at full size; 0: default_channels(arch)
  double launch_us = -1.0;        // per-call overhead (launch, host sync) added to every call; < 0: default
  double group_launch_us = -1.0;  // host time per further GPU one thread launches in the same group
                                  // (group_launch_s); < 0: kDefaultGroupLaunchUs
  bool nvls = false;              // NVSwitch reduction (NVLink SHARP) inside a node (H100/B200 NVSwitch)
  double nvls_efficiency = -1.0;  // NVLS bandwidth efficiency; < 0: NCCL's nvlsEfficiency[arch]
  bool sharp = false;             // in-network reduction on the network (CollNet / IB SHARP)
  bool amd_cpu = false;           // multi-node LL cap uses NCCL's AMD row (llMaxBws[1])
  double net_overhead_us = -1.0;  // per inter-node ring step host overhead; < 0: NCCL's 1 us
  double fill_stage = -1.0;       // a pipeline stage's time in chunk times of the bottleneck stage
                                  // (pipeline_fill_s); < 0: 1 (every counted stage as slow)
  // Multi-node LL128 trees as a chunk pipeline (NCCL's net proxy sends whole steps): on by
  // default; "ll128_net_fill": false turns it off (docs/simulator.md §2, "Pipeline fill").
  bool ll128_net_fill = true;
  // LL128 offered for calls across nodes (NCCL's own rule, tuning.cc, is taken as met: §2). false:
  // LL128 only inside one node, what the published p4d runs show (levels.cpp, the p4d preset).
  bool ll128_net = true;
  // NCCL_PROTO: protocols NCCL may use, bit i = Protocol i (LL, LL128, Simple); 7 = all.
  int protocols = 7;
  // NCCL_ALGO: algorithms NCCL may use, bit i = Algorithm i (ring, tree, nvls, nvls-tree, collnet); 31 = all.
  int algorithms = 31;
  // Collective channels of a call across nodes ("net_channels"; NCCL_DEBUG=INFO prints them as
  // "N coll channels"); <= 0: the same as inside a node (channels).
  int net_channels = 0;
  // NCCL_BUFFSIZE, bytes (the Simple buffer; a step is buffsize / 8); <= 0: NCCL's 4 MiB.
  double buffsize = 0.0;
  // NCCL_NVLS_CHUNKSIZE, bytes (the NVLS pipeline's chunk before calcCollChunking halves it);
  // <= 0: NCCL's 128 KiB (src/transport/nvls.cc).
  double nvls_chunk = 0.0;
  // NCCL_NVLSTREE_MAX_CHUNKSIZE, bytes (the NVLS tree's chunk cap); <= 0: NCCL's default, 64 KiB
  // from 4 nodes on, else the NVLS chunk (src/enqueue.cc calcCollChunking, v2.20.3 on).
  double nvls_tree_max_chunk = 0.0;
  // A tuner plugin (NCCL_TUNER_PLUGIN) in place of NCCL's own pick ("tuner"; docs/simulator.md §2):
  // Fastest, one tuned by measurement on the cluster whose configuration is not known, taken to pick
  // the candidate (within "protocols"/"algorithms") this model prices fastest ("fastest"); AwsOfiP5,
  // aws-ofi-nccl's region tuner for p5/p5e (aws_ofi_p5_regions; "aws-ofi-p5").
  NcclTuner tuner = NcclTuner::None;
  std::vector<NcclLevelParams> levels;

  const NcclLevelParams* level(const std::string& name) const;
  int effective_channels() const;
  int effective_version() const { return version > 0 ? std::min(version, kNcclNewestVersion) : kNcclNewestVersion; }
  double effective_launch_us() const;
  double effective_group_launch_us() const;
  double effective_nvls_efficiency() const;
  double effective_fill_stage() const { return fill_stage >= 0 ? fill_stage : 1.0; }
};
int default_channels(Arch a);
inline constexpr double kDefaultLaunchUs = 4.0;  // assumption (docs/simulator.md), calibrated per system
// Fitted (docs/simulator.md): the OCI DGX A100 log run with all_reduce_perf -g 8 (one thread, 8
// GPUs) is flat at 32.0 us up to 32 KiB where this model predicts 19.0 us with one GPU per thread:
// (32.0 - 19.0) / 7 further launches.
inline constexpr double kDefaultGroupLaunchUs = 1.86;

// NCCL launches the kernels of one group call (ncclGroupStart/End) from the calling thread, one
// communicator after another (NVIDIA/nccl v2.30.7-1, src/group.cc doLaunches: per comm
// cudaSetDevice, ncclLaunchPrepare, ncclLaunchKernel, ncclLaunchFinish). A thread driving
// `gpus_per_thread` GPUs (nccl-tests -g N) starts the last GPU's kernel (gpus_per_thread - 1)
// launches late, and the collective waits for it: that much host time is added to the call.
double group_launch_s(const NcclParams& p, int gpus_per_thread);

// Reads the system's "nccl" section (defaults when absent). Strict: unknown fields, unknown level
// names, bad values are p2v::Error naming the path.
NcclParams nccl_params(const engine::System& s);
NcclParams nccl_params_from_json(const nlohmann::json& j, const engine::System& s);
// Writes the section back (only fields that differ from the defaults). Round-trips.
nlohmann::json nccl_json(const NcclParams& p);

// The hop latencies of one group as NCCL sees it: the intra-node class and level parameters, the
// inter-node ones (when the group spans nodes), and the net latency NCCL adds per inter hop
// (graph->latencyInter: the outermost crossed interconnect's latency_us).
struct GroupLevels {
  HwClass intra_hw = HwClass::NVLink;
  const NcclLevelParams* intra = nullptr;  // may be null
  const NcclLevelParams* inter = nullptr;  // may be null
  double latency_inter_us = 0.0;
  // What the network plugins report as that latency (NcclLevelParams::reported_latency_us), used in
  // NCCL's own estimate; < 0: latency_inter_us.
  double reported_latency_inter_us = -1.0;
  double estimate_latency_inter_us() const {
    return reported_latency_inter_us >= 0 ? reported_latency_inter_us : latency_inter_us;
  }
};

// One group's call: collective, ranks, nodes spanned (ranks per node = ranks / nodes), nccl-tests
// size S (bytes per rank; AllGather/ReduceScatter: the full array).
struct CallShape {
  engine::Collective coll = engine::Collective::AllReduce;
  int ranks = 1, nodes = 1;
  double bytes = 0.0;
  // The group's GPUs inside a node are joined by a PCIe/CPU hop (NCCL's graph typeIntra above
  // PATH_NVB): NCCL then does not enable LL128 (tuning.cc).
  bool intra_pci = false;
};

// NCCL's double binary tree over n ranks (NVIDIA/nccl v2.30.7 src/graph/trees.cc ncclGetBtree,
// ncclGetDtree): tree 0 is the bit-pattern binary tree rooted at rank 0 (one child), tree 1 its
// mirror (rank -> n-1-rank) when n is even, else its shift by one rank. The parent of `rank` in
// tree `t` (0 or 1), -1 at the root.
int nccl_tree_parent(int n, int rank, int t);
// The largest number of tree links (parent + children, both trees) of any rank: each link carries
// half the data in each direction, so a node's network link carries maxdeg x S/2 per direction.
int nccl_tree_max_degree(long long n);

// Whether NCCL offers this algorithm/protocol for the call on this system (tuning.cc's filters).
bool available(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr);
// Candidate (algorithm, protocol) pairs for a call under the user's choice (Auto: all NCCL offers;
// a forced algorithm/protocol where offered, else ring).
std::vector<std::pair<Algorithm, Protocol>> nccl_candidates(const NcclParams& p, const CallShape& c, Algorithm algo,
                                                            Protocol proto);
// aws-ofi-nccl's region tuner on p5/p5e (github.com/aws/aws-ofi-nccl v1.16.3, src/tuner/
// nccl_ofi_regions.cpp): the (algorithm, protocol) of every region holding the AllReduce call
// (bytes, ranks), in the plugin's order; the first that NCCL offers is used, none: NCCL's own pick.
// Empty before NCCL v2.19 (no tuner plugins), on two nodes or fewer (the plugin leaves them to NCCL),
// for other collectives (its p5 regions for all-gather and reduce-scatter, one GPU per node, are not
// applied), and for GPUs per node other than 8, 2 and 1 (no regions). Points on an edge are inside.
std::vector<std::pair<Algorithm, Protocol>> aws_ofi_p5_regions(const CallShape& c, int nccl_version);
// NCCL's latency term, microseconds (tuning.cc latency formulas; ring AllReduce plateau factor of
// ncclTopoGetAlgoTime included).
// `nccl_estimate` = true gives NCCL's own estimate (the pick): before v2.23 NCCL's tree Simple latency
// (28 us per hop) stood for its chunk pipeline, which this model's time prices as pipeline fill, so
// the time keeps v2.30.7's tree Simple latency (docs/simulator.md §2, "NCCL version").
double latency_us(const NcclParams& p, const CallShape& c, const GroupLevels& g, Algorithm a, Protocol pr,
                  bool nccl_estimate = false);
// The simulator's busiest-link time for an algorithm's flows (at full link bandwidth): `s` over all
// links, and where known the busiest link inside nodes (`intra_s`: NVLink, PCI) and across them
// (`net_s`: network links); < 0: not split (every part is treated as `s`). `local_s`: the busiest
// link inside nodes counting only the flows that stay inside a node (the NVSwitch side of NVLS; a
// GPU's traffic to its NIC crosses PCIe, not NVLink, on NVSwitch machines); < 0: not known.
struct FlowTime {
  double s = 0.0, intra_s = -1.0, net_s = -1.0, local_s = -1.0;
  FlowTime(double all = 0.0) : s(all) {}  // NOLINT(google-explicit-constructor): a plain time converts
  FlowTime(double all, double intra, double net, double local = -1.0)
      : s(all), intra_s(intra), net_s(net), local_s(local) {}
  FlowTime scaled(double f) const {
    auto sc = [f](double x) { return x < 0 ? x : x * f; };
    return {s * f, sc(intra_s), sc(net_s), sc(local_s)};
  }
};
// Bandwidth term, seconds: `flow` is the simulator's busiest-link time for the algorithm's flows;
// applies NCCL's protocol/algorithm efficiencies and bus-bandwidth caps, the tree correction
// factors and the pipeline fill. NVLS's efficiency applies to the links inside nodes only (NCCL
// v2.30.7 tuning.cc: nvlsEfficiency scales bwIntra, not bwInter). `nccl_estimate` = true gives
// what NCCL's tuner assumes (no pipeline fill), used to pick.
double bandwidth_time(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr, const FlowTime& flow,
                      bool nccl_estimate = false);

// Channels of NCCL's NVLS graph for a call: one per head GPU, min(NCCL_MAX_NVLS_ARITY = 32, GPUs per
// node) (src/graph/search.cc). Its (n - 1) / n scales NVLS efficiency and n x perChMaxNVLSTreeBw caps
// the NVLS tree (tuning.cc); NVLS and NVLS tree need at least 2.
int nvls_graph_channels(const CallShape& c);

// Collective channels a call runs on (ring/tree; NVLS has its own, nvls_graph_channels): the
// system's "channels", across nodes its "net_channels" where set.
int call_channels(const NcclParams& p, const CallShape& c);
// NCCL's NVLS channels (NVLS and the NVLS tree run on these, whatever the collective channels).
int nvls_channels(const NcclParams& p, const CallShape& c);
// Channels of NCCL's ring/tree search graph: half the collective channels (NCCL duplicates the
// graph's channels, src/graph/connect.cc ncclTopoPostset). NCCL's estimate multiplies its
// per-channel bandwidth caps (perChMaxRingLL128Bw, perChMaxTreeBw, perChMaxTreeLL128Bw) by these,
// and so does bandwidth_time's time (the caps were tuned in that formula).
int nccl_graph_channels(const NcclParams& p, const CallShape& c);

// Where NCCL's tuner estimate of an algorithm's bandwidth term differs from this model's flows
// (tuning.cc busBw formulas for NVLS and CollNet Direct): the factor that turns the model's flow
// time into NCCL's estimate, used only to pick (choose()). 1 for ring, tree, NVLS tree.
double nccl_estimate_factor(const NcclParams& p, const CallShape& c, Algorithm a);

// How NCCL pipelines a call whose hops store and forward (Simple protocol: a receiver waits for a
// whole step before it forwards it): `stages` the pipeline's depth, `chunk` the chunk size NCCL
// chooses at this size (enqueue.cc calcCollChunking), `heads` chunks moved side by side per
// channel and step, `chunks` pipeline steps per channel. stages <= 1: nothing to fill (ring,
// LL/LL128, CollNet, multi-node NVLS).
struct PipelineShape {
  int stages = 1;
  double chunk = 0.0;
  int heads = 1;
  double chunks = 1.0;
};
PipelineShape pipeline_shape(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr);
// The pipeline's fill and drain, seconds: (stages - 1) x fill_stage chunk times, a chunk time
// being the bandwidth term `bw_s` over `chunks`. Included in bandwidth_time (not in NCCL's estimate).
// The NVLS tree across nodes with its stages' own paces known (`intra_pace_s`: the NVSwitch side
// over the NVLS efficiency, `net_pace_s`: the network; whole-call times, < 0 unknown): each stage
// at its own pace, a network hop at half its link's (one of the double binary tree's two trees),
// minus the bottleneck's chunk time.
double pipeline_fill_s(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr, double bw_s,
                       double intra_pace_s = -1, double net_pace_s = -1);

// NCCL's channel count for a ring or tree call (NVIDIA/nccl v2.30.7 src/enqueue.cc topoGetAlgoInfo):
// the channels are cut one by one while nBytes < channels x threads x threshold (threads 512, LL128
// 640; threshold LL 8 B (ring LL x ranks), LL128 8 B, Simple 64 B). Other algorithms: all channels.
int nccl_channels_used(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr);
// The network operations one GPU's proxy thread issues for a multi-node ring or tree call, and those
// of them NCCL's latency term already counts (one chunk over one connection along the path).
struct ProxyOps {
  double ops = 0.0;   // network sends the busiest GPU's proxy posts (steps or chunks x its connections)
  double path = 0.0;  // of them, the first chunk's on one connection (in NCCL's per-hop latency)
};
ProxyOps proxy_ops(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr);
// The proxy bound, seconds: NCCL's net proxy (src/transport/net.cc sendProxyProgress) is one thread
// per GPU posting every network send of every channel whose connection the GPU holds, each costing
// NCCL's host net overhead (tuning.cc getNetOverhead: 1 us Intel, 2 us AMD, x3 Simple; "inter-node
// rings still have to launch nsteps * net overhead"), so a call's bandwidth part lasts at least
// (ops - path) x overhead. Zero on one node and for NVLS/CollNet (not modelled).
double proxy_bound_s(const NcclParams& p, const CallShape& c, Algorithm a, Protocol pr);

}  // namespace p2v::sim
