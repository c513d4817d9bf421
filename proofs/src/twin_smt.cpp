#include <algorithm>
#include <chrono>

#include "twin.hpp"

#ifdef P2V_HAVE_SMT
#include "p2v/encodings/smt.hpp"
#endif

namespace p2v::proofs::detail {

#ifdef P2V_HAVE_SMT
namespace {
// Bits for `values` distinct values (at least 1).
unsigned bits_for(std::size_t values) {
  unsigned b = 1;
  while ((std::size_t{1} << b) < values) ++b;
  return b;
}

// Bits per device in a signature: enough for 0..n (n: in no group of two or more).
unsigned device_bits(int n) { return bits_for(static_cast<std::size_t>(n) + 1); }

// Signature of a lowered instruction: 3 bits of collective, then per device the first member of
// its group, or n if it is in no group of two or more members. Two instructions have equal
// signatures iff they have the same collective and the same groups of two or more members (the
// first-member map and the "same group" relation determine each other): n log n bits instead of
// one bit per device pair.
std::vector<bool> signature(const engine::LoweredStep& s, int n) {
  const unsigned b = device_bits(n);
  std::vector<bool> bits(3 + static_cast<std::size_t>(n) * b, false);
  const unsigned c = static_cast<unsigned>(s.collective);
  for (unsigned i = 0; i < 3; ++i) bits[i] = (c >> i) & 1u;
  std::vector<int> first(n, n);
  for (const auto& g : s.groups)
    if (g.size() >= 2) {
      const int f = *std::min_element(g.begin(), g.end());
      for (int d : g) first[d] = f;
    }
  for (int u = 0; u < n; ++u)
    for (unsigned i = 0; i < b; ++i) bits[3 + static_cast<std::size_t>(u) * b + i] = (first[u] >> i) & 1;
  return bits;
}
}  // namespace
#endif

TwinAnswer twin_query(const std::string& solver, const std::vector<engine::LoweredStep>& weak,
                      const std::vector<engine::LoweredStep>& strong, int n, unsigned timeout_ms) {
  TwinAnswer a;
#ifndef P2V_HAVE_SMT
  (void)solver, (void)weak, (void)strong, (void)n, (void)timeout_ms;
  a.result = "unavailable";
  a.why = "built without the SMT encodings (P2V_WITH_SMT=OFF)";
  return a;
#else
  namespace smt = p2v::encodings::smt;
  const auto t0 = std::chrono::steady_clock::now();
  smt::SolverOptions so;
  so.timeout_ms = timeout_ms;
  smt::Solver s(smt::parse_solver_kind(solver), so);
  a.solver = s.name() + " " + s.version();
  if (weak.empty()) {
    a.result = "unsat";
    a.why = "vacuous: no instruction of the weaker hierarchy occurs in a valid program";
    return a;
  }
  const unsigned width = static_cast<unsigned>(3 + static_cast<std::size_t>(n) * device_bits(n));
  const unsigned ibits = bits_for(weak.size());
  // i picks a weak instruction; sig is its signature; sig differs from every strong signature.
  smt::Term i = s.bv_var("i", ibits);
  s.add(smt::ule(i, s.bv_val(ibits, weak.size() - 1)));
  smt::Term sig = s.bv_var("sig", width);
  std::vector<smt::Term> pick;
  for (std::size_t w = 0; w < weak.size(); ++w)
    pick.push_back(smt::implies(i == s.bv_val(ibits, w), sig == s.bv_val(width, signature(weak[w], n))));
  s.add(smt::all_of(pick, s.bool_val(true)));
  for (const auto& st : strong) s.add(sig != s.bv_val(width, signature(st, n)));
  const auto r = s.check();
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r == smt::Result::unsat) {
    a.result = "unsat";
  } else if (r == smt::Result::sat) {
    a.result = "sat";
    a.witness = static_cast<int>(s.value_u64(i));
  } else {
    a.result = "unknown";
    a.why = s.reason_unknown();
  }
  return a;
#endif
}

}  // namespace p2v::proofs::detail
