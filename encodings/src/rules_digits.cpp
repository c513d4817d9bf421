// The per-digit semantics of grid rules and its SMT queries (see rules_digits.hpp, docs/rules.md).
#include "p2v/encodings/rules_digits.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>

#include "p2v/engine/counting.hpp"
#include "p2v/engine/error.hpp"

namespace p2v::encodings {

namespace {

using engine::Collective;

enum class AK : std::uint8_t { K, D, J, R };  // constant, device coordinate, source coordinate, row digit
struct Atom {
  AK k = AK::K;
  int axis = 0;  // the axis whose range the atom lives in
  int idx = 0;   // D/J: the axis; R: the digit position; K: the value
  auto operator<=>(const Atom&) const = default;
};
Atom Dat(int x) { return {AK::D, x, x}; }
Atom Jat(int x) { return {AK::J, x, x}; }
Atom Kat(int x, int v) { return {AK::K, x, v}; }

using Ind = std::pair<Atom, Atom>;  // [first = second], first < second
struct Mono {
  std::int64_t c = 1;
  std::vector<int> sz;  // exponent of n_x
  std::vector<Ind> ind;
};
using Poly = std::vector<Mono>;
struct Cond {
  int axis = 0, value = 0;
  bool eq = true;
  auto operator<=>(const Cond&) const = default;
};
struct Piece {
  std::vector<Cond> cond;                  // the device slice (conjunction)
  std::vector<std::optional<Atom>> fixed;  // per row digit: fixed to an atom, or free
  std::vector<Ind> guards;                 // further ownership conditions
  Poly m;                                  // multiplicity on every owned row
};

struct OutOfFragment {
  std::string why;
};

char ax(int x) { return static_cast<char>('a' + x); }
std::string atom_text(const Atom& a) {
  switch (a.k) {
    case AK::D:
      return fmt::format("d_{}", ax(a.axis));
    case AK::J:
      return fmt::format("j_{}", ax(a.axis));
    case AK::R:
      return fmt::format("r{}", a.idx);
    default:
      return fmt::format("{}", a.idx);
  }
}

// 1 = true, 0 = false, -1 = a real indicator (normalised into `out`).
int make_ind(Atom a, Atom b, Ind* out) {
  if (a == b) return 1;
  if (a.k == AK::K && b.k == AK::K) return a.idx == b.idx ? 1 : 0;
  if (b < a) std::swap(a, b);
  *out = {a, b};
  return -1;
}

using Subst = std::map<Atom, Atom>;
Atom sub(const Subst& s, const Atom& a) {
  auto it = s.find(a);
  return it == s.end() ? a : it->second;
}

// Substitutes in a list of indicators; false when one becomes false.
bool subst_inds(std::vector<Ind>& v, const Subst& s) {
  std::vector<Ind> out;
  for (const auto& [a, b] : v) {
    Ind i;
    const int r = make_ind(sub(s, a), sub(s, b), &i);
    if (r == 0) return false;
    if (r < 0) out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  v = std::move(out);
  return true;
}

Poly normalise(Poly p) {
  std::sort(p.begin(), p.end(),
            [](const Mono& x, const Mono& y) { return std::tie(x.sz, x.ind) < std::tie(y.sz, y.ind); });
  Poly out;
  for (auto& m : p) {
    if (!out.empty() && out.back().sz == m.sz && out.back().ind == m.ind)
      out.back().c += m.c;
    else
      out.push_back(std::move(m));
  }
  std::erase_if(out, [](const Mono& m) { return m.c == 0; });
  return out;
}

Poly subst_poly(const Poly& p, const Subst& s) {
  Poly out;
  for (Mono m : p)
    if (subst_inds(m.ind, s)) out.push_back(std::move(m));
  return normalise(std::move(out));
}

// Sum over d_x in [0, n_x): an indicator [d_x = a] picks d_x := a (a lives in x's range); a
// monomial without d_x is multiplied by n_x.
Poly sum_axis(const Poly& p, int x) {
  Poly out;
  const Atom dx = Dat(x);
  for (Mono m : p) {
    std::optional<Atom> pick;
    for (const auto& [a, b] : m.ind) {
      if (a == dx) pick = b;
      if (b == dx) pick = a;
      if (pick) break;
    }
    if (pick) {
      if (!subst_inds(m.ind, Subst{{dx, *pick}})) continue;
    } else {
      m.sz[static_cast<std::size_t>(x)] += 1;
    }
    out.push_back(std::move(m));
  }
  return normalise(std::move(out));
}

Poly identity(int L) {
  Mono m;
  m.sz.assign(static_cast<std::size_t>(L), 0);
  for (int x = 0; x < L; ++x) m.ind.push_back({Dat(x), Jat(x)});
  std::sort(m.ind.begin(), m.ind.end());
  return {m};
}

std::string step_text(const engine::GridStep& s) { return engine::grid_step_text(s); }

}  // namespace

struct DigitSide {
  std::vector<Piece> pieces;
};

namespace {

class Evaluator {
 public:
  Evaluator(int L, std::vector<int> order) : L_(L), order_(std::move(order)) {}

