#pragma once
// Program notation: "ReduceScatter@(gpu,Inside) ; AllReduce@(gpu,Parallel(root))" <-> lowered
// programs on a synthesis hierarchy.
#include <string>

#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/instruction.hpp"

namespace p2v::engine {

// Resolves each step against the instructions of h (all collectives on Master allowed) and
// lowers it to system groups. Throws p2v::Error naming the step that does not resolve and the
// instructions that exist.
LoweredProgram resolve_program(const SynthesisHierarchy& h, const std::string& notation);

// The notation of a lowered program whose steps are instructions of h (throws p2v::Error if not).
std::string program_notation(const SynthesisHierarchy& h, const LoweredProgram& p);

}  // namespace p2v::engine
