#pragma once
// Certificates: one JSON file per synthesized program, with the placement, the hierarchy, the
// program and its lowered groups, the state after every step, and the solver facts (who found
// it, unsat below the shortest bound, unsat after blocking all found up to the bound).
// The independent checker (proofs/checker) re-derives and replays everything but the facts.
#include <functional>
#include <string>
#include <vector>

#include "p2v/encodings/search.hpp"
#include "p2v/encodings/symbolic.hpp"
#include "p2v/engine/certificate_format.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::engine {
class StateSet;
}

namespace p2v::encodings {

// The formats (p2v-certificate/1 and p2v-shape-certificate/1) are defined in
// engine/certificate_format.hpp; this file makes them.
using engine::kCertificateFormat;
using engine::kShapeCertificateFormat;

struct CertifyOptions {
  std::string dir;  // created if missing
  std::vector<smt::SolverKind> solvers = {smt::SolverKind::Z3, smt::SolverKind::Cvc5};
  SearchOptions search;  // search.proofs: store cvc5's proofs beside the certificates
  // How the solvers reach the enumerator's set: confirm it by the closure of the reachable states
  // (confirm_by_closure: one-step queries; default), confirm it per bound (confirm_programs: a
  // check per program and per bound over all steps), or find it again one program at a time with
  // blocking clauses (enumerate_programs). Measured in docs/notes/smt.md.
  RunMethod method = RunMethod::Closure;
  // --resume (docs/sweeps.md): when every certificate file a call would write exists already and
  // reuse(path, program notation, matrix) accepts each (tools: the independent checker re-checks
  // it), the solvers do not run and the files are kept (CertifyResult::reused).
  std::function<bool(const std::string&, const std::string&, const engine::ParallelismMatrix&)> reuse;
  // With the closure: the concrete state-matrix encoding or the per-level symbolic one
  // (symbolic.hpp; auto: per-level where it applies, from kPerLevelMinDevices devices).
  EncodingChoice encoding = EncodingChoice::Auto;
};

struct CertifyResult {
  std::vector<std::string> files;       // certificates written
  std::vector<EnumerationResult> runs;  // one per solver (empty when reused)
  bool reused = false;                  // the files were there and accepted by CertifyOptions::reuse
};

// Compact state text of one local device: "rows:cols;rows:cols" with ranges, e.g. "0-3:0-1;4-7:2-3";
// "" for a device that holds nothing. Rows with equal column sets are grouped; ordered by first row.
std::string state_text(const LocalState& s, int device);

std::string state_text(const engine::StateSet& s, int device);  // the same text from the engine's bitsets

// Per program, the state texts of states 0..n ([step][local device]), replayed with the engine's
// Hoare rules; consecutive programs share the replay of their common prefix. Throws if a step is
// invalid.
using StateTexts = std::vector<std::vector<std::string>>;
std::vector<StateTexts> program_state_texts(const engine::SynthResult& r, const std::vector<engine::Program>& programs);

// The states 0..n of `prog` on the hierarchy of `r`, replayed with the engine's Hoare rules.
// Throws if a step is invalid.
std::vector<LocalState> replay_states(const engine::SynthResult& r, const engine::Program& prog);

// One certificate (JSON text).
std::string certificate_json(const engine::System& sys, const engine::Placement& p, const engine::SynthResult& r,
                             const engine::SynthOptions& opt, const engine::Program& prog,
                             const std::vector<EnumerationResult>& runs,
                             const std::vector<std::string>& proof_files = {});

// Writes one certificate per program of `r` (the enumerator's result for placement p, built with
// `opt`) into c.dir, after running every solver of c.solvers on the same hierarchy. Throws
// p2v::Error when a solver's set of programs differs from the enumerator's or a solver answers
// unknown (nothing is certified then). `runs`: reuse solver runs already made (same order as
// c.solvers) instead of running again.
CertifyResult certify_programs(const engine::System& sys, const engine::Placement& p, const engine::SynthResult& r,
                               const engine::SynthOptions& opt, const CertifyOptions& c,
                               const std::vector<EnumerationResult>* runs = nullptr);

// Certificates at any size (docs/shape.md): the solvers run on the shape's smallest instance, where
// `r` (from engine::synthesize_shape) lives; one p2v-shape-certificate/1 per program.
CertifyResult certify_shape_programs(const engine::System& sys, const engine::Shape& shape,
                                     const engine::SynthResult& r, const engine::SynthOptions& opt,
                                     const CertifyOptions& c, const std::vector<EnumerationResult>* runs = nullptr);

}  // namespace p2v::encodings
