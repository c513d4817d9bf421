// docs/shape.md §3.6: the tuple model M_d of §3.5 (M3 at depth 3, M4 at depth 4) on the instances
// [n ... n] with d levels, computed on equality types instead of on devices, rows and columns.
//
// M_d's state S(x, rho, j) and every step are invariant under the group G of per-level permutations
// fixing 0 (groupings, roots, ReduceScatter's `rho_V = x_V` and Broadcast's `x[V:=0]` are), so S is a
// union of G-orbits of triples (x, rho, j). G is a product over the levels, so an orbit is a product of
// per-level orbits, and a per-level orbit of (x_l, rho_l, j_l) is the equality type of the four items
// (0, x_l, rho_l, j_l): one of the 15 set partitions of 4 items, realizable on [n] iff it has at most n
// blocks. A state is a set of type tuples (15^d bits) and the label.
//
// Every operation is a per-level one: an existential over a new element replacing x, rho or j on one
// level (the types of the 5 items (0, x, rho, j, new) with at most n blocks, projected), a substitution
// (x_l := 0, rho_l := 0), a filter (rho_l = x_l) or a Boolean operation. An existential over a d-tuple
// distributes over the levels because the constraint on the new tuple is a product of per-level ones and
// the set is a union of products. The operations look at partitions of at most 5 items, and at class
// sizes (1, n - 1, n - 2) only through "equals 1" and "equals n", which are the same for every n >= 4;
// so for every n >= 5 the computation is literally the same as for n = 5: one graph for all n >= 5.
//
// Storage: a set of type tuples is a vector of 15^(d-1) words of 15 bits, bit = level 0's type, word
// index = the other levels' types in base 15 (level 1 least significant).
#pragma once
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <unordered_map>
#include <vector>

#include "p2v/engine/instruction.hpp"

