#pragma once
// The plan: how a lowered program runs on N ranks (rank d = system device d).
//
// Layout (docs/model.md §4, §6): a rank's buffer holds k = N chunks ("rows"); the state semantics decides
// which rows each rank holds after each step. Rows that always move together are merged into
// "units" (u = gcd of every row boundary that ever occurs), so the buffer only needs to be a
// multiple of k/u elements. A rank's held rows live either at home (row r at main[r]) or packed
// ascending and contiguous at the start of one of two staging buffers. Each collective reads a
// contiguous region (packing first only when the rows are not contiguous) and writes where the
// next step wants it; rows left in a staging buffer are unpacked home once, after the program.
#include <cstdint>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/runtime/rows.hpp"

namespace p2v::runtime {

using engine::Collective;
using engine::Groups;

// Where a rank's held rows are: at home in main (where == Main) or packed ascending at the
// start of a staging buffer.
struct Layout {
  Space where = Space::Main;
  RowSet rows;
};

// What one rank does in one step.
struct RankStep {
  int comm = -1;    // index into Plan::comms; -1 = idle this step
  int member = -1;  // index in the group (= rank in its communicator; 0 is the root)
  int group_size = 0;
  std::vector<Copy> pre;  // packing before the call
  bool in_place = false;  // MPI_IN_PLACE (for Reduce: at the root only)
  Region send, recv;
  std::int64_t count = 0;       // units: AllReduce/Reduce/Broadcast the whole count; ReduceScatter
                                // the per-member result; AllGather the per-member contribution
  std::vector<Copy> post;       // unpacking after the call
  Layout after;                 // this rank's rows after the step
  std::int64_t data_units = 0;  // nccl-tests "size" of the step on this rank (see timing)
};

struct PlanStep {
  Collective collective = Collective::AllReduce;
  Groups groups;                 // system device groups (as lowered)
  std::vector<int> comms;        // Plan::comms indices of the groups with >= 2 members
  std::vector<RankStep> ranks;   // [rank]
  std::string describe() const;  // "4 groups of 4: {0,1,2,3} {4,5,6,7} ..."
};

struct Plan {
  int num_ranks = 0;
  int k = 0;                            // rows (= num_ranks)
  int rows_per_unit = 1;                // u
  int units = 0;                        // k / u
  std::vector<std::vector<int>> comms;  // distinct groups (size >= 2) needing a communicator
  std::vector<PlanStep> steps;
  std::vector<std::vector<Copy>> final_copies;  // [rank]: unpack home after the program
  std::int64_t stage_units[2] = {0, 0};         // staging sizes needed (max over ranks)
  Groups reduction_groups;
  std::vector<int> baseline_comms;  // comms of the reduction groups (size >= 2)
  bool reaches_goal = false;
  std::string goal_failure;  // when !reaches_goal: which rank/row differs
  // Columns (contributing ranks) of every unit of `check_rank` after every step: [step][unit].
  int check_rank = -1;
  std::vector<std::vector<std::vector<int>>> columns;
  Layout final_layout(int rank) const;
};

// Builds the plan. Throws p2v::Error when the program does not fit the ranks (device numbers out
// of range, groups not disjoint or not ascending) or a step's precondition fails (with the step,
// group and reason). A program that is valid step by step but misses the goal yields
// reaches_goal = false (the caller decides whether to run it). `check_rank` selects whose
// per-step columns are recorded (-1: none).
Plan make_plan(const engine::LoweredProgram& prog, int num_ranks, const Groups& reduction_groups, int check_rank = -1);

// Human-readable description of groups: "4 x {0,1,2,3} ..." shortened for big systems.
std::string describe_groups(const Groups& g, std::size_t max_groups = 4);

}  // namespace p2v::runtime
