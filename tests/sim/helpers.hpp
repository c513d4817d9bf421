#pragma once
#include <string>
#include <vector>

#include "p2v/engine/system.hpp"

namespace simtest {

inline std::string example(const std::string& name) {
  return std::string(P2V_SOURCE_DIR) + "/examples/systems/" + name;
}

// A system of nodes x gpus: NIC joining the nodes, a switch joining the GPUs of a node.
inline p2v::engine::System two_level(int nodes, int gpus, double nic_gbps, double nic_us, double sw_gbps,
                                     double sw_us) {
  using namespace p2v::engine;
  System s;
  s.name = "test";
  s.levels.push_back({"node", nodes, Interconnect{LinkKind::Nic, nic_gbps, nic_us}});
  s.levels.push_back({"gpu", gpus, Interconnect{LinkKind::Switch, sw_gbps, sw_us}});
  return s;
}

}  // namespace simtest
