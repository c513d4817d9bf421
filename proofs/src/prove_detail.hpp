#pragma once
// The concrete prove (every check on the given system's devices) and what the shape path reads
// from it.
#include <string>
#include <vector>

#include "p2v/proofs/expressiveness.hpp"

namespace p2v::proofs::detail {

// The (d) program lists (notation, synthesis order) a concrete prove computed.
struct DProgramNames {
  std::vector<std::string> collapsed, uncollapsed;
};

// Every check on the system's devices (at most engine::kMaxStateDevices of them).
MatrixReport prove_concrete(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                            const engine::ParallelismMatrix& x, const ProveOptions& opt, DProgramNames* d_names);

}  // namespace p2v::proofs::detail
