#pragma once
// Per-step SMT certificates of reshard programs (docs/model.md §10): for a collective from type τ to τ',
// the claim "every element of the new layout comes from where the rule says" — for every mesh
// point p and local index l of τ', the element τ' places there (offset table of τ' at p, plus l)
// equals the element τ holds at the source the rule names (the group member / chunk picked by
// div and mod of l and p by constants) — as a query whose negation must be unsat. Terms are
// bitvectors wide enough that nothing overflows (checked), so div/mod by constants are exact.
#include <string>
#include <vector>

#include "p2v/encodings/smt.hpp"
#include "p2v/reshard/certificate.hpp"
#include "p2v/reshard/plan.hpp"

namespace p2v::encodings {

struct ReshardStepFact {
  smt::Result result = smt::Result::unknown;  // unsat: the claim holds
  std::string counterexample;                 // when sat: mesh point and local index
};

// One step (not allpermute, whose table the independent checker replays). `after` is the type the
// program claims; pass a wrong one to see the counterexample.
ReshardStepFact prove_reshard_step(smt::SolverKind solver, const reshard::Mesh& mesh, const reshard::Type& before,
                                   const reshard::Step& step, const reshard::Type& after, unsigned timeout_ms = 60000);

// Every step of a program but allpermutes, proved in Z3 and cvc5 (the certificate's `smt`);
// throws p2v::Error naming the step when a solver does not answer unsat.
reshard::SmtFacts prove_reshard_plan(const reshard::Mesh& mesh, const reshard::Program& prog);

}  // namespace p2v::encodings