  DigitSide run(const engine::RuleSide& side) const {
    DigitSide s;
    Piece p;
    p.fixed.assign(static_cast<std::size_t>(L_), std::nullopt);
    p.m = identity(L_);
    s.pieces.push_back(std::move(p));
    for (const auto& st : side.layout) apply(s, st);
    for (auto& q : s.pieces) q.m = identity(L_);
    for (const auto& st : side.steps) apply(s, st);
    return s;
  }

 private:
  static bool in(const std::vector<int>& A, int x) { return std::find(A.begin(), A.end(), x) != A.end(); }

  void apply(DigitSide& s, const engine::GridStep& st) const {
    if (st.shift_axis >= 0)
      throw OutOfFragment{fmt::format("{}: a member order rotated by a coordinate", step_text(st))};
    std::vector<Piece> out;
    for (auto& p : s.pieces) {
      for (const auto& c : p.cond)
        if (in(st.axes, c.axis))
          throw OutOfFragment{
              fmt::format("{}: a group cuts across the slices {}={}", step_text(st), ax(c.axis), c.value)};
      if (st.only_axis < 0) {
        update(p, st);
        out.push_back(std::move(p));
        continue;
      }
      const int x = st.only_axis, v = st.only_value;
      bool inside_known = false, outside_known = false;
      for (const auto& c : p.cond)
        if (c.axis == x) {
          if (c.eq && c.value == v) inside_known = true;
          if ((c.eq && c.value != v) || (!c.eq && c.value == v)) outside_known = true;
        }
      if (outside_known) {
        out.push_back(std::move(p));
        continue;
      }
      if (inside_known) {
        update(p, st);
        out.push_back(std::move(p));
        continue;
      }
      Piece a = p, b = std::move(p);
      a.cond.push_back({x, v, true});
      b.cond.push_back({x, v, false});
      std::sort(a.cond.begin(), a.cond.end());
      std::sort(b.cond.begin(), b.cond.end());
      update(a, st);
      out.push_back(std::move(a));
      out.push_back(std::move(b));
    }
    s.pieces = std::move(out);
  }

