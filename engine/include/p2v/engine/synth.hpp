#pragma once
// The enumerative synthesizer: every valid program up to a size limit, shortest first (docs/model.md §5).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/instruction.hpp"

namespace p2v::engine {

struct SynthOptions {
  int max_size = 5;
  MasterCollectives master = MasterCollectives::AllReduceOnly;
  // Stop (with SynthResult::truncated) after this many programs; 0 = no limit.
  std::int64_t max_programs = 0;
  // Print the search's counters to stderr (--stats).
  bool stats = false;
};

inline constexpr int kMaxProgramSize = 10;
// Largest number of programs one synthesis lists (the count itself is computed exactly).
inline constexpr std::int64_t kMaxPrograms = 5'000'000;

// A program: indices into SynthResult::instructions.
using Program = std::vector<int>;

struct SynthResult {
  SynthesisHierarchy hierarchy;
  std::vector<Instruction> instructions;
  std::vector<Program> programs;  // shortest first, then in instruction order
  std::int64_t nodes = 0;         // instruction applications attempted
  std::int64_t applied = 0;       // of those, steps whose precondition held
  bool truncated = false;
};

// Synthesizes on hierarchy h, whose goal is the sum over all its local devices (as (d), or a
// plain hierarchy), or, for (a)-(c), the sum over each reduction group of `p`.
SynthResult synthesize(const SynthesisHierarchy& h, const Groups& local_goal_groups, const SynthOptions& opt);

// Throws p2v::Error naming the limit, the size and what to do when hierarchy `kind` has more local
// devices than the concrete (per-device) engine handles (kMaxStateDevices).
void check_concrete_size(HierarchyKind kind, std::int64_t local_devices);
// The same for placement (x, reduce), without building it (cheap for any system size).
void check_concrete_size(HierarchyKind kind, const ParallelismMatrix& x, const std::vector<int>& reduce);

// Convenience: build hierarchy `kind` of placement `p` and synthesize.
SynthResult synthesize(const Placement& p, const std::vector<std::string>& level_names, HierarchyKind kind,
                       const SynthOptions& opt);

// The local goal groups of hierarchy h for placement p: all local devices for (d); the
// reduction groups of p for (a)-(c).
Groups local_goal_groups(const SynthesisHierarchy& h, const Placement& p);

// "AllReduce@(node,Inside) ; AllReduce@(node,Parallel(root))"
std::string program_name(const SynthResult& r, const Program& prog);
LoweredProgram lower(const SynthResult& r, const Program& prog);

}  // namespace p2v::engine
