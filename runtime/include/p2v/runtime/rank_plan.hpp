#pragma once
// Rank-local plans: what one rank does in every step of a program, computed from the rank's own
// coordinates, at any system size. A program is given as level patterns (engine/shape.hpp), not
// device lists; a rank finds its group and position per step with engine::group_of() and follows
// the state semantics only for itself and, where a collective needs them (AllGather, Broadcast),
// for the members whose rows it receives. Nothing here is O(ranks): see docs/runtime.md "Plans at
// any size" for the exact cost. The global planner (plan.hpp) stays as the reference: tests
// compare both rank by rank, and `p2v run --check-plan` does it at run time on small systems.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/runtime/plan.hpp"

namespace p2v::runtime {

// One step of a program as a level pattern.
struct PatternStep {
  Collective collective = Collective::AllReduce;
  engine::GroupPattern groups;
};

// A program on a system as level patterns over the system's digits. `grid` is the placement's (d)
// shape, or, for hierarchies (a)-(c), the same construction over every axis (so that group_of()
// and Master steps follow that hierarchy); `reduction` are the placement's reduction groups.
struct PatternProgram {
  engine::Shape grid;
  std::vector<PatternStep> steps;
  engine::GroupPattern reduction;
  std::int64_t num_ranks() const { return grid.num_devices(); }
};

// The grid of hierarchy `kind` for placement (x, reduce) on a system with these levels.
engine::Shape program_grid(const std::vector<int>& system_cards, const std::vector<std::string>& system_names,
                           const engine::ParallelismMatrix& x, const std::vector<int>& reduce,
                           engine::HierarchyKind kind);
// The reduction groups of the placement as a pattern (every reduction digit varies).
engine::GroupPattern reduction_pattern(const engine::Shape& grid, const std::vector<int>& reduce);

// Identifies a pattern's groups on the grid's system: equal keys, equal groups (the communicator
// cache key, across steps, programs and placements).
std::string pattern_key(const engine::GroupPattern& g, const engine::Shape& grid);
// "4 x 4 [cpu.1 gpu.1]", or "8 x 2 [node.0], Master" (one line, for tables).
std::string describe_pattern(const engine::GroupPattern& g, const engine::Shape& grid);

// Where a rank is in one step's groups: its communicator is made by splitting the world with
// color = group, key = member (every rank passes the same `key` string).
struct Membership {
  std::string key;          // the step's groups (pattern_key)
  std::int64_t group = -1;  // id of the rank's group (its first member's rank); -1: not in any
  int member = -1;          // position in the group (0 = root)
  int group_size = 0;       // members per group (every group of a pattern has the same size)
  bool active() const { return group >= 0 && group_size >= 2; }
};
Membership membership(const engine::GroupPattern& g, const engine::Shape& grid, std::int64_t rank);

struct RankPlanStep {
  Collective collective = Collective::AllReduce;
  Membership comm;
  RankStep rs;  // rs.comm: 0 when the rank takes part, -1 when idle
};

struct RankPlan {
  std::int64_t num_ranks = 0, rank = 0;
  std::int64_t k = 0;              // rows (= num_ranks)
  std::int64_t rows_per_unit = 1;  // u: divides every row boundary this rank's actions use
  std::int64_t units = 0;          // k / u
  std::vector<RankPlanStep> steps;
  std::vector<Copy> final_copies;  // unpack home after the program
  std::int64_t stage_units[2] = {0, 0};
  Membership baseline;  // the rank's reduction group
  // How the plan was made: true when every device's rows follow one affine function of its digits
  // (docs/runtime.md "Plans at any size": AllGather members are a strided family, the plan is
  // O(steps x levels) at any size); false when a step leaves that form and the rank replayed every
  // member of its AllGather groups (O(group size)).
  bool strided = false;
  // Verification (make_rank_plan with columns): the contributing ranks of each unit the rank
  // holds after each step, in the order of after.rows ([step][i-th held unit]), and the goal's.
  std::vector<std::vector<std::vector<int>>> columns;
  std::vector<int> goal_columns;
  std::shared_ptr<const PatternProgram> program;  // for descriptions (and lists on small systems)
};

// This rank's plan. Does not check the program's preconditions (resolve_jobs validates programs
// before planning them); `with_columns` also computes what the checked run compares against.
RankPlan make_rank_plan(std::shared_ptr<const PatternProgram> prog, std::int64_t rank, bool with_columns);

// Rank `rank`'s part of a global plan in rows (u = 1), for comparisons with a rank plan.
struct RankView {
  std::vector<RankStep> steps;
  std::vector<Copy> final_copies;
  std::vector<std::vector<std::vector<int>>> columns;  // only when the plan recorded this rank's
};
RankView rank_view(const Plan& plan, int rank);
RankView rank_view(const RankPlan& plan);
// Empty when equal; else the first difference ("step 2: recv stage1+0 vs main+4").
std::string compare_views(const RankView& a, const RankView& b);

}  // namespace p2v::runtime
