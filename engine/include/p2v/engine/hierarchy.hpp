#pragma once
// Synthesis hierarchies (a)-(d) (docs/model.md §3).
#include <string>
#include <vector>

#include "p2v/engine/placement.hpp"

namespace p2v::engine {

enum class HierarchyKind {
  System,                // (a)
  ColumnBased,           // (b)
  RowBased,              // (c)
  ReductionAxes,         // (d), collapsed (default)
  ReductionUncollapsed,  // (d) without collapsing
};

const char* to_string(HierarchyKind k);
// (d), collapsed or not: the hierarchies whose local devices are one reduction group.
inline bool is_reduction_kind(HierarchyKind k) {
  return k == HierarchyKind::ReductionAxes || k == HierarchyKind::ReductionUncollapsed;
}  // "a", "b", "c", "d", "d-uncollapsed"
HierarchyKind parse_hierarchy_kind(const std::string& s);  // accepts the same names

// A synthesis hierarchy over k "local" devices. Local device l of copy c is system device
// to_system[c][l]; within a copy, local order is system-device order, so the root of any group
// (its lowest local index) is its lowest system device. (a)-(c) have one copy (the identity);
// (d) has one copy per reduction group.
struct SynthesisHierarchy {
  HierarchyKind kind = HierarchyKind::ReductionAxes;
  std::vector<int> cards;                   // cardinalities, root (1) first
  std::vector<std::string> names;           // level names (unique)
  std::vector<std::vector<int>> coords;     // coords[l][level]
  std::vector<std::vector<int>> to_system;  // to_system[copy][l]

  int num_levels() const { return static_cast<int>(cards.size()); }
  int num_local() const { return static_cast<int>(coords.size()); }
  int level_index(const std::string& name) const;  // -1 if absent
};

// Builds hierarchy `kind` for a placement; `level_names` are the system's user-level names.
SynthesisHierarchy make_hierarchy(const Placement& p, const std::vector<std::string>& level_names, HierarchyKind kind);

// The cardinalities (root first) and level names of hierarchy `kind` for matrix x and reduction
// axes `reduce`, without building device coordinates (cheap for any system size).
std::pair<std::vector<int>, std::vector<std::string>> hierarchy_shape(const ParallelismMatrix& x,
                                                                      const std::vector<int>& reduce,
                                                                      const std::vector<std::string>& level_names,
                                                                      HierarchyKind kind);

// One level of a synthesis hierarchy and the system digits it is made of: its coordinate is the
// mixed-radix number of the digits (axis i, system level j), first most significant; its
// cardinality is the product of their matrix factors x[i][j].
struct HierarchyLevel {
  std::string name;
  std::vector<std::pair<int, int>> parts;  // (axis, system level)
};

// The levels of hierarchy `kind` for matrix x and reduction axes `reduce`, without the root
// make_hierarchy prepends (cheap for any system size).
std::vector<HierarchyLevel> hierarchy_levels(const ParallelismMatrix& x, const std::vector<int>& reduce,
                                             const std::vector<std::string>& level_names, HierarchyKind kind);

// A hierarchy given directly as cardinalities (e.g. [1 2 4] of docs/model.md Example 5.2), reducing over
// all of its devices: one copy, the identity. Names default to "l0", "l1", ... or the given ones.
SynthesisHierarchy make_plain_hierarchy(const std::vector<int>& cards, const std::vector<std::string>& names = {});

}  // namespace p2v::engine
