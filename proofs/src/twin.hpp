#pragma once
// The instruction-level SMT query: "some instruction of the weaker hierarchy that occurs in a valid
// program has no twin (same collective, same lowered groups) in the stronger hierarchy" — unsat
// means every such instruction has a twin.
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"

namespace p2v::proofs::detail {

struct TwinAnswer {
  std::string result;  // "unsat", "sat", "unknown", or "unavailable"
  int witness = -1;    // index into `weak` when sat
  std::string solver;  // name and version
  double seconds = 0;
  std::string why;  // reason for unknown
};

TwinAnswer twin_query(const std::string& solver, const std::vector<engine::LoweredStep>& weak,
                      const std::vector<engine::LoweredStep>& strong, int num_devices, unsigned timeout_ms);

}  // namespace p2v::proofs::detail
