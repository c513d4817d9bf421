#pragma once
// What `p2v run` runs: its options resolved into jobs (one program on one placement each), every
// program as level patterns (rank_plan.hpp), validated once, before any rank plans or runs it.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/runtime/rank_plan.hpp"

namespace p2v::runtime {

// A program resolved against a placement: its patterns, and whether it reaches the goal.
struct ResolvedProgram {
  std::string notation;
  std::shared_ptr<const PatternProgram> program;
  bool reaches_goal = false;
  std::string goal_failure;  // when !reaches_goal
};

// Resolves `notation` (or, when it is empty, the explicit `lowered` groups of a small system)
// against hierarchy `kind` of placement (x, reduce) and checks every step's precondition.
// Hierarchy (d): on the shape's smallest instance (docs/shape.md: the same verdict as on the
// system, at a cost independent of the device count). (a)-(c): on the system itself (at most
// engine::kMaxStateDevices devices). Throws p2v::Error for a step that is not an instruction or
// not valid. When `lowered` is given it must be the program's lowering (else p2v::Error).
ResolvedProgram resolve_patterns(const engine::System& sys, const engine::ParallelismMatrix& x,
                                 const std::vector<int>& reduce, engine::HierarchyKind kind,
                                 const std::string& notation, const engine::LoweredProgram& lowered = {});

// The options of `p2v run` that say what to run (as given on the command line).
struct JobRequest {
  std::string system, axes, reduce, matrix;
  std::string program, program_file, certificate, hierarchy;
  int top = 0;             // the best programs per matrix of a ranked --program-file (0 or -1: all)
  bool unchecked = false;  // run failing certificates / programs missing the goal (with a warning)
};

struct Job {
  std::string notation;
  engine::ParallelismMatrix matrix;
  std::shared_ptr<const PatternProgram> program;
};

struct Jobs {
  engine::System system;
  std::vector<int> axes, reduce;
  std::vector<Job> jobs;
  std::string warning;  // for rank 0 to print
};

// Resolves the request for `ranks` ranks (the system must have that many devices; ranks < 0: any,
// one thread per device). Throws p2v::Error naming what is wrong.
Jobs resolve_jobs(const JobRequest& r, std::int64_t ranks);

// The global plan's part for `rank` against this rank's own plan (systems of at most
// engine::kMaxStateDevices devices): empty when they agree exactly, else the first difference.
std::string check_against_global(const std::shared_ptr<const PatternProgram>& prog, std::int64_t rank);

}  // namespace p2v::runtime
