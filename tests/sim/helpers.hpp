#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "p2v/engine/system.hpp"

namespace simtest {

// doctest::Approx compares within epsilon x (scale 1 + |value|): an absolute 1.2e-5 for values near
// zero, so two times in seconds at the microsecond scale always compare equal. rel() compares
// relative to the values (1.2e-5 of the larger, or .epsilon(e) of it); a zero expected value keeps
// doctest's absolute tolerance.
inline doctest::Approx rel(double v) { return v == 0 ? doctest::Approx(v) : doctest::Approx(v).scale(0); }

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

// Runs `p2v <args>` (stderr merged into the output).
struct Run {
  int code;
  std::string out;
};
inline Run run(const std::string& args) {
  const std::string cmd = std::string(P2V_BIN) + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  const int st = pclose(pipe.release());
  return {WEXITSTATUS(st), out};
}

}  // namespace simtest
