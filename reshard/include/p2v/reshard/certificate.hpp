#pragma once
// The reshard certificate format, `p2v-reshard-certificate/1` (docs/reshard.md "Certificates and
// the checker", docs/formats.md): the plan with every step's groups, dynslice chunks and
// permutation, and the per-step SMT facts. Written here (the only writer), read back strictly
// here; the independent checker (proofs/checker/reshard.cpp) has its own reader on purpose.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "p2v/reshard/plan.hpp"

namespace p2v::reshard {

inline constexpr const char* kCertificateFamily = "p2v-reshard-certificate";
inline constexpr int kCertificateVersion = 1;

// Per collective step other than allpermute: the solvers that answered unsat to the claim
// "every element of the new layout comes from where the rule says".
struct SmtStepFact {
  std::int64_t step = 0;
  std::string op;
  std::vector<std::string> unsat;  // solver names, e.g. {"z3", "cvc5"}
};
struct SmtFacts {
  std::string claim = "per step: every element of the new layout comes from where the rule says";
  std::vector<SmtStepFact> steps;
};

// The certificate of a plan (with `smt` when given) as JSON text, and the file name it is stored
// under in a certificate directory ("reshard-<from>-<to>.json", sanitised, at most 120 characters
// of names).
std::string certificate_text(const Plan& p, const std::optional<SmtFacts>& smt);
std::string certificate_file_name(const Plan& p);

// What a certificate says, as read back (strict: every field of the format, no other; types checked).
struct CertificateStep {
  std::string op, text, type;
  std::vector<std::int64_t> local;
  std::int64_t cost = 0, bytes = 0;
  int group_size = 0, num_groups = 0;
  std::vector<int> dims;          // absent for allpermute
  std::vector<std::string> axes;  // absent for allpermute
  std::vector<std::vector<std::int64_t>> groups;
  std::vector<std::int64_t> sources, slice;
  bool relabelled = false;
  std::optional<double> time_s;
  std::optional<std::string> level;
};
struct CertificateProgram {
  std::vector<CertificateStep> steps;
  std::int64_t cost = 0, peak = 0, bound = 0;
  std::optional<double> time_s;
};
struct Certificate {
  int version = kCertificateVersion;
  std::vector<std::pair<std::string, int>> mesh_axes;
  std::string from, to, cost_model;
  std::int64_t limit = 0, states = 0;
  int bytes_per_element = 0;
  CertificateProgram program, baseline;
  std::optional<SmtFacts> smt;
};
// Throws p2v::Error naming `origin` and the path of the first offending value.
Certificate read_certificate(const std::string& text, const std::string& origin);

}  // namespace p2v::reshard