namespace shape_types {

using p2v::engine::Collective;

// Items of a per-level type: the constant 0, the device x, the tuple digit rho, the column j.
enum Item : int { kZ = 0, kX = 1, kP = 2, kJ = 3 };

// Relabel the blocks of a partition (given by block ids per item) in first-occurrence order.
template <std::size_t M>
std::array<int, M> normalize(const std::array<int, M>& a) {
  std::array<int, M> r{};
  std::array<int, 8> map;
  map.fill(-1);
  int next = 0;
  for (std::size_t i = 0; i < M; ++i) {
    if (map[a[i]] < 0) map[a[i]] = next++;
    r[i] = map[a[i]];
  }
  return r;
}
template <std::size_t M>
int blocks(const std::array<int, M>& a) {
  return *std::max_element(a.begin(), a.end()) + 1;
}
// Every partition of M items, as restricted growth strings.
template <std::size_t M>
std::vector<std::array<int, M>> partitions() {
  std::vector<std::array<int, M>> out;
  std::array<int, M> a{};
  auto rec = [&](auto&& self, std::size_t i, int mx) -> void {
    if (i == M) {
      out.push_back(a);
      return;
    }
    for (int v = 0; v <= mx + 1; ++v) {
      a[i] = v;
      self(self, i + 1, std::max(mx, v));
    }
  };
  a[0] = 0;
  rec(rec, 1, 0);
  return out;
}

using Rel = std::array<std::uint16_t, 15>;  // rel[s]: the types related to type s
using Fn = std::array<int, 15>;

// The 15 per-level types and the per-level operations on an instance with cardinality n.
struct Level {
  int n;
  std::vector<std::array<int, 4>> part;  // 15 partitions of (0, x, rho, j)
  std::uint16_t real = 0;                // the realizable ones: at most n blocks
  explicit Level(int n_) : n(n_), part(partitions<4>()) {
    for (int s = 0; s < 15; ++s)
      if (blocks(part[s]) <= n) real |= static_cast<std::uint16_t>(1u << s);
  }
  int index(const std::array<int, 4>& a) const {
    const auto b = normalize(a);
    return static_cast<int>(std::find(part.begin(), part.end(), b) - part.begin());
  }
  enum Cons { kAny, kNeq };
  // Replace item `slot` by a new element (any value, or one different from the old value): from the
  // type of (0, x, rho, j) to the types the new quadruple can have.
  Rel ext(int slot, Cons c) const {
    Rel r{};
    for (const auto& p : partitions<5>()) {
      if (blocks(p) > n) continue;
      if (c == kNeq && p[4] == p[slot]) continue;
      std::array<int, 4> from{p[0], p[1], p[2], p[3]}, to = from;
      to[slot] = p[4];
      r[index(from)] |= static_cast<std::uint16_t>(1u << index(to));
    }
    return r;
  }
  // Item `slot` takes the value of item `src`.
  Fn subst(int slot, int src) const {
    Fn f{};
    for (int s = 0; s < 15; ++s) {
      auto a = part[s];
      a[slot] = a[src];
      f[s] = index(a);
    }
    return f;
  }
  Fn swap(int i, int k) const {
    Fn f{};
    for (int s = 0; s < 15; ++s) {
      auto a = part[s];
      std::swap(a[i], a[k]);
      f[s] = index(a);
    }
    return f;
  }
  std::uint16_t pred(int i, int k, bool equal) const {
    std::uint16_t m = 0;
    for (int s = 0; s < 15; ++s)
      if ((part[s][i] == part[s][k]) == equal) m |= static_cast<std::uint16_t>(1u << s);
    return m & real;
  }
};

using TSet = std::vector<std::uint16_t>;
struct TSetHash {
  std::size_t operator()(const TSet& t) const {
    std::size_t h = 1469598103934665603ull;
    for (auto x : t) h = (h ^ x) * 1099511628211ull;
    return h;
  }
};

// Sets of type tuples over d levels.
struct Space {
  int d;
  Level L;
  std::size_t words = 1;
  std::vector<std::size_t> stride;  // stride[l] for l >= 1: 15^(l-1)
  TSet full;                        // every realizable type tuple
  Space(int d_, int n) : d(d_), L(n), stride(d_, 0) {
    for (int l = 1; l < d; ++l) {
      stride[l] = words;
      words *= 15;
    }
    full.assign(words, L.real);
    for (int l = 1; l < d; ++l)
      for (std::size_t w = 0; w < words; ++w)
        if (!((L.real >> digit(w, l)) & 1u)) full[w] = 0;
  }
  int digit(std::size_t w, int l) const { return static_cast<int>((w / stride[l]) % 15); }
  TSet exists(const TSet& in, int l, const Rel& rel) const {
    TSet out(words, 0);
    if (l == 0) {
      for (std::size_t w = 0; w < words; ++w)
        if (in[w])
          for (int s = 0; s < 15; ++s)
            if (rel[s] & in[w]) out[w] |= static_cast<std::uint16_t>(1u << s);
    } else {
      const std::size_t st = stride[l];
      for (std::size_t w = 0; w < words; ++w) {
        const int s = digit(w, l);
        const std::size_t base = w - static_cast<std::size_t>(s) * st;
        std::uint16_t acc = 0;
        for (unsigned r = rel[s]; r; r &= r - 1) acc |= in[base + static_cast<std::size_t>(std::countr_zero(r)) * st];
        out[w] = acc;
      }
    }
    for (std::size_t w = 0; w < words; ++w) out[w] &= full[w];
    return out;
  }
  TSet exists(TSet in, unsigned levels, const Rel& rel) const {
    for (int l = 0; l < d; ++l)
      if ((levels >> l) & 1u) in = exists(in, l, rel);
    return in;
  }
  // out(s) = in(f(s)) on level l.
  TSet pull(const TSet& in, int l, const Fn& f) const {
    TSet out(words, 0);
    if (l == 0) {
      for (std::size_t w = 0; w < words; ++w)
        for (int s = 0; s < 15; ++s)
          if ((in[w] >> f[s]) & 1u) out[w] |= static_cast<std::uint16_t>(1u << s);
    } else {
      const std::size_t st = stride[l];
      for (std::size_t w = 0; w < words; ++w) {
        const int s = digit(w, l);
        out[w] = in[w - static_cast<std::size_t>(s) * st + static_cast<std::size_t>(f[s]) * st];
      }
    }
    for (std::size_t w = 0; w < words; ++w) out[w] &= full[w];
    return out;
  }
  TSet pull(TSet in, unsigned levels, const Fn& f) const {
    for (int l = 0; l < d; ++l)
      if ((levels >> l) & 1u) in = pull(in, l, f);
    return in;
  }
  // Keep the type tuples whose type on level l is in mask.
  TSet filter(TSet in, int l, std::uint16_t mask) const {
    if (l == 0) {
      for (auto& w : in) w &= mask;
    } else {
      for (std::size_t w = 0; w < words; ++w)
        if (!((mask >> digit(w, l)) & 1u)) in[w] = 0;
    }
    return in;
  }
  TSet filter(TSet in, unsigned levels, std::uint16_t mask) const {
    for (int l = 0; l < d; ++l)
      if ((levels >> l) & 1u) in = filter(std::move(in), l, mask);
    return in;
  }
  bool get(const TSet& s, const std::vector<int>& types) const {
    std::size_t w = 0;
    for (int l = 1; l < d; ++l) w += types[l] * stride[l];
    return (s[w] >> types[0]) & 1u;
  }
};

inline TSet operator&(TSet a, const TSet& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] &= b[i];
  return a;
}
inline TSet operator|(TSet a, const TSet& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] |= b[i];
  return a;
}
inline TSet minus(TSet a, const TSet& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] &= static_cast<std::uint16_t>(~b[i]);
  return a;
}
inline bool empty(const TSet& a) {
  return std::all_of(a.begin(), a.end(), [](std::uint16_t w) { return w == 0; });
}

