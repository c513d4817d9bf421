#pragma once
// Programs to run: DSL notation resolved against a placement's (d) hierarchy, or the --json
// output of `p2v synth` / `p2v simulate`.
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::runtime {

struct NamedProgram {
  std::string notation;
  engine::LoweredProgram lowered;
};

// "ReduceScatter@(gpu,Inside) ; AllReduce@(gpu,Parallel(root))" resolved against the instructions
// of h (all collectives on Master allowed) and lowered to system groups. Throws p2v::Error naming
// the step that does not resolve and the instructions that exist.
engine::LoweredProgram resolve_program(const engine::SynthesisHierarchy& h, const std::string& notation);

// One placement's programs from a program file.
struct ProgramSet {
  engine::ParallelismMatrix matrix;
  std::vector<NamedProgram> programs;
};

struct ProgramFile {
  std::optional<engine::System> system;  // when the file names it
  std::vector<int> axes, reduce;         // empty when absent
  std::vector<ProgramSet> sets;          // JSON: one per result; text: one set, matrix empty
  std::string hierarchy_kind;            // JSON "hierarchy_kind" when present
  bool is_json = false;
  bool ranked = false;  // each set's programs best first by predicted time (p2v simulate --json)
};

// Text files: one program per line ('#' comments, blank lines ignored), to be resolved by the
// caller. JSON: `p2v synth --json` / `p2v simulate --json` output.
ProgramFile load_program_file(const std::string& path);

// The hierarchy programs are written against: (d) of the placement by default.
engine::SynthesisHierarchy program_hierarchy(const engine::System& sys, const engine::Placement& p,
                                             engine::HierarchyKind kind);

}  // namespace p2v::runtime