  void update(Piece& p, const engine::GridStep& st) const {
    const auto& A = st.axes;
    auto onA = [&](const Atom& a) { return a.k == AK::D && in(A, a.axis); };
    const Collective c = st.collective;
    if (c == Collective::AllReduce || c == Collective::ReduceScatter || c == Collective::Reduce) {
      // Every member must own the rows it contributes (the root's): ownership may not depend on A.
      for (const auto& f : p.fixed)
        if (f && onA(*f))
          throw OutOfFragment{fmt::format("{}: a member reads rows it does not own (a row digit is fixed to {})",
                                          step_text(st), atom_text(*f))};
      for (const auto& [a, b] : p.guards)
        if (onA(a) || onA(b))
          throw OutOfFragment{fmt::format("{}: a member reads rows it does not own (only {} = {} owns them)",
                                          step_text(st), atom_text(a), atom_text(b))};
      for (int x : A) p.m = sum_axis(p.m, x);
      if (c == Collective::Reduce) {
        for (int x : A) p.guards.push_back({Dat(x), Kat(x, 0)});
        subst_inds(p.guards, {});
      }
      if (c == Collective::ReduceScatter) {
        std::size_t t = 0;
        for (int q = 0; q < L_ && t < A.size(); ++q) {
          if (p.fixed[static_cast<std::size_t>(q)]) continue;
          if (order_[static_cast<std::size_t>(q)] != A[t])
            throw OutOfFragment{fmt::format("{}: its blocks are not the next free row digits (digit {} has radix n_{})",
                                            step_text(st), q, ax(order_[static_cast<std::size_t>(q)]))};
          p.fixed[static_cast<std::size_t>(q)] = Dat(A[t++]);
        }
        if (t < A.size()) throw OutOfFragment{fmt::format("{}: fewer free row digits than axes", step_text(st))};
      }
      return;
    }
    Subst s;
    if (c == Collective::Broadcast) {
      for (int x : A) s[Dat(x)] = Kat(x, 0);
    } else {  // AllGather: the first member owning a row is its source
      for (int x : A) {
        bool guarded = false;
        for (const auto& [a, b] : p.guards) {
          if (!onA(a) && !onA(b)) continue;
          if (!(a.k == AK::K && a.idx == 0 && b == Dat(x)) && !(b.k == AK::K && b.idx == 0 && a == Dat(x)) &&
              (a == Dat(x) || b == Dat(x)))
            throw OutOfFragment{fmt::format("{}: ownership condition {} = {} is not a root test", step_text(st),
                                            atom_text(a), atom_text(b))};
          if (a == Dat(x) || b == Dat(x)) guarded = true;
        }
        int found = -1;
        for (int q = 0; q < L_; ++q)
          if (p.fixed[static_cast<std::size_t>(q)] == Dat(x)) {
            if (found >= 0 || guarded) {
              if (guarded) {
                p.fixed[static_cast<std::size_t>(q)] = Kat(x, 0);
                continue;
              }
              throw OutOfFragment{fmt::format("{}: two row digits fixed to d_{}", step_text(st), ax(x))};
            }
            found = q;
          }
        if (found >= 0 && !guarded) {
          s[Dat(x)] = Atom{AK::R, x, found};
          p.fixed[static_cast<std::size_t>(found)] = std::nullopt;
        } else {
          s[Dat(x)] = Kat(x, 0);
        }
      }
      std::erase_if(p.guards, [&](const Ind& g) { return onA(g.first) || onA(g.second); });
    }
    for (auto& f : p.fixed)
      if (f) f = sub(s, *f);
    if (!subst_inds(p.guards, s))
      throw OutOfFragment{fmt::format("{}: no device owns anything", step_text(st))};  // not reached by the rules
    p.m = subst_poly(p.m, s);
  }

  int L_;
  std::vector<int> order_;
};

unsigned bits_for(std::uint64_t v) {  // bits to represent 0..v
  unsigned b = 1;
  while (b < 63 && (std::uint64_t{1} << b) <= v) ++b;
  return b;
}

std::string poly_text(const Poly& p) {
  if (p.empty()) return "0";
  std::string t;
  for (const auto& m : p) {
    std::string f = m.c == 1 && !m.ind.empty() ? "" : fmt::format("{}", m.c);
    for (std::size_t x = 0; x < m.sz.size(); ++x)
      for (int e = 0; e < m.sz[x]; ++e) f += (f.empty() ? "" : "*") + fmt::format("n_{}", ax(static_cast<int>(x)));
    for (const auto& [a, b] : m.ind) f += (f.empty() ? "" : "*") + fmt::format("[{}={}]", atom_text(a), atom_text(b));
    t += (t.empty() ? "" : " + ") + f;
  }
  return t;
}

std::string piece_text(const Piece& p) {
  std::string c;
  for (const auto& x : p.cond)
    c += fmt::format("{}d_{}{}{}", c.empty() ? "" : " & ", ax(x.axis), x.eq ? "=" : "!=", x.value);
  std::string own;
  for (std::size_t q = 0; q < p.fixed.size(); ++q)
    if (p.fixed[q]) own += fmt::format("{}r{}={}", own.empty() ? "" : " & ", q, atom_text(*p.fixed[q]));
  for (const auto& [a, b] : p.guards)
    own += fmt::format("{}{}={}", own.empty() ? "" : " & ", atom_text(a), atom_text(b));
  return fmt::format("{}owns {}: m = {}", c.empty() ? "" : "if " + c + ": ", own.empty() ? "every row" : own,
                     poly_text(p.m));
}

// SMT terms beside their SMT-LIB text.
struct T {
  smt::Term t;
  std::string s;
};

class Builder {
 public:
  Builder(smt::Solver* s, int L, const std::vector<int>& order, const std::vector<int>* shape, int maxv)
      : s_(s), L_(L), order_(order), shape_(shape) {
    if (shape) {
      int mx = maxv + 1;
      for (int n : *shape) mx = std::max(mx, n);
      w_ = bits_for(static_cast<std::uint64_t>(mx));
    } else {
      // Pure equality logic: per axis at most d, j, one digit and the constants 0..maxv, so a domain
      // of 2^w >= 3L + maxv + 2 elements realises every partition of them (small model property).
      w_ = bits_for(static_cast<std::uint64_t>(3 * L + maxv + 2));
    }
    text_ = fmt::format("(set-logic QF_BV)\n; per-digit query, radix order{}; {}\n", order_text(),
                        shape ? "grid " + shape_text() : "every size (equality logic over coordinates)");
    for (int x = 0; x < L; ++x) d_.push_back(var(fmt::format("d_{}", ax(x))));
    for (int x = 0; x < L; ++x) j_.push_back(var(fmt::format("j_{}", ax(x))));
    for (int q = 0; q < L; ++q) r_.push_back(var(fmt::format("r{}", q)));
    if (shape) {
      for (int x = 0; x < L; ++x) {
        add(ult(d_[x], cst(n(x))));
        add(ult(j_[x], cst(n(x))));
        add(ult(r_[x], cst(n(order_[static_cast<std::size_t>(x)]))));
      }
    }
  }

