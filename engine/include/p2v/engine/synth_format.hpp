#pragma once
// The `p2v synth --json` file format, "p2v-synth/2" (docs/formats.md): written here, read here.
// Writing is streamed (a placement list can hold millions of programs, and every placement of one
// shape shares its program list, so that list's text is built once per shape).
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::engine {

struct Shape;

inline constexpr const char* kSynthFormat = "p2v-synth/2";

struct SynthHeader {
  System system;
  std::vector<int> axes, reduce;
  HierarchyKind kind = HierarchyKind::ReductionAxes;
  int max_size = 0;
  MasterCollectives master = MasterCollectives::AllReduceOnly;
};

// A step's groups as a level pattern (engine::GroupPattern with level names).
struct PatternRecord {
  struct Digit {
    std::string level;
    int axis = 0, factor = 1;
    bool operator==(const Digit&) const = default;
  };
  std::vector<Digit> vary;
  bool master = false;
  std::int64_t group_size = 0, num_groups = 0;
  std::string text;  // engine::describe()
  bool operator==(const PatternRecord&) const = default;
};

struct InstructionRecord {
  std::string name;  // notation
  Collective collective = Collective::AllReduce;
  std::string slice, form;
  std::optional<PatternRecord> pattern;  // on the shape path
  std::optional<Groups> groups;          // explicit lists (concrete path, or --lowered)
  bool operator==(const InstructionRecord&) const = default;
};

struct ProgramRecord {
  std::string notation;
  std::vector<int> steps;  // indices into the result's instructions
  bool operator==(const ProgramRecord&) const = default;
};

struct SynthResultRecord {
  ParallelismMatrix matrix;
  std::vector<int> hierarchy;  // real cardinalities of the hierarchy's levels
  std::vector<std::string> hierarchy_names;
  std::string shape;  // Shape::signature(); empty on the concrete path
  std::int64_t search_nodes = 0, search_applied = 0;
  std::optional<std::vector<std::string>> certificates;
  std::vector<InstructionRecord> instructions;
  std::vector<ProgramRecord> programs;
  bool operator==(const SynthResultRecord&) const = default;
};

struct SynthFile {
  SynthHeader header;
  std::vector<SynthResultRecord> results;
};

// The records of one synthesis result. `shape` set: the shape path (patterns; explicit groups only
// with `lowered`, subject to kMaxLoweredDevices); null: the concrete path (explicit groups).
std::vector<InstructionRecord> instruction_records(const SynthResult& r, const Shape* shape, bool lowered);
std::vector<ProgramRecord> program_records(const SynthResult& r);

// Streams a synth file to `out`: header(), then result() per placement, then finish().
class SynthWriter {
 public:
  SynthWriter(std::FILE* out, const SynthHeader& h);
  // `programs_json` is programs_json(program_records(r)) — built once per shape by the caller.
  void result(const SynthResultRecord& without_programs, const std::string& programs_json);
  void finish();

 private:
  std::FILE* out_;
  std::size_t n_ = 0;
};
std::string programs_json(const std::vector<ProgramRecord>& programs);

// Strict reader: names the file and field of anything missing, mistyped or unknown, and refuses
// other formats (e.g. simulate's) and versions. Steps are checked against the instruction list.
SynthFile parse_synth_file(const std::string& text, const std::string& origin);

// A program's explicit steps when every instruction it uses carries groups; nullopt otherwise
// (the caller resolves the notation on its placement instead).
std::optional<LoweredProgram> lowered_program(const SynthResultRecord& r, const ProgramRecord& p);

}  // namespace p2v::engine
