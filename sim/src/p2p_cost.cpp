// Point-to-point patterns on the topology graph (see p2v/sim/p2p_cost.hpp).
#include "p2v/sim/p2p_cost.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "p2v/engine/error.hpp"
#include "step_load.hpp"

namespace p2v::sim {

P2PCost p2p_cost(const Simulator& sim, const std::vector<Send>& sends) {
  const Topology& topo = sim.topology();
  StepLoad load(topo);
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
    load.flow(s.from, s.to, s.bytes);
  }
  if (c.sends == 0) return c;
  c.bandwidth_s = load.bw_time(&c.bottleneck_edge, &c.bottleneck_bytes);
  if (c.bottleneck_edge >= 0) c.bottleneck_class = topo.edges()[static_cast<std::size_t>(c.bottleneck_edge)].cls;
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
