#pragma once
// Theorem 3.2 ((d) >= (c) >= (b) >= (a)) and lemmas B.1-B.8 (docs/model.md §7): by enumeration, and the
// instruction-level argument by SMT; on the system's devices, or at any size on the placement's
// smallest instance, lifted by the shape theorem (docs/shape.md §9).
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::proofs {

enum class Status { Holds, Fails, Unknown, Info };
const char* to_string(Status s);  // "holds", "fails", "unknown", "info"

struct Check {
  std::string id;     // e.g. "thm:c>=b", "B.4", "smt:twin(b->a)"
  std::string title;  // one line: what was checked
  Status status = Status::Holds;
  std::string detail;  // counts, or the witness when it fails / is strict
  double seconds = 0;
  // Where it was computed: "system" (the real devices), "smallest instance" (lifted by
  // docs/shape.md §9), "closed form" (from the real cardinalities), "shape" (engine shape synthesis).
  std::string where = "system";
};

// Where prove computes: on the system's devices, on the placement's smallest instance, or
// automatically (the devices up to kMaxConcreteProveDevices, the smallest instance above).
enum class ProveMode { Auto, Concrete, Shape };
ProveMode parse_prove_mode(const std::string& s);  // "auto", "concrete", "shape"
const char* to_string(ProveMode m);
inline constexpr std::int64_t kMaxConcreteProveDevices = 512;  // engine::kMaxStateDevices
// At L = 4 (bench/scale/prove.sh): a 256-device instance takes about 10 s and 0.4 GB (both
// solvers), 512 about 35 s and 1 GB (no solver).
inline constexpr std::int64_t kDefaultMaxInstanceDevices = 256;

// The placement's smallest instance (docs/shape.md §9): every matrix factor >= 2 replaced by 2,
// the system's levels and the axes their products. Same level names, same factors of 1.
struct PlacementInstance {
  engine::System system;
  std::vector<int> axes;
  engine::ParallelismMatrix x;
  std::int64_t devices = 0;       // of the instance
  std::int64_t real_devices = 0;  // of the placement it stands for
};
PlacementInstance placement_instance(const engine::System& system, const engine::ParallelismMatrix& x);

// What a shape-path report relies on.
struct ShapeBasis {
  PlacementInstance instance;
  std::string relies_on;  // sections of docs/shape.md and what they give
};

struct ProveOptions {
  int max_size = 4;
  engine::MasterCollectives master = engine::MasterCollectives::AllReduceOnly;
  // Solvers for the instruction-level queries: "z3", "cvc5"; empty = skip the SMT checks.
  std::vector<std::string> solvers{"z3", "cvc5"};
  unsigned timeout_ms = 60000;
  ProveMode mode = ProveMode::Auto;
  // Largest smallest instance the shape path enumerates (2^factors >= 2 devices; at most
  // kMaxConcreteProveDevices).
  std::int64_t max_instance_devices = kDefaultMaxInstanceDevices;
  int jobs = 0;  // placements proved at once by run_cases; 0 = one per hardware thread
};

struct MatrixReport {
  engine::ParallelismMatrix matrix;
  std::vector<std::pair<std::string, std::size_t>> program_counts;  // hierarchy -> #programs
  std::vector<Check> checks;
  std::optional<ShapeBasis> shape;  // set when computed on the smallest instance
  bool ok() const;                  // no Fails and no Unknown
};

// All checks for one placement. Auto/Shape above the concrete limit: on the smallest instance
// (which must have at most kMaxConcreteProveDevices devices, else p2v::Error naming the limit).
// Results on a smallest instance, reused across placements of the same shape (a run over all the
// matrices of a system meets each instance many times).
// Safe to share between threads (prove() locks it; two threads may compute the same entry once each).
struct ProveCache {
  std::mutex lock;
  std::map<std::string, MatrixReport> reports;                 // key: instance matrix, reduction axes, options
  std::map<std::string, std::vector<std::string>> d_programs;  // key + "/d" or "/d-collapsed"
};
MatrixReport prove(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                   const engine::ParallelismMatrix& x, const ProveOptions& opt, ProveCache* cache = nullptr);

// A sample case of a suite file.
struct SuiteCase {
  std::string name;
  engine::System system;
  std::vector<int> axes, reduce;
  std::vector<engine::ParallelismMatrix> matrices;  // the one given, or all
  int max_size = 4;
  // Checks this case is known to fail under our reading of the semantics (check id -> why); a
  // suite run passes only if each of them fails and nothing else does.
  std::map<std::string, std::string> expect_fail;
};

// Reads a suite: a JSON list of {"name", "system" (inline "a=2,b=4", a file path relative to the
// suite, or a system object), "axes", "reduce", optional "matrix", "max_size" and "expect_fail"};
// any other field, a value of the wrong type or out of range is a p2v::Error naming the file and
// the JSON path ("lemmas.json: [3].axes[1]: expected an integer, got \"4\"").
std::vector<SuiteCase> load_suite(const std::string& path);
// The same on the suite's text; `path` names it in errors and locates system files it names.
std::vector<SuiteCase> parse_suite(const std::string& text, const std::string& path);

// True when the SMT checks are compiled in.
bool have_smt();

}  // namespace p2v::proofs
