#pragma once
// Shapes: synthesis, lowering and group patterns that cost the same for any device count
// (docs/shape.md). The programs of a (d) hierarchy depend only on its shape: its levels' names,
// which of them have cardinality 1, and the Master setting — not on the cardinalities. The shape's
// smallest instance (every cardinality >= 2 replaced by 2) is the symbolic state space: its device
// l stands for the class of real devices that are 0 exactly on the levels where l's coordinate is 0.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::engine {

// One level of a (d) hierarchy: its name, real cardinality and the system digits it is made of.
struct ShapeLevel {
  std::string name;
  std::int64_t card = 1;
  std::vector<std::pair<int, int>> parts;  // (axis, system level), first most significant
};

// A placement's (d) hierarchy together with what lowering needs: the system's level
// cardinalities, the matrix and the reduction axes. Nothing in it grows with the device count.
struct Shape {
  HierarchyKind kind = HierarchyKind::ReductionAxes;
  std::vector<ShapeLevel> levels;  // root (cardinality 1) first
  std::vector<int> system_cards;   // the user's levels
  std::vector<std::string> system_names;
  ParallelismMatrix x;
  std::vector<int> reduce;

  int num_levels() const { return static_cast<int>(levels.size()); }
  std::vector<std::string> names() const;
  std::vector<std::int64_t> cards() const;
  // 1 where the cardinality is 1, else 2: the shape's smallest instance.
  std::vector<int> canonical_cards() const;
  std::int64_t num_devices() const;           // system devices
  std::int64_t group_size() const;            // devices per reduction group (the (d) hierarchy's k)
  std::int64_t num_reduction_groups() const;  // num_devices() / group_size()
  // Identifies the shape: "root:1 node:* gpu:*" ('*' = cardinality >= 2). Equal signatures (and
  // kind) mean equal program lists.
  std::string signature() const;
};

// The shape of placement (x, reduce) for hierarchy (d) (collapsed or not). Throws p2v::Error for
// (a)-(c), whose local devices are the whole system.
Shape make_shape(const std::vector<int>& system_cards, const std::vector<std::string>& system_names,
                 const ParallelismMatrix& x, const std::vector<int>& reduce, HierarchyKind kind);

// The shape's smallest instance as a synthesis hierarchy (names of the shape, canonical_cards()).
SynthesisHierarchy canonical_hierarchy(const Shape& s);

// The smallest instance as a placement problem of its own: a system whose levels are the shape's
// (names, canonical cardinalities; the first has cardinality 1, so no root is implied), one axis
// over all its devices, reduced. Its collapsed (d) hierarchy is canonical_hierarchy(s).
struct ShapeInstance {
  System system;
  std::vector<int> axes;
  ParallelismMatrix x;
  std::vector<int> reduce;
};
ShapeInstance smallest_instance(const Shape& s);

// Largest number of levels of cardinality >= 2 a shape may have (its smallest instance has
// 2^levels devices and the concrete engine's limit is kMaxStateDevices).
inline constexpr int kMaxShapeLevels = 9;

// Synthesis on the shape: the programs of the smallest instance, which are the programs of every
// instance of the shape (same notation, same order; docs/shape.md §3). r.hierarchy is the
// canonical hierarchy. Cost: independent of the cardinalities.
SynthResult synthesize_shape(const Shape& s, const SynthOptions& opt);

