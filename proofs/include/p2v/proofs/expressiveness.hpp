#pragma once
// Theorem 3.2 ((d) >= (c) >= (b) >= (a)) and lemmas B.1-B.8 checked on concrete hierarchies
// (SPEC §7): by enumeration, and the instruction-level argument by SMT.
#include <map>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::proofs {

enum class Status { Holds, Fails, Unknown, Info };
const char* to_string(Status s);  // "holds", "fails", "unknown", "info"

struct Check {
  std::string id;      // e.g. "thm:c>=b", "B.4", "smt:twin(b->a)"
  std::string title;   // one line: what was checked
  Status status = Status::Holds;
  std::string detail;  // counts, or the witness when it fails / is strict
  double seconds = 0;
};

struct ProveOptions {
  int max_size = 4;
  engine::MasterCollectives master = engine::MasterCollectives::AllReduceOnly;
  // Solvers for the instruction-level queries: "z3", "cvc5"; empty = skip the SMT checks.
  std::vector<std::string> solvers{"z3", "cvc5"};
  unsigned timeout_ms = 60000;
};

struct MatrixReport {
  engine::ParallelismMatrix matrix;
  std::vector<std::pair<std::string, std::size_t>> program_counts;  // hierarchy -> #programs
  std::vector<Check> checks;
  bool ok() const;  // no Fails and no Unknown
};

// All checks for one placement.
MatrixReport prove(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                   const engine::ParallelismMatrix& x, const ProveOptions& opt);

// A sample case of a suite file.
struct SuiteCase {
  std::string name;
  engine::System system;
  std::vector<int> axes, reduce;
  std::vector<engine::ParallelismMatrix> matrices;  // the one given, or all
  int max_size = 4;
  // Checks this case is known to fail under our reading of the semantics (check id -> why); a
  // suite run passes only if each of them fails and nothing else does.
  std::map<std::string, std::string> expect_fail;
};

// Reads a suite: a JSON list of {"name", "system" (inline "a=2,b=4", a file path relative to the
// suite, or a system object), "axes", "reduce", optional "matrix" and "max_size"}.
std::vector<SuiteCase> load_suite(const std::string& path);

// True when the SMT checks are compiled in.
bool have_smt();

}  // namespace p2v::proofs
