#pragma once
// The per-digit semantics of grid rules (docs/rules.md "Proofs for every size").
//
// On an L-axis grid with symbolic sizes n_0..n_{L-1}, a device is its coordinates (d_0..d_{L-1}), a
// source its coordinates (j_0..), and a row its L digits r_0..r_{L-1} in a radix order pi (digit p
// has radix n_{pi(p)}, r_0 most significant). A side's final state is computed in closed form for
// all sizes at once: a list of pieces (device slices such as d_a = 1), each with its ownership
// (digits fixed to device coordinates or 0, guards d_x = 0) and a multiplicity polynomial (sum of
// coefficient x product of equalities between coordinates, digits and 0). The five collectives'
// rules on this state are proved by hand in docs/rules.md; a step outside the fragment (a member
// reading a row it does not own, a ReduceScatter whose blocks are not the next digits, a rotated
// member order, ...) makes the rule "not in the fragment" with the reason.
//
// The closed forms of both sides are then compared by an SMT query in pure equality logic over
// bit-vectors (no order, no arithmetic on coordinates): unsat means equal for every size (small
// model property: a difference at some size is a partition of the few variables, which the
// bit-vector domain realises). With `shape` the same query is specialised to one grid (ranges and
// sizes fixed): the bounded mode's query.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "p2v/encodings/smt.hpp"
#include "p2v/engine/counting.hpp"
#include "p2v/engine/rules.hpp"

namespace p2v::encodings {

struct DigitSide;  // closed forms of one side (rules_digits.cpp)

class DigitRule {
 public:
  // Tries every radix order (identity first); the first under which both sides stay in the
  // fragment wins.
  explicit DigitRule(const engine::Rule& rule);
  ~DigitRule();
  DigitRule(DigitRule&&) noexcept;

  bool ok() const { return ok_; }
  const std::string& reason() const { return reason_; }     // why not in the fragment
  const std::vector<int>& order() const { return order_; }  // radix order: axis of each row digit
  std::string order_text() const;                           // e.g. "c,b,a"
  // The closed forms, one line per piece and side (what certificates record and `p2v check` re-derives).
  std::string forms_text() const;
  // Whether a multiplicity depends on a group size (n_a); the all-sizes query cannot state it.
  bool size_dependent() const;

  // "" when the closed forms agree with the counting replay of both sides on this grid at every
  // (device, row, source), else the first disagreement.
  // `lhs`/`rhs`: the replays when the caller has them (else computed here).
  std::string replay_check(const std::vector<int>& shape, const engine::CountState* lhs = nullptr,
                           const engine::CountState* rhs = nullptr) const;

  // Builds the query "the sides differ somewhere" on `s` (may be null: text only). `shape` null:
  // for every size (equality logic); else for this grid. Returns the SMT-LIB text.
  struct Query {
    std::string text;
    std::vector<smt::Term> d, r, j;  // coordinate / digit variables (for a witness after sat)
  };
  Query query(smt::Solver* s, const std::vector<int>* shape) const;

  // After sat on a bounded query: (device, row, source) from the model.
  std::array<int, 3> witness(smt::Solver& s, const Query& q, const std::vector<int>& shape) const;

 private:
  const engine::Rule* rule_ = nullptr;
  bool ok_ = false;
  std::string reason_;
  std::vector<int> order_;
  std::unique_ptr<DigitSide> lhs_, rhs_;
};

}  // namespace p2v::encodings