struct TState {
  TSet s;
  int label = -1;  // -1: none; else an index into TypeModel::orders
  bool operator==(const TState&) const = default;
};
struct TStateHash {
  std::size_t operator()(const TState& t) const { return TSetHash{}(t.s) * 31 + static_cast<std::size_t>(t.label + 1); }
};

enum class Out { Invalid, Abort, Valid };

// One instruction as M_d sees it: the collective, the levels V its groups vary (bit l: level l, outer
// first) and the Master flag (Master: the one group of the devices that are 0 outside V).
struct Ins {
  Collective col;
  unsigned V;
  bool master;
};

struct TypeModel {
  Space sp;
  int d, n;
  std::vector<Ins> ins;
  std::vector<std::vector<int>> orders;  // every order of the levels, lexicographic; 0 = level order
  Rel anyX, neqX, anyP, anyJ;
  Fn x0, p0, pj, swap_pj;
  std::uint16_t eqPX, eqPJ, neqPJ, eqXZ;
  unsigned all_levels;
  std::vector<TSet> mems;  // per instruction, its members

  TypeModel(int d_, int n_, std::vector<Ins> ins_) : sp(d_, n_), d(d_), n(n_), ins(std::move(ins_)) {
    std::vector<int> o(d);
    for (int l = 0; l < d; ++l) o[l] = l;
    do orders.push_back(o);
    while (std::next_permutation(o.begin(), o.end()));
    const Level& L = sp.L;
    anyX = L.ext(kX, Level::kAny);
    neqX = L.ext(kX, Level::kNeq);
    anyP = L.ext(kP, Level::kAny);
    anyJ = L.ext(kJ, Level::kAny);
    x0 = L.subst(kX, kZ);
    p0 = L.subst(kP, kZ);
    pj = L.subst(kP, kJ);
    swap_pj = L.swap(kP, kJ);
    eqPX = L.pred(kP, kX, true);
    eqPJ = L.pred(kP, kJ, true);
    neqPJ = L.pred(kP, kJ, false);
    eqXZ = L.pred(kX, kZ, true);
    all_levels = (1u << d) - 1;
    for (const auto& in : ins) mems.push_back(members(in));
  }

