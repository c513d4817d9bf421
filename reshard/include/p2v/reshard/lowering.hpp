#pragma once
// Lowering (docs/reshard.md "How it works"): a step on a logical type becomes device groups, dynslice
// chunks or a permutation of physical devices; relabelling changes the device map, moving no data.
#include <cstdint>
#include <vector>

#include "p2v/reshard/rules.hpp"

namespace p2v::reshard {

// The devices a collective runs on: per group, devices in concatenation order (for allgather and
// alltoall: by offset of the gathered dimension, computed from the offset table). For allpermute:
// `sources[d]` = the device whose tile device d receives (a bijection; fixed points d == sources[d]).
struct Lowered {
  std::vector<std::vector<std::int64_t>> groups;
  std::vector<std::int64_t> sources;
  // dynslice: per physical device, which of the k chunks of its tile it keeps.
  std::vector<std::int64_t> slice;
};
// `sigma` (optional) is the device map: physical device -> logical device (mesh point in mixed
// radix) after earlier relabellings; groups and sources are physical devices.
Lowered lower(const Type& before, const Step& s, const Mesh& mesh, const std::vector<std::int64_t>* sigma = nullptr);

// Relabelling (docs/model.md §10 "Collectives", docs/reshard.md "How it works"): describes the same physical layout by
// another logical type with the same local type, moving no data; updates `sigma` (physical -> logical device) so that
// every physical device keeps its tile, and returns `to`.
Type relabel(const Type& t, const Type& to, const Mesh& mesh, std::vector<std::int64_t>& sigma);
// The same for a reordering of the axes of one dimension.
Type relabel(const Type& t, int dim, const std::vector<int>& new_axes, const Mesh& mesh,
             std::vector<std::int64_t>& sigma);

}  // namespace p2v::reshard
