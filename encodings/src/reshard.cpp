// Per-step SMT certificates of reshard programs (see p2v/encodings/reshard.hpp).
#include "p2v/encodings/reshard.hpp"

#include <fmt/core.h>

#include "p2v/engine/error.hpp"

namespace p2v::encodings {

namespace rs = reshard;
using smt::Term;

namespace {

constexpr unsigned kWidth = 62;  // every value is below 2^(kWidth-1): see the overflow guard

}  // namespace

ReshardStepFact prove_reshard_step(smt::SolverKind kind, const rs::Mesh& mesh, const rs::Type& before,
                                   const rs::Step& s, const rs::Type& after, unsigned timeout_ms) {
  if (s.op == rs::Op::AllPermute) throw Error("prove_reshard_step: allpermute is checked by the checker's replay");
  std::int64_t biggest = 1;
  for (const auto& d : before.dims) biggest = std::max(biggest, d.global);
  for (const auto& a : mesh.primes) biggest = std::max<std::int64_t>(biggest, a.size);
  if (biggest >= (std::int64_t{1} << (kWidth / 2 - 1)))
    throw Error("prove_reshard_step: sizes too large for the overflow-free encoding");
  smt::SolverOptions opt;
  opt.timeout_ms = timeout_ms;
  smt::Solver S(kind, opt);
  auto val = [&](std::int64_t v) { return S.bv_val(kWidth, static_cast<std::uint64_t>(v)); };
  std::vector<Term> assumptions;
  // The mesh point p (of the device receiving) and the local index l in τ'.
  std::vector<Term> p, l;
  for (std::size_t a = 0; a < mesh.primes.size(); ++a) {
    p.push_back(S.bv_var(fmt::format("p_{}", a), kWidth));
    S.add(smt::ult(p.back(), val(mesh.primes[a].size)));
  }
  for (std::size_t i = 0; i < after.dims.size(); ++i) {
    l.push_back(S.bv_var(fmt::format("l_{}", i), kWidth));
    S.add(smt::ult(l.back(), val(after.dims[i].local)));
  }
  // docs/model.md §10 Meaning: D[c{a,rest}n](q) = c·q_a + D[(c·|a|){rest}n](q).
  auto offset = [&](const rs::Type& t, std::size_t i, const std::vector<Term>& q) {
    Term o = val(0);
    std::int64_t c = t.dims[i].local;
    for (int a : t.dims[i].axes) {
      o = o + val(c) * q[static_cast<std::size_t>(a)];
      c *= mesh.primes[static_cast<std::size_t>(a)].size;
    }
    return o;
  };
  // idx(q_A): the mixed-radix index of q over the axes A (minor first); and its inverse.
  auto index_of = [&](const std::vector<Term>& q) {
    Term t = val(0);
    std::int64_t w = 1;
    for (int a : s.axes) {
      t = t + val(w) * q[static_cast<std::size_t>(a)];
      w *= mesh.primes[static_cast<std::size_t>(a)].size;
    }
    return t;
  };
  auto with_index = [&](std::vector<Term> q, Term t) {
    std::int64_t w = 1;
    for (int a : s.axes) {
      const auto k = mesh.primes[static_cast<std::size_t>(a)].size;
      q[static_cast<std::size_t>(a)] = smt::urem(smt::udiv(t, val(w)), val(k));
      w *= k;
    }
    return q;
  };
  // Where the rule says the element at (p, l) of τ' comes from: source point q, local index m in τ.
  std::vector<Term> q = p, m = l;
  const auto i = static_cast<std::size_t>(s.dim);
  const std::int64_t ci = before.dims[i].local;
  switch (s.op) {
    case rs::Op::AllGather:  // member idx = l_i div c_i, at l_i mod c_i
      q = with_index(p, smt::udiv(l[i], val(ci)));
      m[i] = smt::urem(l[i], val(ci));
      break;
    case rs::Op::AllToAll: {  // member idx = l_i div c_i; chunk of j = my idx
      const auto j = static_cast<std::size_t>(s.dim2);
      q = with_index(p, smt::udiv(l[i], val(ci)));
      m[i] = smt::urem(l[i], val(ci));
      m[j] = index_of(p) * val(after.dims[j].local) + l[j];
      break;
    }
    case rs::Op::DynSlice:  // my own chunk idx(p_A) of dimension i
      m[i] = index_of(p) * val(after.dims[i].local) + l[i];
      break;
    case rs::Op::AllPermute:
      break;
  }
  std::vector<Term> same;
  for (std::size_t d = 0; d < after.dims.size(); ++d)
    same.push_back(offset(after, d, p) + l[d] == offset(before, d, q) + m[d]);
  // Also the source index is inside τ's tile (the element exists there).
  std::vector<Term> inside;
  for (std::size_t d = 0; d < before.dims.size(); ++d) inside.push_back(smt::ult(m[d], val(before.dims[d].local)));
  S.add(!(smt::all_of(same, S.bool_val(true)) && smt::all_of(inside, S.bool_val(true))));
  ReshardStepFact f;
  f.result = S.check();
  if (f.result == smt::Result::sat) {
    std::string pt, li;
    for (std::size_t a = 0; a < p.size(); ++a)
      pt += fmt::format("{}{}={}", a ? "," : "", mesh.primes[a].name, S.value_u64(p[a]));
    for (std::size_t d = 0; d < l.size(); ++d) li += fmt::format("{}{}", d ? "," : "", S.value_u64(l[d]));
    f.counterexample = fmt::format("mesh point ({}) local index [{}]", pt, li);
  }
  return f;
}

rs::SmtFacts prove_reshard_plan(const rs::Mesh& mesh, const rs::Program& prog) {
  rs::SmtFacts facts;
  for (std::size_t k = 0; k < prog.steps.size(); ++k) {
    const auto& ps = prog.steps[k];
    if (ps.step.op == rs::Op::AllPermute) continue;  // a table: the checker replays it
    rs::SmtStepFact f{static_cast<std::int64_t>(k), rs::to_string(ps.step.op), {}};
    for (auto kind : {smt::SolverKind::Z3, smt::SolverKind::Cvc5}) {
      const auto r = prove_reshard_step(kind, mesh, ps.before, ps.step, ps.after);
      if (r.result != smt::Result::unsat)
        throw Error(fmt::format("step {} ({}): {} answered {} for \"every element comes from where the rule says\"{}",
                                k, rs::step_to_string(ps.step, mesh), smt::to_string(kind), smt::to_string(r.result),
                                r.counterexample.empty() ? "" : "; counterexample: " + r.counterexample));
      f.unsat.push_back(smt::to_string(kind));
    }
    facts.steps.push_back(std::move(f));
  }
  return facts;
}

}  // namespace p2v::encodings
