#pragma once
// The certificate file formats (docs/formats.md "Certificates"), defined once: "p2v-certificate/1"
// (one program on a concrete hierarchy, with its lowered groups, the state after every step and
// the solver facts) and "p2v-shape-certificate/1" (one program at any size: the real placement,
// its shape, every step's level pattern, and the p2v-certificate/1 of the shape's smallest
// instance). encodings writes them (certificate.hpp), the runtime reads them (`p2v run
// --certificate`). The independent checker (proofs/checker) keeps its own reader on purpose: it
// must not share code with what it checks.
#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::engine {

inline constexpr const char* kCertificateFormat = "p2v-certificate/1";
inline constexpr const char* kShapeCertificateFormat = "p2v-shape-certificate/1";

// One claim a solver answered (facts.found_by, facts.no_shorter, facts.complete).
struct SolverFact {
  std::string solver, version, settings;
  int bound = 0;
  // "enumerate", "confirm", "closure" (the concrete state-matrix encoding) or "symbolic-closure"
  // (the closure over the per-level symbolic encoding, encodings/symbolic.hpp)
  std::string method;
  std::string query;   // what was asked, in words
  std::string result;  // "sat", "unsat", or for a derived fact what it follows from
  std::optional<double> seconds, bound_seconds;
  std::optional<std::int64_t> programs, states, steps;
  std::optional<std::string> conclusion;
  bool operator==(const SolverFact&) const = default;
};

struct CertificateFacts {
  std::int64_t enumerator_programs = 0, enumerator_nodes = 0;  // facts.enumerator (found: true)
  std::vector<SolverFact> found_by, no_shorter, complete;
  int shortest = 0;  // the shortest valid program's length (0: none up to the bound)
  bool minimal = false;
  int complete_up_to = 0;
  std::vector<std::string> proofs;  // cvc5 proof files beside the certificate
  bool operator==(const CertificateFacts&) const = default;
};

struct CertificateStep {
  std::string name;  // notation
  Collective collective = Collective::AllReduce;
  int slice = 0;
  std::string form;  // "Inside", "Parallel" or "Master"
  int e = 0;
  Groups groups;  // local device indices of the hierarchy
  bool operator==(const CertificateStep&) const = default;
};

// "p2v-certificate/1".
struct Certificate {
  System system;
  std::vector<int> levels, axes, reduce;
  ParallelismMatrix matrix;
  MasterCollectives master = MasterCollectives::AllReduceOnly;
  int max_size = 0;
  HierarchyKind hierarchy_kind = HierarchyKind::ReductionAxes;
  std::vector<int> hierarchy_cards;
  std::vector<std::string> hierarchy_names;
  Groups goal_groups;
  std::string notation;
  std::vector<CertificateStep> steps;
  LoweredProgram lowered;
  std::vector<std::vector<std::string>> states;  // [step 0..n][local device]: state text
  CertificateFacts facts;
};

// One step of a shape certificate: its collective, (d) slice and form, and its level pattern.
struct ShapeCertificateStep {
  Collective collective = Collective::AllReduce;
  std::string slice, form;
  std::vector<std::array<int, 3>> vary;  // (axis, system level, factor), most significant first
  bool master = false;
  std::int64_t group_size = 0, num_groups = 0;
  bool operator==(const ShapeCertificateStep&) const = default;
};

// "p2v-shape-certificate/1".
struct ShapeCertificate {
  System system;
  std::vector<std::int64_t> axes;
  std::vector<int> reduce;
  ParallelismMatrix matrix;
  HierarchyKind hierarchy_kind = HierarchyKind::ReductionAxes;
  std::string signature;
  std::vector<std::pair<std::string, std::int64_t>> shape_levels;  // (name, cardinality)
  std::string notation;
  std::vector<ShapeCertificateStep> steps;
  std::vector<std::string> relies_on;
  Certificate instance;  // the smallest instance's certificate
};

nlohmann::json to_json(const Certificate& c);
nlohmann::json to_json(const ShapeCertificate& c);

// Strict readers (json_reader.hpp): `origin` names the file in errors; the format field must be
// the one of the type.
Certificate certificate_from_json(const nlohmann::json& j, const std::string& origin);
ShapeCertificate shape_certificate_from_json(const nlohmann::json& j, const std::string& origin);
// Either format, by its "format" field; refuses any other format by name.
std::variant<Certificate, ShapeCertificate> any_certificate_from_json(const nlohmann::json& j,
                                                                      const std::string& origin);

}  // namespace p2v::engine
