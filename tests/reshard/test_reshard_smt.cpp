// Per-step SMT certificates of reshard programs: every collective of synthesized programs is
// proved by Z3 and cvc5 (unsat); a step whose claimed result type is wrong gets a counterexample.
#include <doctest/doctest.h>

#include <random>

#include "p2v/encodings/reshard.hpp"

namespace rs = p2v::reshard;
namespace smt = p2v::encodings::smt;

TEST_CASE("smt: every collective step of synthesized programs is unsat in z3 and cvc5") {
  int proved = 0;
  for (int kind = 0; kind < 3; ++kind) {
    std::mt19937_64 rng(99 + static_cast<unsigned>(kind));
    for (int k = 0; k < 4; ++k) {
      const auto q = rs::random_problem(rng, kind, 3, 1);
      const auto p = rs::plan(rs::Request{q.mesh, q.from, q.to, {}, "f32", rs::CostKind::Paper, {}, {}});
      for (const auto& s : p.program.steps) {
        if (s.step.op == rs::Op::AllPermute) continue;
        for (auto solver : {smt::SolverKind::Z3, smt::SolverKind::Cvc5}) {
          CAPTURE(q.from);
          CAPTURE(q.to);
          CAPTURE(rs::step_to_string(s.step, p.mesh));
          CHECK(p2v::encodings::prove_reshard_step(solver, p.mesh, s.before, s.step, s.after).result ==
                smt::Result::unsat);
          ++proved;
        }
      }
    }
  }
  CHECK(proved > 10);
}

TEST_CASE("smt: a wrong result type is refused with a counterexample") {
  const auto mesh = rs::parse_mesh("x=4,y=4");
  const auto before = rs::parse_type("[32{x,y}512,128]", mesh);
  rs::Step s;
  s.op = rs::Op::AllToAll;
  s.dim = 0;
  s.dim2 = 1;
  s.axes = before.dims[0].axes;  // x[0], x[1], y[0], y[1]
  const auto right = rs::apply(before, s, mesh);
  for (auto solver : {smt::SolverKind::Z3, smt::SolverKind::Cvc5}) {
    CHECK(p2v::encodings::prove_reshard_step(solver, mesh, before, s, right).result == smt::Result::unsat);
    auto wrong = right;  // axes of dimension 1 in the wrong order (y before x): a different layout
    wrong.dims[1].axes = {mesh.factors[1][0], mesh.factors[1][1], mesh.factors[0][0], mesh.factors[0][1]};
    const auto f = p2v::encodings::prove_reshard_step(solver, mesh, before, s, wrong);
    CHECK(f.result == smt::Result::sat);
    CHECK(f.counterexample.find("mesh point") != std::string::npos);
  }
  // a dynslice claiming the wrong chunk order (minor axis swapped)
  const auto full = rs::parse_type("[16,8]", mesh);
  rs::Step d;
  d.op = rs::Op::DynSlice;
  d.dim = 0;
  d.axes = mesh.factors[0];
  auto bad = rs::apply(full, d, mesh);
  bad.dims[0].axes = {mesh.factors[0][1], mesh.factors[0][0]};
  CHECK(p2v::encodings::prove_reshard_step(smt::SolverKind::Z3, mesh, full, d, bad).result == smt::Result::sat);
}
