#pragma once
// One step's load on the topology's links, shared by the collective cost (cost.cpp) and the
// point-to-point patterns (p2p_cost.cpp). Internal to sim.
#include <algorithm>
#include <vector>

#include "p2v/sim/nccl_model.hpp"
#include "p2v/sim/topology.hpp"

namespace p2v::sim {

// Accumulates one step: per-edge bytes (already multiplied by repetitions) and the latency term.
// On a link with a per-flow cap (Edge::flow_bandwidth), the largest single flow is tracked too:
// the link is busy for max(total / bandwidth, largest flow / cap), i.e. each flow gets
// min(cap, its share of the bandwidth).
struct StepLoad {
  const Topology& t;
  const std::vector<int>* node = nullptr;  // NCCL node (NVLink domain) per device
  std::vector<double> bytes;               // per edge
  std::vector<double> maxflow;             // per edge: the largest single flow (only on capped edges)
  std::vector<double> local;               // per edge: bytes of flows whose route has no network link
  std::vector<int> touched;
  double latency = 0.0;
  explicit StepLoad(const Topology& topo)
      : t(topo), bytes(topo.edges().size(), 0.0), maxflow(topo.edges().size(), 0.0), local(topo.edges().size(), 0.0) {}

  void flow(int a, int b, double nbytes) {
    const auto& r = t.route(a, b);
    const bool in_node = std::none_of(r.begin(), r.end(), [&](int e) {
      return hw_class_of(t.edges()[static_cast<std::size_t>(e)].kind) == HwClass::Net;
    });
    for (int e : r) {
      const auto i = static_cast<std::size_t>(e);
      auto& x = bytes[i];
      if (x == 0.0) touched.push_back(e);
      x += nbytes;
      if (in_node) local[i] += nbytes;
      if (t.edges()[i].flow_bandwidth > 0) maxflow[i] = std::max(maxflow[i], nbytes);
    }
  }
  // Time edge e is busy in this step.
  double busy(int e) const {
    const auto i = static_cast<std::size_t>(e);
    const auto& ed = t.edges()[i];
    const double tt = bytes[i] / ed.bandwidth;
    return ed.flow_bandwidth > 0 ? std::max(tt, maxflow[i] / ed.flow_bandwidth) : tt;
  }
  // Bandwidth term: the busiest link's time; also reports it.
  double bw_time(int* bottleneck = nullptr, double* bb = nullptr) const {
    double worst = 0.0;
    int we = -1;
    for (int e : touched) {
      const double tt = busy(e);
      if (tt > worst || (tt == worst && e < we)) {
        worst = tt;
        we = e;
      }
    }
    if (bottleneck) *bottleneck = we;
    if (bb) *bb = we >= 0 ? bytes[static_cast<std::size_t>(we)] : 0.0;
    return worst;
  }
  // The busiest link's time, and the busiest inside nodes and across them (network links).
  FlowTime flow_time() const {
    FlowTime f(0.0, 0.0, 0.0, 0.0);
    for (int e : touched) {
      const double tt = busy(e);
      f.s = std::max(f.s, tt);
      const auto i = static_cast<std::size_t>(e);
      const bool net = hw_class_of(t.edges()[i].kind) == HwClass::Net;
      double& part = net ? f.net_s : f.intra_s;
      part = std::max(part, tt);
      if (!net) {
        const auto& ed = t.edges()[i];
        double lt = local[i] / ed.bandwidth;
        if (ed.flow_bandwidth > 0) lt = std::max(lt, std::min(maxflow[i], local[i]) / ed.flow_bandwidth);
        f.local_s = std::max(f.local_s, lt);
      }
    }
    return f;
  }
  void clear() {
    for (int e : touched)
      bytes[static_cast<std::size_t>(e)] = maxflow[static_cast<std::size_t>(e)] = local[static_cast<std::size_t>(e)] =
          0.0;
    touched.clear();
    latency = 0.0;
  }
};

}  // namespace p2v::sim
