#pragma once
// The simulator's cost model (docs/simulator.md; docs/model.md §8): every group's collective of a lowered step,
// expanded into NCCL-like point-to-point transfers, routed over the topology graph; all groups of
// a step run at once and share links. docs/simulator.md states the model and its assumptions.
#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/nccl_model.hpp"
#include "p2v/sim/topology.hpp"

namespace p2v::sim {

// NCCL's algorithms (docs/simulator.md §2). Ring: AllReduce = reduce-scatter + all-gather rings;
// Reduce/Broadcast pipelined chains. Tree: AllReduce only (chains inside a node, double binary
// tree across nodes). Nvls: NVSwitch reduction inside a node (NVLink SHARP, H100+); NvlsTree: NVLS
// inside nodes and a tree across them. CollNet: in-network reduction (SHARP) across nodes. Auto:
// per step, what NCCL's tuner would pick (sim/nccl_model.hpp). `--algo nvls` asks for the NVLS
// family (NvlsTree when the group spans nodes).
enum class Algorithm { Ring, Tree, Auto, Nvls, NvlsTree, CollNet };
const char* to_string(Algorithm a);               // "ring", "tree", "auto", "nvls", "nvls-tree", "collnet"
Algorithm parse_algorithm(const std::string& s);  // ring|tree|nvls|collnet|auto; throws p2v::Error

// What NCCL's tuner picks for a call (`nccl_*`) and what the step uses under the user's choice
// (`algo`, `proto`: the same pick when both are auto), each the candidate of least estimated time
// latency_s(a, p, true) + bandwidth_time(..., nccl_estimate = true) (latency_s's third argument: NCCL's estimate).
// `flow_s(a)` is the simulator's busiest-link time for algorithm a's flows (a FlowTime or seconds). NCCL's tuner
// credits the tree with the ring's graph bandwidth (tuning.cc: the same bwIntra/bwInter, ratio .5 instead of
// nRanks/nsteps), not with the tree's own traffic: its estimate of the tree is the ring's flow time x 2S / (2(p-1)/p
// S), on 2 nodes up to twice the ring's network-bound bandwidth (search.cc raises the tree graph's bwIntra); NVLS and
// CollNet estimates follow NCCL's busBw formulas (nccl_estimate_factor). With "tuner": "fastest" the candidate of
// least time by this model's own terms is taken instead. Both simulators choose through this; each then prices the
// chosen pair with its own flows.
struct NcclChoice {
  Algorithm nccl_algo = Algorithm::Ring, algo = Algorithm::Ring;
  Protocol nccl_proto = Protocol::Simple, proto = Protocol::Simple;
};
template <class FlowS, class LatencyS>
NcclChoice choose(const NcclParams& np, const CallShape& c, Algorithm algo, Protocol proto, FlowS&& flow_s,
                  LatencyS&& latency_s) {
  const double q = c.ranks;
  auto pick = [&](Algorithm al, Protocol pr) {
    std::pair<Algorithm, Protocol> best{Algorithm::Ring, Protocol::Simple};
    double best_t = std::numeric_limits<double>::infinity();
    const auto cands = nccl_candidates(np, c, al, pr);
    if (np.tuner == NcclTuner::AwsOfiP5 && al == Algorithm::Auto && pr == Protocol::Auto)
      for (const auto& r : aws_ofi_p5_regions(
               c, np.effective_version()))  // the plugin's first region NCCL offers, else NCCL's own pick
        if (std::find(cands.begin(), cands.end(), r) != cands.end()) return r;
    for (const auto& [a, p] : cands) {
      double t = 0;
      if (np.tuner == NcclTuner::Fastest) {  // a measured tuner plugin: the fastest candidate by this model's own time
        t = latency_s(a, p, false) + bandwidth_time(np, c, a, p, FlowTime(flow_s(a)), false);
      } else {
        FlowTime f = FlowTime(flow_s(a)).scaled(nccl_estimate_factor(np, c, a));
        if (a == Algorithm::Tree) {
          // The ring's graph bandwidth; on 2 nodes NCCL's tree graph search raises bwIntra up to twice
          // bwInter ("increase bwIntra for trees", src/graph/search.cc ncclTopoCompute, v2.9.9 to
          // v2.30.7) and tuning.cc prices <= 2 nodes with bwIntra: up to twice the ring's network-bound
          // bandwidth, as far as the links inside the nodes carry it.
          const FlowTime r = flow_s(Algorithm::Ring);
          double t = r.s;
          if (c.nodes == 2 && r.net_s >= 0 && r.intra_s >= 0) t = std::max(r.net_s / 2, r.intra_s);
          f = FlowTime(t * q / (q - 1));
        }
        t = latency_s(a, p, true) + bandwidth_time(np, c, a, p, f, true);
      }
      if (t < best_t) {
        best = {a, p};
        best_t = t;
      }
    }
    return best;
  };
  NcclChoice ch;
  std::tie(ch.nccl_algo, ch.nccl_proto) = pick(Algorithm::Auto, Protocol::Auto);
  if (algo == Algorithm::Auto && proto == Protocol::Auto) {
    ch.algo = ch.nccl_algo;
    ch.proto = ch.nccl_proto;
  } else {
    std::tie(ch.algo, ch.proto) = pick(algo, proto);
  }
  return ch;
}

// The paper's data size: 2^29 × nodes float32 values per device, where nodes is the number of
// instances of the level above the devices (product of all but the last level's cardinalities).
double default_bytes(const engine::System& s);

// nccl-tests' bus bandwidth factor (docs/model.md §8) of a collective over p ranks.
double bus_factor(engine::Collective c, double p);

struct CostOptions {
  Algorithm algo = Algorithm::Auto;  // NCCL's pick per step (sim/nccl_model.hpp); or forced
  Protocol proto = Protocol::Auto;   // NCCL's pick, or forced (where the algorithm offers it)
  double bytes = 0.0;                // per device at the start of the program; must be positive
                                     // (default_bytes(system) gives the paper's size)
  bool breakdown = true;             // per-link loads in StepCost::links
};

struct LinkLoad {
  int edge = -1;
  double bytes = 0.0;   // bytes crossing this directed link during the step
  double busy_s = 0.0;  // bytes / bandwidth
};

struct StepCost {
  engine::Collective collective = engine::Collective::AllReduce;
  int num_groups = 0, group_size = 0;
  Algorithm algo = Algorithm::Ring;        // the algorithm used for this step
  Algorithm nccl_pick = Algorithm::Ring;   // what NCCL's tuner would pick (model-based)
  Protocol proto = Protocol::Simple;       // the protocol used for this step
  Protocol nccl_proto = Protocol::Simple;  // what NCCL's tuner would pick with nccl_pick
  int nodes = 1;                           // nodes (NVLink domains) the largest group spans
  double bytes_per_rank = 0.0;             // S of nccl-tests: the buffer (for ReduceScatter/AllGather: full array)
  double time_s = 0.0;
  double latency_s = 0.0;                     // α part (NCCL latency + launch overhead)
  double bandwidth_s = 0.0;                   // β part (with link sharing)
  double algbw_gbps = 0.0, busbw_gbps = 0.0;  // nccl-tests definitions, GB/s
  int bottleneck_edge = -1;                   // the link busiest in the step (-1 for an idle step)
  double bottleneck_bytes = 0.0;
  std::vector<LinkLoad> links;  // every loaded link, busiest first (when breakdown is on)
};

struct ProgramCost {
  double time_s = 0.0;
  std::vector<StepCost> steps;
};

class Simulator {
 public:
  // NCCL parameters: NCCL's defaults (Topology only) or the system's "nccl" section, whose
  // per-level bus_bw_gbps replaces the level's link bandwidth.
  explicit Simulator(Topology t, NcclParams p = {});
  explicit Simulator(const engine::System& s);

