#pragma once
// SMT proofs of equations between programs under the counting semantics (docs/rules.md): rules of the
// catalog on every grid shape up to N devices, and user equations on a system.
//
// One query per shape: device D, chunk R and source J are solver variables; each side's
// multiplicity m(d, R, J) is a bit-vector term per device d (a step's update is
// ite(R in rows, sum or copy of the members' terms, old term), the initial term ite(J = d, 1, 0)),
// built from the step plans of the counting semantics (which rows each device updates, from whom);
// "the results differ at (D, R, J)" must be unsat. Bit-vectors are wide enough that no
// multiplicity wraps (width from multiplicity_bound).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "p2v/encodings/smt.hpp"
#include "p2v/engine/counting.hpp"
#include "p2v/engine/rules.hpp"

namespace p2v::encodings {

struct Equation {
  int k = 0;
  engine::LoweredProgram lhs_layout, lhs, rhs_layout, rhs;
  engine::RuleCompare compare = engine::RuleCompare::Equal;
};

struct SolverRun {
  std::string solver, version;
  smt::Result result = smt::Result::unknown;
  double ms = 0;
  std::optional<std::array<int, 3>> witness;  // (device, chunk, source) after sat
  std::string reason;                         // after unknown
};

struct EquationResult {
  enum Verdict { Equal, Differ, Unknown };
  Verdict verdict = Unknown;
  std::vector<SolverRun> runs;
  std::string smtlib;                                 // the query (SMT-LIB 2), when asked for
  std::string hash;                                   // FNV-1a 64 of the query text, hex
  std::optional<engine::CountDifference> difference;  // the counting replay's first difference
  std::string problem;                                // why Unknown: timeout, disagreement, witness not a difference
};

const char* to_string(EquationResult::Verdict v);  // "equal", "differ", "unknown"

// Every solver must answer unsat (Equal) or sat with a witness the counting replay confirms
// (Differ); the replay must agree. Anything else is Unknown with `problem` set.
EquationResult solve_equation(const Equation& eq, const std::vector<smt::SolverKind>& solvers, unsigned timeout_ms);

// Solvers reused across queries (each query between push and pop): creating a solver costs more
// than a small query.
struct SolverPool {
  SolverPool(const std::vector<smt::SolverKind>& kinds, unsigned timeout_ms);
  ~SolverPool();
  smt::Solver& get(std::size_t i);  // the i-th kind's solver for the next query
  std::vector<smt::SolverKind> kinds;
  unsigned timeout_ms = 0;
  std::vector<std::unique_ptr<smt::Solver>> solvers;
};
EquationResult solve_equation(const Equation& eq, SolverPool& pool);

std::string fnv1a64_hex(const std::string& text);
// The SMT-LIB text of an equation's query ("the sides differ somewhere"), as solve_equation builds it.
std::string equation_query(const Equation& eq);

// A catalogued rule checked on every grid shape up to max_devices.
struct ShapeRecord {
  std::vector<int> shape;
  EquationResult result;
};

struct RuleProof {
  std::string rule_id;
  enum Status { Proved, Refuted, Unknown, Error } status = Unknown;
  int max_devices = 0;
  std::vector<ShapeRecord> shapes;  // in order; for refuted rules the last one is the counterexample
  std::string message;              // for Unknown/Error; for Refuted the counterexample text
  double ms = 0;
  // "proved up to N devices only", or with an all-sizes proof "proved for every size".
  std::string scope;
  // The bounded queries' encoding: "per-digit" (rules_digits.hpp: closed forms per shape, checked
  // against the counting replay) or "concrete" (one term per device).
  std::string encoding = "concrete";
  std::string radix_order;  // per-digit: the row digits' axes, e.g. "c,b,a"
  // The all-sizes proof (asked with --all-sizes; positive rules only).
  struct AllSizes {
    bool asked = false;
    std::string status;  // "proved" (both solvers unsat) or "unknown"
    std::string reason;  // why unknown
    std::string forms;   // the closed forms (DigitRule::forms_text)
    std::string smtlib, hash;
    std::vector<SolverRun> runs;
    double ms = 0;
  } all_sizes;
};

const char* to_string(RuleProof::Status s);  // "proved", "refuted", "unknown", "error"

// Positive rules: Proved when every shape is Equal under every solver. Negative rules: Refuted at
// the first (smallest) shape that is Differ; shapes before it must be Equal. A rule whose outcome
// contradicts its catalogue entry (a positive rule refuted, a negative one never refuted) is Error.
enum class RuleEncoding { Auto, Concrete, PerDigit };    // Auto: per-digit where the rule is in its fragment
RuleEncoding parse_rule_encoding(const std::string& s);  // "auto", "concrete", "per-digit"; throws p2v::Error
RuleProof prove_rule(const engine::Rule& rule, int max_devices, const std::vector<smt::SolverKind>& solvers,
                     unsigned timeout_ms, RuleEncoding encoding = RuleEncoding::Auto, bool all_sizes = false);

inline constexpr const char* kRuleCertificateFamily = "p2v-rule-certificate";
inline constexpr int kRuleCertificateVersion = 1;
inline constexpr const char* kRuleCertificateFormat = "p2v-rule-certificate/1";
// The largest max_devices of a rule certificate (p2v rules prove --max-devices, at most 256).
inline constexpr int kMaxRuleDevices = 256;

// What a rule certificate says, field by field (docs/formats.md "p2v-rule-certificate/1"): written
// only by write_rule_certificate, read back strictly by read_rule_certificate (every field of the
// format and no other, types checked); check_rule_certificate then re-derives what it claims.
struct RuleCertAnswer {
  std::string solver, version, answer;  // answer: "sat", "unsat" or "unknown"
  double ms = 0;
  std::optional<std::array<int, 3>> witness;  // (device, chunk, source) with a sat answer (bounded only)
  bool operator==(const RuleCertAnswer&) const = default;
};
struct RuleCertCounterexample {
  int device = 0, chunk = 0, source = 0;
  std::optional<std::int64_t> lhs, rhs;  // null: the side does not own the chunk
  bool operator==(const RuleCertCounterexample&) const = default;
};
struct RuleCertShape {
  std::vector<int> shape;
  std::string verdict, query_hash;
  std::vector<RuleCertAnswer> answers;
  std::optional<RuleCertCounterexample> counterexample;
  bool operator==(const RuleCertShape&) const = default;
};
struct RuleCertAllSizes {
  std::string status, reason, closed_forms, query_hash, smtlib;
  double ms = 0;
  std::vector<RuleCertAnswer> answers;
  bool operator==(const RuleCertAllSizes&) const = default;
};
struct RuleCertificate {
  int version = kRuleCertificateVersion;
  std::string kind = "rule", rule, title, side_conditions, lhs, rhs, compare, expected, status, scope, message;
  int max_devices = 0;
  double ms = 0;
  std::vector<RuleCertShape> shapes;
  std::optional<std::vector<int>> smtlib_shape;
  std::optional<std::string> smtlib;
  std::optional<std::string> encoding;  // absent in certificates older than the per-digit encoding
  std::optional<std::string> radix_order;
  std::optional<RuleCertAllSizes> all_sizes;
  bool operator==(const RuleCertificate&) const = default;
};
RuleCertificate make_rule_certificate(const engine::Rule& rule, const RuleProof& proof);
std::string write_rule_certificate(const RuleCertificate& c);  // JSON text
// Strict: throws p2v::Error naming `origin` and the path of the first missing, mistyped or unknown value.
RuleCertificate read_rule_certificate(const std::string& json_text, const std::string& origin);

// JSON certificate text: the rule, every shape with each solver's answer, time and the query
// hash, the SMT-LIB text of the largest (or counterexample) shape, and the counterexample.
std::string rule_certificate_json(const engine::Rule& rule, const RuleProof& proof);

// Re-validates a rule certificate: refuses unknown, missing or mistyped fields; the sides, title,
// side conditions, comparison and expected outcome must be the catalogue's; re-runs the counting
// replay on every shape (all shapes up to its N, in order) and checks each verdict, witness and
// counterexample against it; re-derives every shape's query (SMT-LIB text) and checks its hash.
// The solvers' answers are recorded, not re-checked, unless `resolve` (then z3 and cvc5 answer
// every query again and must give the recorded answers). Returns "" when valid, else the reason;
// `claims` (when given) gets (path, claim, how) per claim, how = re-derived / re-solved / recorded.
std::string check_rule_certificate(const std::string& json_text, std::string* summary,
                                   std::vector<std::array<std::string, 3>>* claims = nullptr, bool resolve = false);

}  // namespace p2v::encodings
