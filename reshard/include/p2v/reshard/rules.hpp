#pragma once
// The collectives' rules (docs/reshard.md, docs/model.md §10 "Collectives"): allgather, dynslice, alltoall,
// allpermute, their side conditions and their text.
#include <string>
#include <vector>

#include "p2v/reshard/type.hpp"

namespace p2v::reshard {

enum class Op { AllGather, DynSlice, AllToAll, AllPermute };
const char* to_string(Op op);

// One collective. `dim` (and `dim2` for alltoall: the destination dimension) index dimensions;
// `axes` are prime axes, minor first. An allpermute carries the type it produces in `target`.
struct Step {
  Op op = Op::AllGather;
  int dim = -1, dim2 = -1;
  std::vector<int> axes;
  Type target;  // allpermute only
};

// Applies a step's rule (docs/model.md §10 "Collectives"). A step whose side condition fails throws
// p2v::Error saying which condition, for which dimension and axis.
Type apply(const Type& t, const Step& s, const Mesh& mesh);

// Text of one step, e.g. `alltoall(1,0){devs}`.
std::string step_to_string(const Step& s, const Mesh& mesh);

}  // namespace p2v::reshard