// What the shape theorem guarantees for one program of synthesize_shape() (docs/shape.md §3,
// §3.2). `valid_everywhere_proved`: its validity on every instance of the shape is proved (no
// Master step; or the default Master setting, or --master-collectives all and a program whose Master
// steps are all AllReduce (docs/shape.md §3.3), and at most kMaxProvedMasterDepth levels of
// cardinality >= 2, where Lemma 2(a) on the smallest instance follows from its exits (Lemmas 4-6); or
// --master-collectives all and every state of the program on the smallest instance in G' with Lemma
// 1's rows, docs/shape.md §3.3's Proposition, any depth), otherwise only checked. `complete_proved`: "no other program"
// transfers from the smallest instance by a proof (the hierarchy has no Master grouping; or the default Master setting
// and at most kMaxProvedCompleteDepth levels of cardinality >= 2, where Lemma 2(a) is proved on every instance by
// Lemmas 4-6 and the exhaustive list of the smallest instance's exits: depths <= 4 in CI, 5 and 6 on request),
// otherwise by Lemma 2(a), checked. `text` says so.
// With --master-collectives all at depth <= kMaxProvedAllDepth both are proved for every program (docs/shape.md
// §3.4). At depth 3 to kMaxProvedAllEqualDepth, when the cardinalities >= 2 of `s` are all equal (and, at depth 4,
// the devices are numbered in the levels' order or its reverse: §3.5 "Device numbering", §3.6 "Device numbering at
// depth 4", an uncollapsed (d) may be in neither), both flags
// are set for `s`'s own instance (and every instance with equal cardinalities, §3.5, §3.6) — not for the shape's
// unequal instances, so `text` then states the instance's claims ("on this instance: proved") and the
// shape-wide ones separately; the flags decide the exact fallback for this instance only. With
// --master-collectives all, a program with a Master ReduceScatter, AllGather, Reduce or Broadcast
// is also proved valid on every instance when every state it passes through on the smallest instance
// lies in G' with Lemma 1's rows (docs/shape.md §3.3, Lemmas 3' and 2(b)'); shape_theorem_basis replays
// it there when the smallest instance has at most kMaxG1ReplayDevices devices.
// (32: depth <= 5; the replay costs about 0.25 ms per program there, 1.4 ms at 64 devices, measured on
// the size-4 programs of depth 5 and 6 shapes.)
inline constexpr int kMaxG1ReplayDevices = 32;
inline constexpr int kMaxProvedMasterDepth = 6;
inline constexpr int kMaxProvedCompleteDepth = 6;
// --master-collectives all: both directions proved for every program at depth <= 2 (docs/shape.md §3.4:
// a model of the semantics over row tuples whose conditions are first-order formulas of width 4 per
// level, so cardinalities >= 5 behave alike, and an exhaustive check over cardinalities 2..5, run to 8).
inline constexpr int kMaxProvedAllDepth = 2;
// --master-collectives all at depth 3 and 4: both directions proved for every program when the cardinalities >= 2
// are all equal (docs/shape.md §3.5 and §3.6, Theorem 4: the tuple models M3 and M4 with one sort per level,
// computed on per-level equality types, so one computation covers every cardinality >= 5; depth 3's finite
// part runs in CI, depth 4's on request); for unequal ones checked, not proved (Proposition N, §3.5: no model
// of that kind is faithful on [n n n+1]).
inline constexpr int kMaxProvedAllEqualDepth = 4;
struct ShapeBasis {
  bool valid_everywhere_proved = false;
  bool complete_proved = false;
  std::string text;
};
ShapeBasis shape_theorem_basis(const Shape& s, const SynthResult& r, const Program& prog, MasterCollectives mc);

// One system digit: axis, user level, and its factor x[axis][level].
struct Digit {
  int axis = 0, level = 0, factor = 1;
  bool operator==(const Digit&) const = default;
};

// The groups of one step, as a level pattern: members differ exactly in the digits `vary` (listed
// most significant first, i.e. in system-device order, so a member's rank in its group is the
// mixed-radix number of its varying digits). A Master step forms only the group whose other
// reduction digits are all 0, one per reduction group.
struct GroupPattern {
  std::vector<Digit> vary;
  bool master = false;
  std::int64_t group_size = 1;
  std::int64_t num_groups = 0;
};

// The pattern of a grouping (slice, form, e) of the shape's (d) hierarchy.
GroupPattern group_pattern(const Shape& s, int slice, FormKind form, int e);
// "node.0 x16, gpu.0 x8: 1024 groups of 128" (or "... : 1 group per reduction group ...").
std::string describe(const GroupPattern& g, const Shape& s);

// Where system device `device` sits in a step: its group's id (the device number of the group's
// first member) and its rank in the group; {-1, -1} when a Master step leaves it out.
// O(levels x axes): what a rank computes for itself instead of building the device lists.
std::pair<std::int64_t, int> group_of(const GroupPattern& g, const Shape& s, std::int64_t device);

// The inverse of group_of: the device at `position` (0 <= position < g.group_size) of the group
// whose id (first member) is `group`. O(vary x (levels + axes)).
std::int64_t member_of(const GroupPattern& g, const Shape& s, std::int64_t group, std::int64_t position);

// Largest system a step is lowered to explicit device lists for (--lowered).
inline constexpr std::int64_t kMaxLoweredDevices = 1 << 16;

// The explicit groups of a pattern (ascending, ordered by first member). Throws p2v::Error above
// kMaxLoweredDevices devices.
Groups lower_pattern(const GroupPattern& g, const Shape& s);

// Lowered program of a shape synthesis result (explicit lists; same limit).
LoweredProgram lower_shape_program(const Shape& s, const SynthResult& r, const Program& prog);

// The shape's patterns of every step of a program of synthesize_shape().
std::vector<GroupPattern> program_patterns(const Shape& s, const SynthResult& r, const Program& prog);

}  // namespace p2v::engine