  TState initial() const { return {sp.filter(sp.full, all_levels, sp.L.pred(kJ, kX, true)), -1}; }
  bool goal(const TState& s) const { return s.s == sp.full; }

  // The type of (0, x_l, rho_l, j_l) from block ids.
  int ty(int x, int p, int j) const { return sp.L.index({0, x, p, j}); }
  // A set that depends on x alone, read at x's pattern (bit l: x_l != 0).
  bool at_x(const TSet& t, unsigned p) const {
    std::vector<int> tt(d);
    for (int l = 0; l < d; ++l) tt[l] = (p >> l) & 1u ? ty(1, 1, 1) : ty(0, 0, 0);
    return sp.get(t, tt);
  }

  // Per x-pattern facts about the rows R_x (R depends on x and rho): present, digit-fixed, free levels.
  // On a level where x_l = 0 the digit rho_l is 0 (one value) or not (n - 1 values); where x_l != 0 it
  // is 0, x_l (one value each) or another (n - 2 values, none for n = 2: that type is not realizable).
  struct XFacts {
    std::vector<char> present, fixed;
    std::vector<unsigned> free;
  };
  XFacts xfacts(const TSet& R) const {
    XFacts f;
    const unsigned np = 1u << d;
    f.present.assign(np, 0);
    f.fixed.assign(np, 1);
    f.free.assign(np, 0);
    for (unsigned p = 0; p < np; ++p) {
      // Classes on level l: 0 = {0}, 1 = {x_l} (x_l != 0) or the non-zero values (x_l = 0), 2 = others.
      std::vector<int> ncls(d), tt(d);
      std::vector<std::array<int, 3>> cls_ty(d);
      std::vector<std::array<int, 3>> size(d);
      for (int l = 0; l < d; ++l) {
        if ((p >> l) & 1u) {
          ncls[l] = 3;
          cls_ty[l] = {ty(1, 0, 0), ty(1, 1, 0), ty(1, 2, 0)};
          size[l] = {1, 1, n - 2};
        } else {
          ncls[l] = 2;
          cls_ty[l] = {ty(0, 0, 0), ty(0, 1, 0), 0};
          size[l] = {1, n - 1, 0};
        }
      }
      // Enumerate class combinations.
      std::vector<int> c(d, 0);
      std::vector<unsigned> proj(d, 0);
      int held = 0, combos = 0;
      for (;;) {
        bool real = true;
        for (int l = 0; l < d; ++l) {
          tt[l] = cls_ty[l][c[l]];
          real = real && size[l][c[l]] > 0;
        }
        if (real && sp.get(R, tt)) {
          ++held;
          for (int l = 0; l < d; ++l) proj[l] |= 1u << c[l];
        }
        ++combos;
        int l = 0;
        while (l < d && ++c[l] == ncls[l]) c[l++] = 0;
        if (l == d) break;
      }
      if (!held) continue;
      f.present[p] = 1;
      int prod = 1;
      for (int l = 0; l < d; ++l) {
        int cnt = 0;
        for (int q = 0; q < ncls[l]; ++q)
          if ((proj[l] >> q) & 1u) cnt += size[l][q];
        if (cnt == n)
          f.free[p] |= 1u << l;
        else if (cnt != 1)
          f.fixed[p] = 0;
        prod *= std::popcount(proj[l]);
      }
      if (prod != held) f.fixed[p] = 0;  // not the product of its projections (class sets)
    }
    return f;
  }

