#pragma once
// Redistribution synthesis (docs/model.md §10, `p2v reshard`): array types over a device mesh, their
// offset tables, the collectives that change them (allgather, dynslice, alltoall, allpermute) with
// their side conditions, a memory-bounded cost-optimal search on the prime-split mesh, the lowering
// to device groups, and the XLA-style naive baseline.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/system.hpp"

namespace p2v::engine::reshard {

// A mesh as the user wrote it (`x=4,y=4`) and its split into prime factors. Types are always
// stored over the prime axes; `x:4` becomes `x[0]:2, x[1]:2` with i_x = i_x[0] + 2·i_x[1].
// Devices are numbered in mixed radix over the user's axes, first axis most significant.
struct Mesh {
  struct Axis {
    std::string name;
    int size = 1;
  };
  struct PrimeAxis {
    std::string name;  // `x` when x is prime, else `x[k]`
    int size = 1;
    int parent = 0;           // index into axes
    std::int64_t stride = 1;  // weight in the parent's coordinate
  };
  std::vector<Axis> axes;
  std::vector<PrimeAxis> primes;
  std::vector<std::vector<int>> factors;  // per user axis: its prime axes, minor first

  std::int64_t num_devices() const;
  int axis_index(const std::string& name) const;  // -1 when absent
  // Prime-axis coordinates of a device, and back.
  std::vector<int> point(std::int64_t device) const;
  std::int64_t device(const std::vector<int>& prime_point) const;
};

// "x=4,y=4", "x:4,y:4" or "{x:4, y:4}". Throws p2v::Error.
Mesh parse_mesh(const std::string& spec);

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

// Parses `[32{x,y}512,128]` (axes minor first) and validates it against the mesh (axes exist,
// distinct across the type, c·|a1|·…·|am| = n). Throws p2v::Error naming the dimension and axis.
Type parse_type(const std::string& text, const Mesh& mesh);
// Checks well-formedness of a type over the prime axes (throws p2v::Error).
void validate(const Type& t, const Mesh& mesh);
// Prints a type merging complete runs of an axis' prime factors back into the axis (`{x,y}`).
std::string to_string(const Type& t, const Mesh& mesh);
// Names a list of prime axes, merging complete runs (`x`, `x[1]`, `x,y`).
std::string axes_to_string(const std::vector<int>& axes, const Mesh& mesh);

// docs/model.md §10 Meaning: the offset of the device's tile, per dimension.
std::vector<std::int64_t> offsets(const Type& t, const Mesh& mesh, std::int64_t device);
// The offset table: offsets of every device (device-major).
std::vector<std::vector<std::int64_t>> offset_table(const Type& t, const Mesh& mesh);
// The global row-major indices of the elements of a device's tile, in local row-major order.
std::vector<std::int64_t> tile_indices(const Type& t, const Mesh& mesh, std::int64_t device);

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

// Applies a step's rule (docs/model.md §10 Collectives). A step whose side condition fails throws
// p2v::Error saying which condition, for which dimension and axis.
Type apply(const Type& t, const Step& s, const Mesh& mesh);

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

// Relabelling (docs/model.md §10): reorders the axes of one dimension of the logical type without moving
// data; returns the new type and updates `sigma` (physical -> logical device) so that every
// physical device keeps its tile.
Type relabel(const Type& t, int dim, const std::vector<int>& new_axes, const Mesh& mesh,
             std::vector<std::int64_t>& sigma);

enum class CostKind { Paper, Topology };

struct PlannedStep {
  Step step;
  Type after;
  std::int64_t cost = 0;   // paper model: elements per device
  std::int64_t bytes = 0;  // bytes each device receives (paper cost × dtype size)
  double time_s = 0.0;     // topology model (0 with --cost paper)
  int group_size = 1, num_groups = 0;
  std::string level;  // topology: the outermost system level the step's groups cross
  // Logical type before the step after any relabelling it needed (equals the previous `after`
  // when no relabelling happened), and the step's physical groups / permutation.
  Type before;
  bool relabelled = false;
  Lowered lowered;
};

struct Program {
  std::vector<PlannedStep> steps;
  std::int64_t cost = 0;            // paper model sum (elements)
  std::int64_t peak = 0;            // largest localsize over the program (elements)
  double time_s = 0.0;              // topology model sum
  std::vector<std::int64_t> sigma;  // final device map (physical -> logical); identity when empty
};

struct Request {
  std::string mesh, from, to;
  std::optional<System> system;  // needed for --cost topology
  std::string dtype = "f32";
  CostKind cost = CostKind::Paper;
  std::optional<std::int64_t> memory_bytes;  // none: the bound max(localsize τ1, localsize τ2)
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

// The whole pipeline: parse, validate, search, final permute, baseline, costs. Throws p2v::Error.
Plan plan(const Request& r);

// Search on an already-parsed problem (`limit` in elements). Program steps hold paper costs only.
Program synthesize(const Mesh& mesh, const Type& from, const Type& to, std::int64_t limit,
                   const System* topology = nullptr, int dtype_bytes = 4, std::int64_t* states = nullptr);
// The XLA-style naive program: allgather every dimension whose axes change, then dynslice.
Program naive(const Mesh& mesh, const Type& from, const Type& to);

// Fills costs (paper and, with a system, topology), peak, group counts of a program's steps.
void price(Program& p, const Mesh& mesh, const Type& from, int dtype_bytes, const System* topology);

// JSON of a plan (`steps`, `cost`, `peak`, `bound`, `baseline`, ...).
// `full`: groups, sources and slices of every step whatever the mesh size, plus the certificate
// format tag (what `--certify` writes and proofs/checker reads).
nlohmann::json to_json(const Plan& p, bool full = false);
// Text of one step, e.g. `alltoall(1,0){devs}`.
std::string step_to_string(const Step& s, const Mesh& mesh);

}  // namespace p2v::engine::reshard

#include <random>

namespace p2v::engine::reshard {

// A random problem in the paper's style (tests, benchmarks, the MPI script): mesh kind 0 is
// `a=2,b=2,c=2` with 1–6-D arrays, kind 1 `x=4,y=6`, kind 2 `x=3,y=5` (1–4-D); each axis either
// replicates or splits one random dimension, independently in both types; the same global shape.
struct RandomProblem {
  std::string mesh, from, to;
};
// Global sizes are unit·2^r with r ≤ max_shift (unit 8, 24, 15 per kind).
RandomProblem random_problem(std::mt19937_64& rng, int kind, int max_rank = 6, int max_shift = 3);

}  // namespace p2v::engine::reshard
