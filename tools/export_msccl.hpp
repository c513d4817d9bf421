#pragma once
// p2v export --format msccl: a reduction program as an MSCCL algorithm (XML, the format MSCCL's
// executor loads with MSCCL_XML_FILES / mscclLoadAlgo), docs/export.md "--format msccl".
#include <string>

#include "p2v/engine/instruction.hpp"

namespace p2v::tools {

// The algorithm of one reduction group's communicator (ranks 0..g-1 = the group's devices in
// ascending order), in-place AllReduce. Throws p2v::Error (p2v::Error, exit 2) with the reason when the
// program cannot be expressed: reduction groups that run different local programs, a step group
// that crosses reduction groups, members of an AllReduce/Reduce holding different rows, or more
// thread-block steps / channels than MSCCL's executor accepts.
// `refined` (optional) says whether AllReduce steps got the ring's bandwidth-optimal chunking (one
// block per member) or, to stay within MSCCL's 256 steps per thread block, the coarser chunks.
std::string msccl_xml(int n, const engine::Groups& reduction, const engine::LoweredProgram& prog,
                      const std::string& name, bool* refined = nullptr);

}  // namespace p2v::tools