  std::vector<int> needed(const std::vector<int>& o, unsigned F, unsigned V) const {
    std::vector<int> pos, seq;
    for (int i = 0; i < d; ++i)
      if ((F >> o[i]) & 1u) pos.push_back(i);
    for (int l = 0; l < d; ++l)
      if ((V >> l) & 1u) seq.push_back(l);
    for (int i : pos)
      if (!((V >> o[i]) & 1u)) seq.push_back(o[i]);
    auto r = o;
    for (std::size_t q = 0; q < pos.size(); ++q) r[pos[q]] = seq[q];
    return r;
  }
  int order_index(const std::vector<int>& o) const {
    return static_cast<int>(std::find(orders.begin(), orders.end(), o) - orders.begin());
  }

  TSet rows(const TSet& S) const { return sp.exists(S, all_levels, anyJ); }
  bool unconstrained(const TSet& S, int l) const { return sp.pull(S, l, p0) == S; }

  // P4 (docs/shape.md §3.2, Lemma 6) at some level l: for some v != 0 and some column j, devices 0 and
  // 0[l:=v] hold tuple 0 with column j; and some column j* is held by no device x with x_l = 0.
  bool p4(const TSet& S) const {
    for (int l = 0; l < d; ++l) {
      bool meet = false;
      // j on level l: 0, v, or another value (needs n >= 3); on the others 0 or not.
      for (int jl = 0; jl < 3 && !meet; ++jl) {
        if (jl == 2 && n < 3) continue;
        for (unsigned q = 0; q < (1u << d) && !meet; ++q) {
          if ((q >> l) & 1u) continue;
          std::vector<int> t0(d), te(d);
          for (int m = 0; m < d; ++m) t0[m] = te[m] = ty(0, 0, (q >> m) & 1u ? 1 : 0);
          t0[l] = ty(0, 0, jl == 0 ? 0 : 1);
          te[l] = ty(1, 0, jl == 0 ? 0 : jl == 1 ? 1 : 2);
          meet = sp.get(S, t0) && sp.get(S, te);
        }
      }
      if (!meet) continue;
      const TSet H = sp.exists(sp.exists(sp.filter(S, l, eqXZ), all_levels, anyX), all_levels, anyP);
      for (unsigned q = 0; q < (1u << d); ++q) {
        std::vector<int> t(d);
        for (int m = 0; m < d; ++m) t[m] = ty(0, 0, (q >> m) & 1u ? 1 : 0);
        if (!sp.get(H, t)) return true;
      }
    }
    return false;
  }

  // The members of instruction i's groups: every device, or (Master) the devices that are 0 outside V.
  TSet members(const Ins& in) const { return in.master ? sp.filter(sp.full, all_levels & ~in.V, eqXZ) : sp.full; }
  // For T(x, rho, j): U(x, .) = some member of x's group has T (exists y agreeing with x outside V), and
  // Q(x, .) = some *other* member has T (y differs from x on some level of V). With V's levels
  // l_1 < ... < l_m, "differs" is the disjoint union over i of "agrees on l_1..l_{i-1}, differs on l_i,
  // anything on l_{i+1}..l_m"; the existentials over different levels commute.
  void group_union(const TSet& T, unsigned V, TSet& U, TSet& Q) const {
    std::vector<int> lv;
    for (int l = 0; l < d; ++l)
      if ((V >> l) & 1u) lv.push_back(l);
    TSet after = T;  // any on the levels after the current one
    Q.assign(sp.words, 0);
    for (int i = static_cast<int>(lv.size()) - 1; i >= 0; --i) {
      Q = Q | sp.exists(after, lv[i], neqX);
      after = sp.exists(after, lv[i], anyX);
    }
    U = std::move(after);
  }

