#pragma once
// Prices of point-to-point patterns: the all-to-all inside groups and the permutation of whole
// tiles that redistributions move data with (docs/reshard.md "Cost on a topology"). NCCL has no collective for either;
// it runs both as ncclSend/ncclRecv pairs fused in one ncclGroupStart/ncclGroupEnd call, all sends progressing at once
// (NCCL User Guide, "Point-to-point communication", examples "All-to-all" and "Sendrecv":
// https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/usage/p2p.html).
//
// Model (α-β on the simulator's topology graph, as its collectives): every send is routed over the
// graph (sim/topology.hpp) and all sends of the call share the links; the bandwidth term is the
// busiest link's bytes over its bandwidth (a per-flow cap where the link has one), the latency
// term the slowest send's route latency plus the call's launch overhead and the topology's step
// overhead. No pipelining or protocol choice is modelled (NCCL's tuner does not cover p2p).
#include <cstdint>
#include <string>
#include <vector>

#include "p2v/sim/cost.hpp"

namespace p2v::sim {

struct Send {
  int from = 0, to = 0;
  double bytes = 0.0;
};

struct P2PCost {
  double time_s = 0.0, latency_s = 0.0, bandwidth_s = 0.0;
  int sends = 0;                  // sends that cross a link (from != to, bytes > 0)
  int bottleneck_edge = -1;       // busiest directed link (-1: nothing moves)
  double bottleneck_bytes = 0.0;  // bytes on it
  std::string bottleneck_class;   // its calibration class: a level name, or a topology link kind
};

// All sends of one group call at once. Throws p2v::Error for a device out of range.
P2PCost p2p_cost(const Simulator& sim, const std::vector<Send>& sends);
// An all-to-all in every group: each member holds `bytes` and sends bytes / g to each of the
// other g - 1 members (nccl-tests alltoall_perf's size: the send buffer per rank).
P2PCost alltoall_cost(const Simulator& sim, const std::vector<std::vector<std::int64_t>>& groups, double bytes);
// A permutation: device d receives the `bytes` device sources[d] holds (sources[d] == d: stays).
P2PCost permute_cost(const Simulator& sim, const std::vector<std::int64_t>& sources, double bytes);

}  // namespace p2v::sim