  void set_mw(unsigned mw) { mw_ = mw; }
  const std::vector<T>& d() const { return d_; }
  const std::vector<T>& j() const { return j_; }
  const std::vector<T>& r() const { return r_; }
  std::string& text() { return text_; }

  T atom(const Atom& a, bool swap) {
    switch (a.k) {
      case AK::D:
        return swap ? j_[a.axis] : d_[a.axis];
      case AK::J:
        return swap ? d_[a.axis] : j_[a.axis];
      case AK::R:
        return r_[a.idx];
      default:
        return cst(static_cast<std::uint64_t>(a.idx));
    }
  }
  // Element v of axis x exists (v < n_x).
  T exists(int x, int v) {
    if (v == 0) return bval(true);
    if (shape_) return bval(v < n(x));
    const std::string name = fmt::format("e_{}{}", ax(x), v);
    auto it = e_.find(name);
    if (it != e_.end()) return it->second;
    text_ += fmt::format("(declare-const {} Bool)\n", name);
    T t{s_ ? s_->bool_var(name) : smt::Term{}, name};
    e_[name] = t;
    return t;
  }
  T eq(const T& a, const T& b) { return {s_ ? a.t == b.t : smt::Term{}, fmt::format("(= {} {})", a.s, b.s)}; }
  T ne(const T& a, const T& b) { return {s_ ? a.t != b.t : smt::Term{}, fmt::format("(not (= {} {}))", a.s, b.s)}; }
  T neg(const T& a) { return {s_ ? !a.t : smt::Term{}, fmt::format("(not {})", a.s)}; }
  T all(const std::vector<T>& v) {
    if (v.empty()) return bval(true);
    if (v.size() == 1) return v[0];
    std::vector<smt::Term> ts;
    std::string s = "(and";
    for (const auto& x : v) {
      ts.push_back(x.t);
      s += " " + x.s;
    }
    return {s_ ? smt::all_of(ts, s_->bool_val(true)) : smt::Term{}, s + ")"};
  }
  T any(const std::vector<T>& v) {
    if (v.empty()) return bval(false);
    if (v.size() == 1) return v[0];
    std::vector<smt::Term> ts;
    std::string s = "(or";
    for (const auto& x : v) {
      ts.push_back(x.t);
      s += " " + x.s;
    }
    return {s_ ? smt::any_of(ts, s_->bool_val(false)) : smt::Term{}, s + ")"};
  }
  T ite(const T& c, const T& a, const T& b) {
    return {s_ ? smt::ite(c.t, a.t, b.t) : smt::Term{}, fmt::format("(ite {} {} {})", c.s, a.s, b.s)};
  }
  T mval(std::uint64_t v) { return {s_ ? s_->bv_val(mw_, v) : smt::Term{}, fmt::format("(_ bv{} {})", v, mw_)}; }
  T sum(const std::vector<T>& v) {
    if (v.empty()) return mval(0);
    if (v.size() == 1) return v[0];
    std::vector<smt::Term> ts;
    std::string s = "(bvadd";
    for (const auto& x : v) {
      ts.push_back(x.t);
      s += " " + x.s;
    }
    return {s_ ? smt::apply_n(smt::Op::BvAdd, ts) : smt::Term{}, s + ")"};
  }
  void add(const T& t) {
    if (s_) s_->add(t.t);
    text_ += "(assert " + t.s + ")\n";
  }
  int n(int x) const { return (*shape_)[static_cast<std::size_t>(x)]; }