  // What the steps from one state share, per varied level set V (computed on first use).
  struct Cache {
    const TSet& S;
    TSet R;
    XFacts xf;
    std::vector<char> has_s, has_r;
    std::vector<TSet> US, QS, QR, Sroot, Rroot;
  };
  Cache cache(const TSet& S) const {
    const std::size_t nv = std::size_t{1} << d;
    Cache c{S,
            rows(S),
            {},
            std::vector<char>(nv, 0),
            std::vector<char>(nv, 0),
            std::vector<TSet>(nv),
            std::vector<TSet>(nv),
            std::vector<TSet>(nv),
            std::vector<TSet>(nv),
            std::vector<TSet>(nv)};
    c.xf = xfacts(c.R);
    return c;
  }
  void need_s(Cache& c, unsigned V) const {
    if (c.has_s[V]) return;
    group_union(c.S, V, c.US[V], c.QS[V]);
    c.Sroot[V] = sp.pull(c.S, V, x0);
    c.has_s[V] = 1;
  }
  void need_r(Cache& c, unsigned V) const {
    if (c.has_r[V]) return;
    TSet U;
    group_union(c.R, V, U, c.QR[V]);
    c.Rroot[V] = sp.pull(c.R, V, x0);
    c.has_r[V] = 1;
  }

  // The step of instruction i from state s (whose rows' facts are xf), as M_d (docs/shape.md §3.5).
  Out step(const TState& s, Cache& c, int i, TState& out) const {
    const Ins& in = ins[i];
    const unsigned V = in.V, np = 1u << d;
    auto member = [&](unsigned p) { return !in.master || (p & ~V) == 0; };
    auto root = [&](unsigned p) { return p & ~V; };
    const TSet& mem = mems[i];
    const TSet& R = c.R;
    const XFacts& xf = c.xf;
    const TSet& S = s.s;
    const std::vector<int>& order = orders[s.label < 0 ? 0 : s.label];
    std::vector<int> want = order;
    bool conflict = false;
    switch (in.col) {
      case Collective::AllReduce:
      case Collective::ReduceScatter:
      case Collective::Reduce: {
        for (unsigned p = 0; p < np; ++p)
          if (member(p) && !xf.present[root(p)]) return Out::Invalid;
        need_r(c, V);
        if (!((R & mem) == (c.Rroot[V] & mem))) return Out::Invalid;  // members' rows equal
        need_s(c, V);
        if (!empty(S & mem & c.QS[V])) return Out::Invalid;  // disjoint column sets
        if (in.col == Collective::ReduceScatter) {
          bool first = true;
          for (unsigned z = 0; z < np; ++z) {
            if ((z & V) || !member(z)) continue;  // z: a group's root
            const unsigned F = xf.free[z];
            if (std::popcount(V) > std::popcount(F)) return Out::Invalid;
            if (V & ~F) {
              conflict = true;
              continue;
            }
            const auto w = needed(order, F, V);
            if (first)
              want = w;
            else if (w != want)
              conflict = true;
            first = false;
          }
        }
        break;
      }
      case Collective::AllGather: {
        for (unsigned p = 0; p < np; ++p)
          if (member(p) && (!xf.present[p] || std::popcount(xf.free[p]) != std::popcount(xf.free[root(p)])))
            return Out::Invalid;
        need_r(c, V);
        if (!empty(R & mem & c.QR[V])) return Out::Invalid;  // disjoint rows
        break;
      }
      case Collective::Broadcast: {
        need_s(c, V);
        const TSet& Sroot = c.Sroot[V];
        if (!empty(minus(S & mem, Sroot))) return Out::Invalid;  // every member's S inside the root's
        const TSet D = sp.exists(sp.exists(minus(Sroot & mem, S), all_levels, anyP), all_levels, anyJ);
        for (unsigned z = 0; z < np; ++z) {
          if ((z & V) || !member(z)) continue;
          bool strict = false;
          for (unsigned p = 0; p < np && !strict; ++p) strict = root(p) == z && at_x(D, p);
          if (!strict) return Out::Invalid;
        }
        break;
      }
    }
    if (conflict) return Out::Abort;
    int label = s.label;
    if (in.col == Collective::ReduceScatter) {
      if (want != order)
        for (int q = 0; q < d; ++q)
          if (want[q] != order[q] && s.label >= 0 && !unconstrained(S, order[q])) return Out::Abort;
      label = order_index(want);
    }
    need_s(c, V);
    TSet inside;
    switch (in.col) {
      case Collective::AllReduce:
      case Collective::AllGather:
        inside = c.US[V] & mem;
        break;
      case Collective::Reduce:
        inside = sp.filter(c.US[V], V, eqXZ) & mem;
        break;
      case Collective::ReduceScatter:
        inside = sp.filter(c.US[V], V, eqPX) & mem;
        break;
      case Collective::Broadcast:
        inside = c.Sroot[V] & mem;
        break;
    }
    out.s = inside | minus(S, mem);
    out.label = label;
    return Out::Valid;
  }
  // After a step: every R_x digit-fixed (else M_d aborts), and the label none iff every device is
  // row-symmetric (abort if not but the label is none).
  Out finish(TState& t) const {
    const XFacts f = xfacts(rows(t.s));
    for (unsigned p = 0; p < (1u << d); ++p)
      if (!f.fixed[p]) return Out::Abort;
    const bool sym = sp.exists(t.s, all_levels, anyP) == t.s;
    if (sym) t.label = -1;
    if (!sym && t.label < 0) return Out::Abort;
    return Out::Valid;
  }
};

