#pragma once
// The certificate of `p2v rewrite --certificate FILE`: a rewritten program equals its input under
// the counting semantics, with the solvers' answers to the equation's query (docs/formats.md,
// "p2v-rewrite-certificate/2"). One home for the format: the writer, the strict reader and the
// check `p2v check` runs.
#include <array>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::encodings {

inline constexpr const char* kRewriteCertificateFormat = "p2v-rewrite-certificate";
// Version 2 records the placement (system, axes, reduce, matrix) the query is rebuilt from;
// version 1 named the system only and is not read.
inline constexpr int kRewriteCertificateVersion = 2;

struct RewriteAnswer {
  std::string solver, version, answer;  // answer: sat, unsat or unknown
  double ms = 0;
  bool operator==(const RewriteAnswer&) const = default;
};

struct RewriteCertificate {
  engine::System system;
  std::vector<int> axes, reduce;
  engine::ParallelismMatrix matrix;
  std::string input, output;  // p2v notation on the placement's (d) hierarchy; "AllReduce" alone:
                              // the single AllReduce over the reduction groups
  std::string verdict;        // equal, differ or unknown (encodings::to_string(EquationResult::Verdict))
  std::string query_hash;     // FNV-1a 64 of `smtlib`, hex
  std::string smtlib;         // the query "input and output differ somewhere" (SMT-LIB 2)
  std::string problem;        // why the verdict is unknown, else empty
  std::vector<RewriteAnswer> answers;
};

nlohmann::json to_json(const RewriteCertificate& c);
// Strict: the format and version, every field present and of its type, no other field; errors
// name `origin` and the field's path.
RewriteCertificate rewrite_certificate_from_json(const nlohmann::json& j, const std::string& origin);
RewriteCertificate parse_rewrite_certificate(const std::string& text, const std::string& origin);
// Equal as files (the system compared by its JSON form).
bool same_certificate(const RewriteCertificate& a, const RewriteCertificate& b);

// Checks a rewrite certificate: reads it strictly; the placement must be valid; input and output
// are resolved on the placement's (d) hierarchy; the verdict must be "equal" and the counting
// replay must find both programs equal; the query is rebuilt from them and its hash and text must
// match; z3 and cvc5 must both have answered unsat (recorded, or answered again with `resolve`).
// Returns "" when valid, else the reason; `claims` gets (path, claim, how) per claim.
std::string check_rewrite_certificate(const std::string& text, std::string* summary,
                                      std::vector<std::array<std::string, 3>>* claims, bool resolve);

}  // namespace p2v::encodings