 private:
  T var(const std::string& name) {
    text_ += fmt::format("(declare-const {} (_ BitVec {}))\n", name, w_);
    return {s_ ? s_->bv_var(name, w_) : smt::Term{}, name};
  }
  T cst(std::uint64_t v) { return {s_ ? s_->bv_val(w_, v) : smt::Term{}, fmt::format("(_ bv{} {})", v, w_)}; }
  T bval(bool b) { return {s_ ? s_->bool_val(b) : smt::Term{}, b ? "true" : "false"}; }
  T ult(const T& a, const T& b) {
    return {s_ ? smt::ult(a.t, b.t) : smt::Term{}, fmt::format("(bvult {} {})", a.s, b.s)};
  }
  std::string order_text() const {
    std::string t;
    for (int x : order_) t += fmt::format(" {}", ax(x));
    return t;
  }
  std::string shape_text() const { return fmt::format("{}", fmt::join(*shape_, "x")); }

  smt::Solver* s_;
  int L_;
  const std::vector<int>& order_;
  const std::vector<int>* shape_;
  unsigned w_ = 1, mw_ = 2;
  std::vector<T> d_, j_, r_;
  std::map<std::string, T> e_;
  std::string text_;
};

std::int64_t coef_value(const Mono& m, const std::vector<int>* shape) {
  std::int64_t c = m.c;
  for (std::size_t x = 0; x < m.sz.size(); ++x)
    for (int e = 0; e < m.sz[x]; ++e) {
      if (!shape) throw p2v::Error("internal: a size-dependent multiplicity in an all-sizes query");
      c *= (*shape)[x];
    }
  return c;
}

int max_value(const DigitSide& s) {
  int v = 0;
  for (const auto& p : s.pieces)
    for (const auto& c : p.cond) v = std::max(v, c.value);
  return v;
}

struct SideTerms {
  T own, m;
};

SideTerms side_terms(Builder& B, const DigitSide& s, bool swap, const std::vector<int>* shape) {
  auto cond = [&](const Piece& p) {
    std::vector<T> v;
    for (const auto& c : p.cond) {
      const T dev = B.atom(Dat(c.axis), swap);
      T e = B.all({B.exists(c.axis, c.value), B.eq(dev, B.atom(Kat(c.axis, c.value), swap))});
      v.push_back(c.eq ? e : B.neg(e));
    }
    return B.all(v);
  };
  auto ind = [&](const Ind& i) { return B.eq(B.atom(i.first, swap), B.atom(i.second, swap)); };
  std::vector<T> owns;
  std::vector<std::pair<T, T>> vals;
  for (const auto& p : s.pieces) {
    std::vector<T> o{cond(p)};
    for (std::size_t q = 0; q < p.fixed.size(); ++q)
      if (p.fixed[q]) o.push_back(B.eq(B.r()[q], B.atom(*p.fixed[q], swap)));
    for (const auto& g : p.guards) o.push_back(ind(g));
    owns.push_back(B.all(o));
    std::vector<T> terms;
    for (const auto& m : p.m) {
      std::vector<T> c;
      for (const auto& i : m.ind) c.push_back(ind(i));
      terms.push_back(B.ite(B.all(c), B.mval(static_cast<std::uint64_t>(coef_value(m, shape))), B.mval(0)));
    }
    vals.emplace_back(cond(p), B.sum(terms));
  }
  T m = vals.back().second;
  for (int i = static_cast<int>(vals.size()) - 2; i >= 0; --i) m = B.ite(vals[i].first, vals[i].second, m);
  return {B.any(owns), m};
}

std::int64_t mult_bound(const DigitSide& s, const std::vector<int>* shape) {
  std::int64_t b = 1;
  for (const auto& p : s.pieces) {
    std::int64_t t = 0;
    for (const auto& m : p.m) t += std::abs(coef_value(m, shape));
    b = std::max(b, t);
  }
  return b;
}

}  // namespace

DigitRule::~DigitRule() = default;
DigitRule::DigitRule(DigitRule&&) noexcept = default;

DigitRule::DigitRule(const engine::Rule& rule) : rule_(&rule) {
  const int L = rule.arity;
  std::vector<int> order(static_cast<std::size_t>(L));
  std::iota(order.begin(), order.end(), 0);
  do {
    try {
      Evaluator ev(L, order);
      auto l = std::make_unique<DigitSide>(ev.run(rule.lhs));
      auto r = std::make_unique<DigitSide>(ev.run(rule.rhs));
      lhs_ = std::move(l);
      rhs_ = std::move(r);
      order_ = order;
      ok_ = true;
      reason_.clear();
      return;
    } catch (const OutOfFragment& e) {
      if (reason_.empty()) reason_ = e.why;  // the identity order's reason
    }
  } while (std::next_permutation(order.begin(), order.end()));
  reason_ = "outside the per-digit fragment under every radix order: " + reason_;
}

std::string DigitRule::order_text() const {
  std::string t;
  for (int x : order_) t += fmt::format("{}{}", t.empty() ? "" : ",", ax(x));
  return t;
}

std::string DigitRule::forms_text() const {
  if (!ok_) return "";
  std::string t = fmt::format("radix order {}\n", order_text());
  for (const auto* s : {lhs_.get(), rhs_.get()})
    for (const auto& p : s->pieces) t += fmt::format("{} {}\n", s == lhs_.get() ? "lhs" : "rhs", piece_text(p));
  return t;
}

bool DigitRule::size_dependent() const {
  if (!ok_) return false;
  for (const auto* s : {lhs_.get(), rhs_.get()})
    for (const auto& p : s->pieces)
      for (const auto& m : p.m)
        for (int e : m.sz)
          if (e) return true;
  return false;
}

std::string DigitRule::replay_check(const std::vector<int>& shape, const engine::CountState* lhs,
                                    const engine::CountState* rhs) const {
  if (!ok_) return "not in the per-digit fragment";
  const int L = rule_->arity;
  int k = 1;
  for (int n : shape) k *= n;
  std::vector<int> weight(static_cast<std::size_t>(L), 1);  // row digit weights
  for (int q = L - 2; q >= 0; --q)
    weight[static_cast<std::size_t>(q)] = weight[static_cast<std::size_t>(q) + 1] *
                                          shape[static_cast<std::size_t>(order_[static_cast<std::size_t>(q) + 1])];
  std::vector<int> dc(L), jc(L), rd(L);
  std::vector<std::int64_t> expect(static_cast<std::size_t>(k));
  auto coords = [&](int v, std::vector<int>& c) {
    for (int x = L - 1; x >= 0; --x) {
      c[x] = v % shape[x];
      v /= shape[x];
    }
  };
  auto val = [&](const Atom& a) {
    switch (a.k) {
      case AK::D:
        return dc[a.axis];
      case AK::J:
        return jc[a.axis];
      case AK::R:
        return rd[a.idx];
      default:
        return a.idx;
    }
  };
  for (const auto* side : {lhs_.get(), rhs_.get()}) {
    const bool left = side == lhs_.get();
    const engine::CountState* given = left ? lhs : rhs;
    engine::CountState own_replay;
    if (!given) own_replay = engine::run_side(left ? rule_->lhs : rule_->rhs, shape);
    const engine::CountState& cs = given ? *given : own_replay;
    for (int d = 0; d < k; ++d) {
      coords(d, dc);
      const Piece* piece = nullptr;
      for (const auto& p : side->pieces) {
        bool in = true;
        for (const auto& c : p.cond) in = in && ((dc[c.axis] == c.value) == c.eq);
        if (in) {
          piece = &p;
          break;
        }
      }
      if (!piece) return fmt::format("{}: device {} is in no piece", left ? "lhs" : "rhs", d);
      for (int r = 0; r < k; ++r) {
        int rest = r;
        for (int q = 0; q < L; ++q) {
          rd[q] = rest / weight[static_cast<std::size_t>(q)];
          rest %= weight[static_cast<std::size_t>(q)];
        }
        bool own = true;
        for (int q = 0; q < L; ++q)
          if (piece->fixed[static_cast<std::size_t>(q)])
            own = own && rd[q] == val(*piece->fixed[static_cast<std::size_t>(q)]);
        for (const auto& [a, b] : piece->guards) own = own && val(a) == val(b);
        if (own != cs.owns(d, r))
          return fmt::format("{}: device {} row {}: the closed form says {}, the replay {}", left ? "lhs" : "rhs", d, r,
                             own ? "owned" : "not owned", own ? "not owned" : "owned");
        if (!own) continue;
        // Each monomial adds its coefficient on the sources its [j_x = ...] indicators pin (the
        // others only read the device and the row): a product set of sources.
        std::fill(expect.begin(), expect.end(), 0);
        for (const auto& m : piece->m) {
          std::vector<int> pin(static_cast<std::size_t>(L), -1);
          bool on = true;
          for (const auto& [a, b] : m.ind) {
            const bool ja = a.k == AK::J, jb = b.k == AK::J;
            if (!ja && !jb) {
              on = on && val(a) == val(b);
              continue;
            }
            const int x = ja ? a.axis : b.axis, v = ja ? val(b) : val(a);
            if (ja && jb) continue;  // [j_x = j_x] is normalised away
            if (pin[static_cast<std::size_t>(x)] >= 0 && pin[static_cast<std::size_t>(x)] != v) on = false;
            pin[static_cast<std::size_t>(x)] = v;
          }
          if (!on) continue;
          const std::int64_t c = coef_value(m, &shape);
          // Enumerate the sources with the pinned coordinates.
          std::fill(jc.begin(), jc.end(), 0);
          for (int x = 0; x < L; ++x)
            if (pin[static_cast<std::size_t>(x)] >= 0) jc[x] = pin[static_cast<std::size_t>(x)];
          while (true) {
            int j = 0;
            for (int x = 0; x < L; ++x) j = j * shape[x] + jc[x];
            expect[static_cast<std::size_t>(j)] += c;
            int x = L - 1;
            for (; x >= 0; --x) {
              if (pin[static_cast<std::size_t>(x)] >= 0) continue;
              if (++jc[x] < shape[x]) break;
              jc[x] = 0;
            }
            if (x < 0) break;
          }
        }
        for (int j = 0; j < k; ++j)
          if (expect[static_cast<std::size_t>(j)] != cs.mult(d, r, j))
            return fmt::format("{}: device {} row {} source {}: the closed form gives {}, the replay {}",
                               left ? "lhs" : "rhs", d, r, j, expect[static_cast<std::size_t>(j)], cs.mult(d, r, j));
      }
    }
  }
  return "";
}

DigitRule::Query DigitRule::query(smt::Solver* s, const std::vector<int>* shape) const {
  if (!ok_) throw p2v::Error("internal: per-digit query of a rule outside the fragment");
  const int L = rule_->arity;
  if (shape && static_cast<int>(shape->size()) != L) throw p2v::Error("internal: shape arity");
  Builder B(s, L, order_, shape, std::max(max_value(*lhs_), max_value(*rhs_)));
  const auto bound = std::max(mult_bound(*lhs_, shape), mult_bound(*rhs_, shape));
  B.set_mw(std::min<unsigned>(64, bits_for(static_cast<std::uint64_t>(bound)) + 1));
  const bool tr = rule_->compare == engine::RuleCompare::Transpose;
  SideTerms a = side_terms(B, *lhs_, false, shape);
  SideTerms b = side_terms(B, *rhs_, tr, shape);
  if (tr) {
    B.add(B.ne(B.ite(a.own, a.m, B.mval(0)), B.ite(b.own, b.m, B.mval(0))));
  } else {
    B.add(B.any({B.ne(a.own, b.own), B.all({a.own, b.own, B.ne(a.m, b.m)})}));
  }
  B.text() += "(check-sat)\n";
  Query q;
  q.text = B.text();
  for (const auto& x : B.d()) q.d.push_back(x.t);
  for (const auto& x : B.j()) q.j.push_back(x.t);
  for (const auto& x : B.r()) q.r.push_back(x.t);
  return q;
}

std::array<int, 3> DigitRule::witness(smt::Solver& s, const Query& q, const std::vector<int>& shape) const {
  const int L = rule_->arity;
  int d = 0, j = 0, r = 0;
  for (int x = 0; x < L; ++x) {
    d = d * shape[x] + static_cast<int>(s.value_u64(q.d[x]));
    j = j * shape[x] + static_cast<int>(s.value_u64(q.j[x]));
  }
  for (int p = 0; p < L; ++p) r = r * shape[order_[p]] + static_cast<int>(s.value_u64(q.r[p]));
  return {d, r, j};
}

}  // namespace p2v::encodings
