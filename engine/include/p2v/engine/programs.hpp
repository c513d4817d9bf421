#pragma once
// Which programs a placement has: the one place that decides between synthesis on the placement's
// shape (hierarchy (d), any size; docs/shape.md) and on the concrete devices, falls back to the
// exact computation where the shape theorem does not prove the shape's list complete, and caches
// the shape's list so every placement of one shape is synthesized once. `p2v synth`, `simulate`
// (both models), `explore`, `step` and `rewrite` take their programs from here, so they list the
// same programs for the same placement.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"

namespace p2v::engine {

// Where the shape theorem is not proved for a shape (docs/shape.md §3.2), reduction groups of at
// most this many devices are synthesized on the system (exact, well under a second); larger ones
// keep the shape's list, which then rests on what PlacementPrograms::unproved says.
inline constexpr std::int64_t kExactFallbackDevices = 64;

struct ProgramsOptions {
  HierarchyKind kind = HierarchyKind::ReductionAxes;
  SynthOptions synth;
  // Synthesize on the system's devices even for (d) (`--concrete`; at most kMaxStateDevices
  // devices per reduction group): the reference the shape is tested against.
  bool concrete = false;
};

enum class ProgramsPath {
  Shape,          // the shape's list (the smallest instance's programs)
  ExactFallback,  // (d) on the system: the shape theorem is not proved for this shape
  Concrete,       // (a)-(c), or --concrete
};

// The programs of one placement.
struct PlacementPrograms {
  ProgramsPath path = ProgramsPath::Concrete;
  // The placement's shape, for (d) hierarchies on every path: on the exact fallback and with
  // --concrete the result's hierarchy has the shape's levels, so its steps have level patterns too.
  std::optional<Shape> shape;
  std::shared_ptr<const SynthResult> result;  // shared by every placement of the shape on the shape path
  std::vector<std::int64_t> cards;            // the synthesis hierarchy's real cardinalities
  // On the shape path where the theorem does not prove the list complete: what it rests on
  // (shape_theorem_basis' text); empty otherwise.
  std::string unproved;
  // This call synthesized the shape's list (the first placement of its shape); false for later
  // placements of the shape, which share it. Lets a caller warn once per shape.
  bool first_of_shape = false;
  // This call is the first of its shape served on the shape path with `unproved` set (placements of one
  // shape may differ: at depth 3 under `all`, equal cardinalities are proved, others not). Warn on it.
  bool first_unproved_of_shape = false;
  std::string key;  // the shape's signature on the shape path, else ""

  bool on_shape() const { return path == ProgramsPath::Shape; }
  // The shape's signature on the shape path, else "" (a key for per-shape caches of callers).
  const std::string& shape_key() const { return key; }
  // Explicit device groups of a program (systems of at most kMaxLoweredDevices devices on the
  // shape path).
  LoweredProgram lower(const Program& prog) const;
  // Level patterns of a program's steps ((d) hierarchies only).
  std::vector<GroupPattern> patterns(const Program& prog) const;
};

// The programs of the placements of one system and axes, with the per-shape cache. Not thread-safe.
class ProgramSource {
 public:
  ProgramSource(std::vector<int> system_cards, std::vector<std::string> system_names, std::vector<int> axes,
                ProgramsOptions opt);
  ProgramSource(const System& system, std::vector<int> axes, ProgramsOptions opt);

  // The programs of placement (x, reduce). Throws p2v::Error when the concrete path is asked for
  // a reduction group larger than the concrete engine handles, or a shape is too deep.
  PlacementPrograms programs_for(const ParallelismMatrix& x, const std::vector<int>& reduce);
  const ProgramsOptions& options() const { return opt_; }

 private:
  std::vector<int> cards_;
  std::vector<std::string> names_;
  std::vector<int> axes_;
  ProgramsOptions opt_;
  struct ShapeEntry {
    std::shared_ptr<const SynthResult> result;
    bool unproved_served = false;  // a placement of the shape was listed on the shape with `unproved`
  };
  std::map<std::string, ShapeEntry> by_shape_;
};

}  // namespace p2v::engine
