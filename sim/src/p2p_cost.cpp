// Point-to-point patterns on the topology graph (see p2v/sim/p2p_cost.hpp).
#include "p2v/sim/p2p_cost.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "p2v/engine/error.hpp"

namespace p2v::sim {

P2PCost p2p_cost(const Simulator& sim, const std::vector<Send>& sends) {
  const Topology& topo = sim.topology();
  const auto& edges = topo.edges();
  std::vector<double> load(edges.size(), 0.0), largest(edges.size(), 0.0);
  P2PCost c;
  double route_latency = 0.0;
  for (const auto& s : sends) {
    for (int d : {s.from, s.to})
      if (d < 0 || d >= topo.num_devices())
        throw Error(
            fmt::format("p2p cost: device {} is out of range (the system has {} devices)", d, topo.num_devices()));
    if (s.from == s.to || !(s.bytes > 0)) continue;
    ++c.sends;
    route_latency = std::max(route_latency, topo.route_latency(s.from, s.to));
    for (int e : topo.route(s.from, s.to)) {
      load[static_cast<std::size_t>(e)] += s.bytes;
      largest[static_cast<std::size_t>(e)] = std::max(largest[static_cast<std::size_t>(e)], s.bytes);
    }
  }
  if (c.sends == 0) return c;
  for (std::size_t e = 0; e < edges.size(); ++e) {
    if (load[e] == 0.0) continue;
    double busy = load[e] / edges[e].bandwidth;
    if (edges[e].flow_bandwidth > 0) busy = std::max(busy, largest[e] / edges[e].flow_bandwidth);
    if (busy > c.bandwidth_s) {
      c.bandwidth_s = busy;
      c.bottleneck_edge = static_cast<int>(e);
    }
  }
  if (c.bottleneck_edge >= 0) {
    c.bottleneck_bytes = load[static_cast<std::size_t>(c.bottleneck_edge)];
    c.bottleneck_class = edges[static_cast<std::size_t>(c.bottleneck_edge)].cls;
  }
  c.latency_s = route_latency + sim.nccl().effective_launch_us() * 1e-6 + topo.step_overhead();
  c.time_s = c.latency_s + c.bandwidth_s;
  return c;
}

P2PCost alltoall_cost(const Simulator& sim, const std::vector<std::vector<std::int64_t>>& groups, double bytes) {
  std::vector<Send> sends;
  for (const auto& g : groups) {
    const double chunk = bytes / static_cast<double>(g.size());
    for (auto a : g)
      for (auto b : g)
        if (a != b) sends.push_back({static_cast<int>(a), static_cast<int>(b), chunk});
  }
  return p2p_cost(sim, sends);
}

P2PCost permute_cost(const Simulator& sim, const std::vector<std::int64_t>& sources, double bytes) {
  std::vector<Send> sends;
  for (std::size_t d = 0; d < sources.size(); ++d)
    if (sources[d] != static_cast<std::int64_t>(d))
      sends.push_back({static_cast<int>(sources[d]), static_cast<int>(d), bytes});
  return p2p_cost(sim, sends);
}

}  // namespace p2v::sim
