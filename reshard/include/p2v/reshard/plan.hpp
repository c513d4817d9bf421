#pragma once
// The whole pipeline of `p2v reshard` (docs/reshard.md): parse the request, search, baseline,
// prices; the plan's JSON; random problems in the paper's style for tests and benchmarks.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "p2v/reshard/search.hpp"

namespace p2v::reshard {

struct Request {
  std::string mesh, from, to;
  std::optional<System> system;  // needed for --cost topology
  std::string dtype = "f32";
  CostKind cost = CostKind::Paper;
  std::optional<std::int64_t> memory_bytes;  // none: the bound max(localsize τ1, localsize τ2)
  // Size sweeps (`--bytes`, docs/reshard.md "Size sweeps"): the global array's size in bytes.
  // Dimension 0's global size of both types is set so the array holds at most this many bytes,
  // rounded down to a multiple of what both types' splits of dimension 0 need; the other
  // dimensions keep their sizes. None: the sizes of `from` and `to`.
  std::optional<double> array_bytes;
};

struct Plan {
  Mesh mesh;
  Type from, to;  // prime types
  int dtype_bytes = 4;
  CostKind cost_kind = CostKind::Paper;
  std::int64_t bound = 0;  // max(localsize τ1, localsize τ2), elements
  std::int64_t limit = 0;  // the memory limit searched under (≥ bound), elements
  Program program, baseline;
  std::int64_t states = 0;  // search states settled
};

int dtype_size(const std::string& dtype);  // throws p2v::Error

// Request::array_bytes applied to parsed types (same global shape): sets dimension 0's global and
// local sizes of both. Throws p2v::Error when not even the smallest such array fits in `bytes`.
void scale_leading(Type& from, Type& to, const Mesh& mesh, double bytes, int dtype_bytes);
// Bytes of the global array of type t.
double array_bytes(const Type& t, int dtype_bytes);

// The whole pipeline: parse, validate, search, final permute, baseline, costs. Throws p2v::Error.
Plan plan(const Request& r);

// JSON of a plan (`steps`, `cost`, `peak`, `bound`, `baseline`, ...).
// `full`: groups, sources and slices of every step whatever the mesh size (the body of the
// certificate, certificate.hpp).
nlohmann::json to_json(const Plan& p, bool full = false);

// A random problem in the paper's style (tests, benchmarks, the MPI script): mesh kind 0 is
// `a=2,b=2,c=2` with 1–6-D arrays, kind 1 `x=4,y=6`, kind 2 `x=3,y=5`, kind 3 `x=4,y=4` (1–4-D);
// each axis either replicates or splits one random dimension, independently in both types; the
// same global shape.
struct RandomProblem {
  std::string mesh, from, to;
};
inline constexpr int kRandomMeshKinds = 4;
// Global sizes are unit·2^r with r ≤ max_shift (unit 8, 24, 15, 16 per kind).
RandomProblem random_problem(std::mt19937_64& rng, int kind, int max_rank = 6, int max_shift = 3);

}  // namespace p2v::reshard
