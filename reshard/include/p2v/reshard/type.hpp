#pragma once
// Array types over a mesh (docs/reshard.md "Types"): `c{a1,...,am}n` per dimension, their
// validation, printing and offset tables (which device holds which box).
#include <cstdint>
#include <string>
#include <vector>

#include "p2v/reshard/mesh.hpp"

namespace p2v::reshard {

// One array dimension: local tile size, global size, and the prime axes splitting it, minor first.
struct Dim {
  std::int64_t local = 1, global = 1;
  std::vector<int> axes;
  bool operator==(const Dim&) const = default;
};

struct Type {
  std::vector<Dim> dims;
  bool operator==(const Type&) const = default;
  std::int64_t localsize() const;
  std::vector<std::int64_t> localtype() const;
};

// Parses `[32{x,y}512,128]` or `[{x,y}512,128]` (the local size omitted: computed) (axes minor first) and validates it
// against the mesh (axes exist, distinct across the type, c·|a1|·…·|am| = n). Throws p2v::Error naming the dimension
// and axis.
Type parse_type(const std::string& text, const Mesh& mesh);
// A JAX PartitionSpec (`P(('x','y'), None)`, `PartitionSpec('x')`; a dimension's axes major
// first, None or missing trailing entries replicate) of an array of global shape `shape`, as
// p2v's type text (axes minor first, local sizes written out): `P(('x','y'),None)` with shape
// 1024,1024 is `[64{y,x}1024,1024]` on x=4,y=4. Throws p2v::Error.
std::string from_partition_spec(const std::string& spec, const std::vector<std::int64_t>& shape, const Mesh& mesh);
// Checks well-formedness of a type over the prime axes (throws p2v::Error).
void validate(const Type& t, const Mesh& mesh);
// Prints a type merging complete runs of an axis' prime factors back into the axis (`{x,y}`).
std::string to_string(const Type& t, const Mesh& mesh);
// Names a list of prime axes, merging complete runs (`x`, `x[1]`, `x,y`).
std::string axes_to_string(const std::vector<int>& axes, const Mesh& mesh);

// docs/model.md §10 "Meaning": the offset of the device's tile, per dimension.
std::vector<std::int64_t> offsets(const Type& t, const Mesh& mesh, std::int64_t device);
// The offset table: offsets of every device (device-major).
std::vector<std::vector<std::int64_t>> offset_table(const Type& t, const Mesh& mesh);
// The global row-major indices of the elements of a device's tile, in local row-major order.
std::vector<std::int64_t> tile_indices(const Type& t, const Mesh& mesh, std::int64_t device);

}  // namespace p2v::reshard
