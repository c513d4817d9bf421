#pragma once
// Rule application on a synthesis hierarchy (docs/rules.md): derive programs from AllReduce over the
// reduction groups by the catalogue's rewrite rules, breadth first; and the rewrite moves the
// cost-guided `p2v rewrite` search uses. Every application is checked by the counting semantics
// (the new program equals the old one on every device), which is where a rule instance's side
// conditions (product groups, aligned block layout) are decided.
#include <cstdint>
#include <string>
#include <vector>

#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/engine/placement.hpp"

namespace p2v::engine {

struct RuleApplication {
  std::string rule;      // catalogue id
  int position = 0;      // 0-based step index the rule rewrote
  bool reverse = false;  // rhs -> lhs
};

struct DerivedProgram {
  LoweredProgram program;
  std::vector<RuleApplication> derivation;
};

// The moves of one hierarchy: instructions (by lowered groups) and the groupings' lowered groups.
class RuleMoves {
 public:
  RuleMoves(const SynthesisHierarchy& h, MasterCollectives mc);

  int devices() const { return k_; }
  const SynthesisHierarchy& hierarchy() const { return h_; }
  // Every program one rule application (forward, or reverse when `reverse`) turns p into, with the
  // application; unchecked (callers check with the counting semantics, see equal()).
  std::vector<std::pair<RuleApplication, LoweredProgram>> moves(const LoweredProgram& p, bool reverse) const;
  // Counting-semantics equality of two programs on this hierarchy's devices.
  bool equal(const LoweredProgram& a, const LoweredProgram& b) const;
  bool available(const LoweredStep& s) const;
  // The grouping form name of a step ("Inside", "Parallel(root)", "Master(node)"), "" if not an instruction.
  std::string form_of(const LoweredStep& s) const;

 private:
  std::vector<std::pair<RuleApplication, LoweredProgram>> expand(const LoweredStep& s, int pos) const;
  bool product(const Groups& g, const Groups& x, const Groups& y) const;

  SynthesisHierarchy h_;
  int k_ = 0;
  std::vector<Instruction> ins_;
  std::vector<LoweredStep> steps_;  // lowered instructions
  std::vector<Groups> groupings_;   // lowered groups of each grouping (all-collective-capable)
};

struct DeriveOptions {
  int max_size = 5;
  MasterCollectives master = MasterCollectives::AllReduceOnly;
  std::int64_t max_programs = 100000;
};

struct DeriveResult {
  std::vector<DerivedProgram> programs;  // breadth first; programs[0] is the start
  std::int64_t applications = 0;         // rule instances tried
  std::int64_t rejected = 0;             // of those, rejected by the counting check
  bool truncated = false;
};

// From AllReduce over `groups` (must be an instruction of h).
DeriveResult derive(const RuleMoves& m, const Groups& groups, const DeriveOptions& opt);

std::string derivation_text(const std::vector<RuleApplication>& d);  // "ar-hier@1, ar-rs-ag@2"

// Derivation on placement p's (d) hierarchy against the enumerator with the same size limit.
struct ProgramDiff {
  std::string notation, reason, derivation;
};
struct DeriveComparison {
  SynthesisHierarchy hierarchy;
  DeriveResult derived;
  std::int64_t enumerated = 0, common = 0;
  std::vector<ProgramDiff> only_enumerator, only_derived;
  double derive_ms = 0;
};
DeriveComparison compare_with_enumerator(const Placement& p, const std::vector<std::string>& level_names,
                                         const DeriveOptions& opt);

}  // namespace p2v::engine