  const Topology& topology() const { return topo_; }
  Topology& topology() { return topo_; }
  const NcclParams& nccl() const { return nccl_; }
  void set_nccl(NcclParams p);
  // The node (NVLink domain: devices joined without a network link) of each device.
  int nccl_node(int device) const { return node_[static_cast<std::size_t>(device)]; }

  // Cost of a lowered program starting from full buffers of `bytes` on every device.
  ProgramCost simulate(const engine::LoweredProgram& prog, const CostOptions& opt) const;
  // Total time only (no per-step records): the fast path for ranking.
  double time(const engine::LoweredProgram& prog, const CostOptions& opt) const;

  // One collective measured as nccl-tests does: buffer S = `bytes` per rank (for AllGather the
  // full output, for ReduceScatter the full input). Used by calibration.
  StepCost collective(const engine::LoweredStep& step, double bytes, Algorithm algo, bool breakdown = false,
                      Protocol proto = Protocol::Auto) const;

  // One step, given each device's held fraction of the buffer (updated in place).
  StepCost step(const engine::LoweredStep& st, double bytes, std::vector<double>& fraction, Algorithm algo,
                bool breakdown, Protocol proto = Protocol::Auto) const;

 private:
  void init_nodes();
  Topology topo_;
  NcclParams nccl_;
  std::vector<int> node_;
};

// The default single AllReduce over the given reduction groups.
engine::LoweredProgram single_allreduce(const engine::Groups& reduction_groups);

// "1.23 s", "45.6 ms", "7.8 us"
std::string format_seconds(double s);

}  // namespace p2v::sim
