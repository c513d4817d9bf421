#pragma once
// Rewrite rules over collectives (docs/rules.md), stated on grids of devices and checked against the
// counting semantics (counting.hpp). Solver-free: the SMT proofs live in encodings/rules.hpp.
//
// A grid has L axes of sizes n_0..n_{L-1}; device d has coordinates (c_0..c_{L-1}) in mixed radix,
// axis 0 most significant. A grid step `C{axes}` is collective C on the groups of devices that
// agree on every other axis; members are ordered by the mixed radix of their coordinates on
// `axes` in the listed order (the first listed axis most significant): member i gets block i of a
// ReduceScatter. Options: `+s` rotates the member order by the coordinate on axis s (member
// index = (i + c_s) mod g), `|s=v` keeps only the groups whose coordinate on axis s is v.
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/counting.hpp"
#include "p2v/engine/instruction.hpp"

namespace p2v::engine {

struct GridStep {
  Collective collective = Collective::AllReduce;
  std::vector<int> axes;
  int shift_axis = -1;
  int only_axis = -1, only_value = 0;
};

// One side of a rule: `layout` steps are run first and then every multiplicity is reset to the
// identity (the side starts from that ownership layout with fresh data), then `steps`.
struct RuleSide {
  std::vector<GridStep> layout;
  std::vector<GridStep> steps;
};

// Equal: every device ends with the same owned rows and multiplicities. Transpose (adjoints): the
// right side's map is the transpose of the left's: for all d, r, j
//   (lhs owns (d,r) ? m_lhs(d,r,j) : 0) == (rhs owns (j,r) ? m_rhs(j,r,d) : 0).
enum class RuleCompare { Equal, Transpose };

struct Rule {
  std::string id;
  std::string title;
  std::string side_conditions;
  int arity = 1;  // grid axes
  RuleSide lhs, rhs;
  RuleCompare compare = RuleCompare::Equal;
  bool holds = true;     // positive rule (expected proved) or negative (expected refuted)
  bool rewrite = false;  // used by derivation and rewriting (lhs -> rhs, both directions)
};

const std::vector<Rule>& rule_catalog();
// Throws p2v::Error naming the rule ids that exist.
const Rule& find_rule(const std::string& id);

// "AllReduce{a,b}", "ReduceScatter{b}+a", "AllReduce{b}|a=0"; axes named a, b, c, ...
std::string grid_step_text(const GridStep& s);
std::string rule_side_text(const RuleSide& s);  // "[layout: ...] step ; step", "id" when empty

// Every shape (n_0..n_{arity-1}), each n_i >= min_axis, with 2 <= product <= max_devices,
// ordered by device count, then lexicographically.
std::vector<std::vector<int>> grid_shapes(int arity, int max_devices, int min_axis = 1);

LoweredProgram lower_grid(const std::vector<GridStep>& steps, const std::vector<int>& shape);

// The side run with the counting semantics on the shape.
CountState run_side(const RuleSide& side, const std::vector<int>& shape);
// Runs `layout`, resets multiplicities, runs `steps` (lowered already).
CountState run_lowered_side(int k, const LoweredProgram& layout, const LoweredProgram& steps);

// First difference under `compare` (for Transpose: lhs/rhs are the two values of the formula).
std::optional<CountDifference> compare_counting(const CountState& lhs, const CountState& rhs, RuleCompare compare);

}  // namespace p2v::engine
