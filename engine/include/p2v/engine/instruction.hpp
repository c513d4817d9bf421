#pragma once
// The DSL: instructions (slice, form, collective) and the device groups they form (docs/model.md §5).
#include <cstdint>
#include <string>
#include <vector>

#include "p2v/engine/hierarchy.hpp"

namespace p2v::engine {

enum class Collective : std::uint8_t { AllReduce, ReduceScatter, AllGather, Reduce, Broadcast };
inline constexpr Collective kAllCollectives[] = {Collective::AllReduce, Collective::ReduceScatter,
                                                 Collective::AllGather, Collective::Reduce, Collective::Broadcast};
const char* to_string(Collective c);
Collective parse_collective(const std::string& s);  // throws p2v::Error

enum class FormKind : std::uint8_t { Inside, Parallel, Master };

// A list of disjoint device groups; each group ascending (its first member is the root).
using Groups = std::vector<std::vector<int>>;

// Which collectives Master may carry (docs/model.md §5): AllReduce only (default), or all five.
enum class MasterCollectives { AllReduceOnly, All };
// "allreduce" or "all" (the --master-collectives option); throws p2v::Error otherwise.
MasterCollectives parse_master_collectives(const std::string& s);
const char* to_string(MasterCollectives m);  // "allreduce" | "all" (what parse_master_collectives reads)

struct Grouping {
  int slice = 0;
  FormKind form = FormKind::Inside;
  int e = -1;     // ancestor level for Parallel/Master, -1 for Inside
  Groups groups;  // local device indices of the hierarchy
};

struct Instruction {
  Collective collective = Collective::AllReduce;
  Grouping grouping;
};

// The groups formed by (slice, form, e) on hierarchy h, in local indices; groups ordered by
// first member. Throws p2v::Error if slice/e are out of range.
Groups form_groups(const SynthesisHierarchy& h, int slice, FormKind form, int e);

// Every distinct grouping of h (slices 0..n-2, forms Inside, Parallel(e), Master(e)), with
// duplicates (same groups) and all-singleton groupings dropped, first occurrence kept.
std::vector<Grouping> groupings(const SynthesisHierarchy& h);

// The instruction set of h: every grouping with every allowed collective, identified by
// (collective, groups) — duplicates removed, first kept.
std::vector<Instruction> instructions(const SynthesisHierarchy& h, MasterCollectives mc);

// "Inside", "Parallel(root)", "Master(node)"
std::string form_name(const SynthesisHierarchy& h, const Grouping& g);
// "(gpu,Inside)"
std::string grouping_name(const SynthesisHierarchy& h, const Grouping& g);
// "ReduceScatter@(gpu,Inside)"
std::string instruction_name(const SynthesisHierarchy& h, const Instruction& in);

// Lowered groups: the grouping applied in every copy of h, mapped to system devices,
// each group ascending, groups ordered by first member.
Groups lower_groups(const SynthesisHierarchy& h, const Groups& local);

// A lowered instruction / program: system device groups per step (docs/model.md §6).
struct LoweredStep {
  Collective collective = Collective::AllReduce;
  Groups groups;
  bool operator==(const LoweredStep&) const = default;
  auto operator<=>(const LoweredStep&) const = default;
};
using LoweredProgram = std::vector<LoweredStep>;

}  // namespace p2v::engine