struct TGraph {
  std::vector<TState> states;
  std::vector<std::vector<int>> succ;  // -1 invalid, -2 abort; a state with P4 has no successors
  std::vector<char> p4;
  int aborts = 0, aborts_without_p4 = 0, goal = -1;
  std::size_t labelled() const {
    return static_cast<std::size_t>(
        std::count_if(states.begin(), states.end(), [](const TState& s) { return s.label >= 0; }));
  }
  std::size_t with_p4() const { return static_cast<std::size_t>(std::count(p4.begin(), p4.end(), 1)); }
};

// M_d's reachable graph. `stop`: states with P4 get no successors (M_d as defined).
// `progress`: a line on stderr every 2,000 states (the on-request depth-4 runs).
inline TGraph explore(const TypeModel& M, bool stop = true, bool progress = false) {
  TGraph G;
  // The states by hash (indices into G.states: one copy of each state).
  std::unordered_multimap<std::size_t, int> id;
  auto find = [&](const TState& t) {
    auto [b, e] = id.equal_range(TStateHash{}(t));
    for (; b != e; ++b)
      if (G.states[b->second] == t) return b->second;
    return -1;
  };
  G.states.push_back(M.initial());
  id.emplace(TStateHash{}(G.states[0]), 0);
  for (std::size_t i = 0; i < G.states.size(); ++i) {
    std::vector<int> sc(M.ins.size(), -1);
    const TState cur = G.states[i];
    auto c = M.cache(cur.s);
    G.p4.push_back(M.p4(cur.s));
    for (std::size_t t = 0; t < M.ins.size() && !(stop && G.p4[i]); ++t) {
      TState next;
      Out o = M.step(cur, c, static_cast<int>(t), next);
      if (o == Out::Valid) {
        // A set already in the graph passed finish(): row-symmetric iff stored without a label.
        const int l = next.label;
        next.label = -1;
        if (find(next) < 0) {
          next.label = l;
          if (l < 0 || find(next) < 0) o = M.finish(next);
        }
      }
      if (o == Out::Invalid) continue;
      if (o == Out::Abort) {
        sc[t] = -2;
        ++G.aborts;
        G.aborts_without_p4 += !G.p4[i];
        continue;
      }
      int at = find(next);
      if (at < 0) {
        at = static_cast<int>(G.states.size());
        id.emplace(TStateHash{}(next), at);
        G.states.push_back(std::move(next));
      }
      sc[t] = at;
    }
    G.succ.push_back(std::move(sc));
    if (M.goal(G.states[i])) G.goal = static_cast<int>(i);
    if (progress && (i + 1) % 2000 == 0)
      std::fprintf(stderr, "  M%d n=%d: %zu of %zu states explored\n", M.d, M.n, i + 1, G.states.size());
  }
  return G;
}

}  // namespace shape_types
