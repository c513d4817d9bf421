#include "p2v/encodings/symbolic.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>

#include "closure.hpp"
#include "p2v/engine/error.hpp"

namespace p2v::encodings {

using engine::Collective;
using smt::Term;

namespace {

int log2_exact(int k) {  // n with k = 2^n, or -1
  int n = 0;
  while ((1 << n) < k) ++n;
  return (1 << n) == k ? n : -1;
}

int varying_bits(const std::vector<int>& g) {  // the bits in which the members differ from the first
  int v = 0;
  for (int d : g) v |= d ^ g[0];
  return v;
}

bool bit(int x, int b) { return ((x >> b) & 1) != 0; }

}  // namespace

EncodingChoice parse_encoding_choice(const std::string& s) {
  if (s == "auto") return EncodingChoice::Auto;
  if (s == "concrete") return EncodingChoice::Concrete;
  if (s == "per-level" || s == "symbolic") return EncodingChoice::PerLevel;
  throw Error("unknown encoding '" + s + "': use auto, concrete or symbolic");
}

const char* to_string(EncodingChoice e) {
  switch (e) {
    case EncodingChoice::Auto:
      return "auto";
    case EncodingChoice::Concrete:
      return "concrete";
    case EncodingChoice::PerLevel:
      return "symbolic";
  }
  return "?";
}

std::string per_level_unsupported(const SearchProblem& p) {
  const int n = log2_exact(p.k);
  if (n < 0) return fmt::format("{} devices is not a power of two", p.k);
  if (p.goal_groups.size() != 1 || static_cast<int>(p.goal_groups[0].size()) != p.k)
    return "the goal is not one group of every device (hierarchy (d))";
  for (const auto& in : p.instructions) {
    int members = 0;
    for (const auto& g : in.groups) {
      if (g.empty()) return "an instruction has an empty group";
      const int v = varying_bits(g);
      if (v != varying_bits(in.groups[0])) return "an instruction's groups vary different levels";
      if (static_cast<int>(g.size()) != (1 << __builtin_popcount(static_cast<unsigned>(v))))
        return "a group is not every combination of the levels it varies";
      for (std::size_t i = 0; i + 1 < g.size(); ++i)
        if (g[i] >= g[i + 1] || (g[i] & ~v) != (g[0] & ~v)) return "a group's members are not ascending";
      if ((g[0] & v) != 0) return "a group's first member is not its root";
      members += static_cast<int>(g.size());
    }
    if (members != p.k && in.collective != Collective::AllReduce)
      return "a Master grouping carries another collective than AllReduce (--master-collectives all)";
  }
  return "";
}

std::optional<PerLevelState> per_level_state(const engine::StateSet& s) {
  const int k = s.k(), n = log2_exact(k);
  if (n < 0) return std::nullopt;
  PerLevelState out;
  out.n = n;
  out.fixed.assign(static_cast<std::size_t>(n), -1);
  out.cols.assign(static_cast<std::size_t>(k), std::vector<bool>(static_cast<std::size_t>(k), false));
  std::vector<int> present;
  for (int d = 0; d < k; ++d) {
    const auto rows = s.rows(d);
    if (rows.empty()) continue;
    present.push_back(d);
    const auto cols = s.columns(d, rows[0]);
    for (int r : rows)
      if (s.columns(d, r) != cols) return std::nullopt;  // not row-uniform
    for (int j : cols) out.cols[static_cast<std::size_t>(d)][static_cast<std::size_t>(j)] = true;
  }
  if (present.empty()) return std::nullopt;
  // Row bit rb is fixed to level b when every held row's bit rb is the holder's bit b.
  for (int rb = 0; rb < n; ++rb)
    for (int b = n - 1; b >= 0; --b) {
      bool all = true;
      for (int d : present)
        for (int r : s.rows(d)) all = all && bit(r, rb) == bit(d, b);
      if (!all) continue;
      if (out.fixed[static_cast<std::size_t>(b)] >= 0) return std::nullopt;  // one level, two row bits
      out.fixed[static_cast<std::size_t>(b)] = rb;
      break;
    }
  if (!(concrete_state(out) == s)) return std::nullopt;  // the held rows are not exactly those
  return out;
}

std::optional<std::vector<int>> summed_levels(const PerLevelState& s) {
  const int k = 1 << s.n;
  std::vector<int> out(static_cast<std::size_t>(k), -1);
  for (int d = 0; d < k; ++d) {
    const auto& c = s.cols.at(static_cast<std::size_t>(d));
    int count = 0, meet = k - 1, join = 0;  // the columns' bitwise and / or
    for (int j = 0; j < k; ++j)
      if (c[static_cast<std::size_t>(j)]) {
        ++count;
        meet &= j;
        join |= j;
      }
    if (count == 0) continue;
    // The columns lie in the interval [meet, join] of the bit lattice, which has 2^|S| elements for
    // S = meet ^ join: they are all of it iff there are that many, and it is d's cylinder over S iff
    // d agrees with meet outside S.
    const int summed = meet ^ join;
    if (count != (1 << __builtin_popcount(static_cast<unsigned>(summed))) || ((d ^ meet) & ~summed) != 0)
      return std::nullopt;
    out[static_cast<std::size_t>(d)] = summed;
  }
  return out;
}

engine::StateSet concrete_state(const PerLevelState& s) {
  const int k = 1 << s.n;
  engine::StateSet out(k);
  for (int d = 0; d < k; ++d)
    for (int r = 0; r < k; ++r) {
      bool held = true;
      for (int b = 0; b < s.n; ++b)
        if (s.fixed[static_cast<std::size_t>(b)] >= 0 && bit(r, s.fixed[static_cast<std::size_t>(b)]) != bit(d, b))
          held = false;
      if (!held) continue;
      for (int j = 0; j < k; ++j)
        if (s.cols[static_cast<std::size_t>(d)][static_cast<std::size_t>(j)]) out.set(d, r, j);
    }
  return out;
}

namespace {

unsigned bits_for(std::size_t n) {  // bits to represent 0..n
  unsigned b = 1;
  while ((std::size_t{1} << b) <= n) ++b;
  return b;
}

// The per-level encoding, step by step on one solver. Per step t: per level b a row-bit mask
// fix[t][b] (n bits, at most one set: the row bit level b's digit is fixed to), per device a
// column set col[t][x] (k bits; 0 = the device holds nothing). A device holds the rows whose fixed
// bits equal its level bits, each with col[t][x]. Step 0 is the initial state's constants, or
// variables (free_initial, for one-step queries from a given state).
class PerLevelEncoder {
 public:
  PerLevelEncoder(smt::Solver& s, const SearchProblem& p, bool free_initial, bool summed = false)
      : s_(s), p_(p), k_(static_cast<unsigned>(p.k)), summed_(summed) {
    n_ = static_cast<unsigned>(log2_exact(p.k));
    tt_ = s_.bool_val(true);
    ff_ = s_.bool_val(false);
    zk_ = s_.bv_val(k_, 0);
    onesk_ = s_.bv_val(k_, std::vector<bool>(k_, true));
    zn_ = s_.bv_val(n_, 0);
    csel_ = bits_for(p.instructions.size() - 1);
    onesn_ = s_.bv_val(n_, std::vector<bool>(n_, true));
    fix_.emplace_back();
    col_.emplace_back();
    pres_.emplace_back();
    sum_.emplace_back();
    for (unsigned b = 0; b < n_; ++b) fix_[0].push_back(free_initial ? s_.bv_var(fmt::format("fix_0_{}", b), n_) : zn_);
    if (summed_) {
      for (unsigned x = 0; x < k_; ++x) {
        pres_[0].push_back(free_initial ? s_.bool_var(fmt::format("present_0_{}", x)) : tt_);
        sum_[0].push_back(free_initial ? s_.bv_var(fmt::format("summed_0_{}", x), n_) : zn_);
      }
      return;
    }
    for (unsigned x = 0; x < k_; ++x) {
      std::vector<bool> c(k_, false);
      c[x] = true;
      col_[0].push_back(free_initial ? s_.bv_var(fmt::format("col_0_{}", x), k_) : s_.bv_val(k_, c));
    }
  }

  int steps() const { return static_cast<int>(fix_.size()) - 1; }

  void add_step() {
    const int t = steps() + 1;
    fix_.emplace_back();
    col_.emplace_back();
    pres_.emplace_back();
    sum_.emplace_back();
    for (unsigned b = 0; b < n_; ++b) fix_[t].push_back(s_.bv_var(fmt::format("fix_{}_{}", t, b), n_));
    for (unsigned x = 0; x < k_; ++x) {
      if (summed_) {
        pres_[t].push_back(s_.bool_var(fmt::format("present_{}_{}", t, x)));
        sum_[t].push_back(s_.bv_var(fmt::format("summed_{}_{}", t, x), n_));
      } else {
        col_[t].push_back(s_.bv_var(fmt::format("col_{}_{}", t, x), k_));
      }
    }
    const std::size_t ni = p_.instructions.size();
    choice_.push_back(s_.bv_var(fmt::format("choice_{}", t), csel_));
    if ((std::size_t{1} << csel_) != ni) constrain(smt::ult(choice_.back(), s_.bv_val(csel_, ni)));
    sel_.emplace_back();
    for (std::size_t i = 0; i < ni; ++i) sel_.back().push_back(choice_.back() == s_.bv_val(csel_, i));
    // One transition constraint per instruction, or per grouping (kFactored: the collectives on the
    // same groups share it). Four-level shape, z3 alone (bench_certify, CPU): per grouping 18.2 s,
    // per instruction 33.8 s.
    constexpr bool kFactored = true;
    std::vector<std::vector<std::size_t>> by_grouping;
    for (std::size_t i = 0; i < ni; ++i) {
      auto it = std::find_if(by_grouping.begin(), by_grouping.end(), [&](const auto& e) {
        return kFactored && p_.instructions[e[0]].groups == p_.instructions[i].groups;
      });
      if (it == by_grouping.end())
        by_grouping.push_back({i});
      else
        it->push_back(i);
    }
    for (const auto& ins : by_grouping) grouping_step(ins, t);
  }

  Term state_is(int t, const PerLevelState& st) { return smt::all_of(state_parts(t, st), tt_); }
  std::vector<Term> state_parts(int t, const PerLevelState& st) {
    std::vector<Term> c;
    for (unsigned b = 0; b < n_; ++b) {
      const int rb = st.fixed[b];
      c.push_back(fix_[t][b] == s_.bv_val(n_, rb < 0 ? 0 : std::uint64_t{1} << rb));
    }
    if (summed_) {
      const auto summed = summed_levels(st);
      if (!summed) throw std::logic_error("per-level encoding: a state without summed levels");
      for (unsigned x = 0; x < k_; ++x) {
        const int sx = (*summed)[x];
        c.push_back(sx < 0 ? !pres_[t][x] : pres_[t][x]);
        c.push_back(sum_[t][x] == s_.bv_val(n_, static_cast<std::uint64_t>(std::max(sx, 0))));
      }
      return c;
    }
    for (unsigned x = 0; x < k_; ++x) c.push_back(col_[t][x] == s_.bv_val(k_, st.cols[x]));
    return c;
  }
  Term goal(int t) {
    std::vector<Term> c;
    for (unsigned b = 0; b < n_; ++b) c.push_back(fix_[t][b] == zn_);
    for (unsigned x = 0; x < k_; ++x) {
      if (summed_) {
        c.push_back(pres_[t][x]);
        c.push_back(sum_[t][x] == onesn_);
      } else {
        c.push_back(col_[t][x] == onesk_);
      }
    }
    return smt::all_of(c, tt_);
  }
  Term chosen(int t, int i) const { return sel_.at(static_cast<std::size_t>(t - 1)).at(static_cast<std::size_t>(i)); }
  Term chosen_var(int t) const { return choice_.at(static_cast<std::size_t>(t - 1)); }
  engine::Program model_program(int n) {
    engine::Program prog;
    for (int t = 1; t <= n; ++t) prog.push_back(static_cast<int>(s_.value_u64(chosen_var(t))));
    for (int i : prog)
      if (i < 0 || i >= static_cast<int>(p_.instructions.size()))
        throw std::runtime_error("per-level encoding: the model chose no valid instruction");
    return prog;
  }
  Term block(const engine::Program& prog) const {
    return detail::not_program(
        prog, [this](int t, int i) { return chosen(t, i); }, ff_);
  }
  Term tt() const { return tt_; }

  // Where the step constraints go: asserted (the default), or collected into `sink` (the step
  // relation as a term, for queries that negate it).
  void collect_into(std::vector<Term>* sink) { sink_ = sink; }

 private:
  void constrain(const Term& c) {
    if (sink_)
      sink_->push_back(c);
    else
      s_.add(c);
  }

  Term fixed(int t, unsigned b) { return fix_[t][b] != zn_; }  // level b's digit is fixed to a row bit
  Term present(int t, unsigned x) { return col_[t][x] != zk_; }

  // The instructions `ins` on one grouping, from step t - 1 to t: "chosen => pre" per
  // instruction, and "one of them chosen => the state at t is the post-state", where a member's
  // column set becomes the union U of its group's (AllReduce, ReduceScatter, Reduce at the root),
  // empty (Reduce elsewhere) or its root's (AllGather, Broadcast), and the fixed levels change
  // with ReduceScatter (the group's levels get the highest free row bits) and AllGather (they are
  // freed).
  void grouping_step(const std::vector<std::size_t>& ins, int t) {
    const int f = t - 1;
    const auto& groups = p_.instructions[ins[0]].groups;
    const auto& col = col_[f];
    const int V = varying_bits(groups.at(0));
    std::vector<unsigned> vary;  // the levels the groups vary, outermost (highest bit) first
    for (int b = static_cast<int>(n_) - 1; b >= 0; --b)
      if (bit(V, b)) vary.push_back(static_cast<unsigned>(b));
    // The rows (docs/shape.md Lemma 1): members hold equal rows iff no level of V is fixed, and
    // pairwise disjoint rows (of equal size) iff every level of V is.
    std::vector<Term> none_fixed, all_fixed;
    for (unsigned b : vary) {
      none_fixed.push_back(!fixed(f, b));
      all_fixed.push_back(fixed(f, b));
    }
    std::vector<Term> present_all, disjoint, equal_root, bcast;
    std::vector<Term> U(k_), root_col(k_);
    std::vector<char> member(k_, 0), is_root(k_, 0);
    std::vector<unsigned> root_of(k_, 0);
    // Summed levels: a member's columns are the devices that agree with it outside its summed
    // levels S_x. Members with equal S not meeting V hold pairwise disjoint columns whose union is
    // each member's cylinder over S + V (sum collectives); members with equal S containing V hold
    // equal columns (AllGather); a root whose S contains V gives every member columns of the same
    // form (Broadcast). Members with different S would leave a state of another form: no step of
    // this encoding (the closure requires the programs to avoid such states).
    const Term Vc = s_.bv_val(n_, static_cast<std::uint64_t>(V));
    for (const auto& g : groups) {
      const unsigned root = static_cast<unsigned>(g[0]);
      for (int x : g) root_of[static_cast<unsigned>(x)] = root;
      if (summed_) {
        const auto& pr = pres_[f];
        const auto& sm = sum_[f];
        std::vector<Term> strict;
        present_all.push_back(pr[root]);
        disjoint.push_back((sm[root] & Vc) == zn_);
        equal_root.push_back((sm[root] & Vc) == Vc);
        bcast.push_back(pr[root]);
        bcast.push_back((sm[root] & Vc) == Vc);
        for (std::size_t m = 1; m < g.size(); ++m) {
          const unsigned x = static_cast<unsigned>(g[m]);
          present_all.push_back(pr[x]);
          disjoint.push_back(sm[x] == sm[root]);
          equal_root.push_back(sm[x] == sm[root]);
          bcast.push_back(!pr[x] || (sm[x] & ~sm[root]) == zn_);
          for (unsigned b = 0; b < n_; ++b)
            if (bit(g[m] ^ g[0], static_cast<int>(b))) bcast.push_back(!fixed(f, b));
          strict.push_back(!pr[x] || sm[x] != sm[root]);
        }
        bcast.push_back(smt::any_of(strict, ff_));
        for (int x : g) member[static_cast<unsigned>(x)] = 1;
        is_root[root] = 1;
        continue;
      }
      Term u = col[root];
      present_all.push_back(present(f, root));
      std::vector<Term> strict;
      for (std::size_t m = 1; m < g.size(); ++m) {
        const unsigned x = static_cast<unsigned>(g[m]);
        present_all.push_back(present(f, x));
        disjoint.push_back((col[x] & u) == zk_);
        u = u | col[x];
        equal_root.push_back(col[x] == col[root]);
        // Broadcast, s_i <= s_0: the member's columns within the root's, and its rows the root's (it
        // agrees with the root on the fixed levels; an empty member then gets rows of its own form).
        bcast.push_back((col[x] & ~col[root]) == zk_);
        for (unsigned b = 0; b < n_; ++b)
          if (bit(g[m] ^ g[0], static_cast<int>(b))) bcast.push_back(!fixed(f, b));
        strict.push_back(col[x] != col[root]);
      }
      bcast.push_back(smt::any_of(strict, ff_));
      for (int x : g) {
        U[static_cast<unsigned>(x)] = u;
        root_col[static_cast<unsigned>(x)] = col[root];
        member[static_cast<unsigned>(x)] = 1;
      }
      is_root[root] = 1;
    }
    auto all = [&](std::initializer_list<const std::vector<Term>*> parts) {
      std::vector<Term> c;
      for (const auto* v : parts) c.insert(c.end(), v->begin(), v->end());
      return smt::all_of(c, tt_);
    };
    std::vector<Term> sels, copy, reduce, rs, ag;
    for (std::size_t i : ins) {
      const Term sel = sel_.back()[i];
      sels.push_back(sel);
      switch (p_.instructions[i].collective) {
        case Collective::AllReduce:
          constrain(smt::implies(sel, all({&none_fixed, &present_all, &disjoint})));
          break;
        case Collective::Reduce:
          constrain(smt::implies(sel, all({&none_fixed, &present_all, &disjoint})));
          reduce.push_back(sel);
          break;
        case Collective::ReduceScatter:
          constrain(smt::implies(sel, all({&none_fixed, &present_all, &disjoint})));
          rs.push_back(sel);
          break;
        case Collective::AllGather:
          // Every member holds rows; the successor is row-uniform only if all column sets are equal.
          constrain(smt::implies(sel, all({&all_fixed, &present_all, &equal_root})));
          copy.push_back(sel);
          ag.push_back(sel);
          break;
        case Collective::Broadcast:
          constrain(smt::implies(sel, all({&bcast})));
          copy.push_back(sel);
          break;
      }
    }
    std::vector<Term> eqs;
    for (unsigned x = 0; x < k_; ++x) {
      if (summed_) {
        Term next_sum = sum_[f][x], next_pres = pres_[f][x];
        if (member[x]) {
          const Term r = sum_[f][root_of[x]];
          next_sum = copy.empty() ? (r | Vc) : smt::ite(smt::any_of(copy, ff_), r, r | Vc);
          next_pres = tt_;
          if (!reduce.empty() && !is_root[x]) {
            next_sum = smt::ite(reduce[0], zn_, next_sum);
            next_pres = !reduce[0];
          }
        }
        eqs.push_back(sum_[t][x] == next_sum);
        eqs.push_back(pres_[t][x] == next_pres);
        continue;
      }
      Term next = col[x];
      if (member[x]) {
        next = copy.empty() ? U[x] : smt::ite(smt::any_of(copy, ff_), root_col[x], U[x]);
        if (!reduce.empty() && !is_root[x]) next = smt::ite(reduce[0], zk_, next);
      }
      eqs.push_back(col_[t][x] == next);
    }
    std::vector<Term> next_fix(fix_[f].begin(), fix_[f].end());
    if (!rs.empty() || !ag.empty()) {
      std::vector<Term> rs_fix(n_);
      if (!rs.empty()) {
        // ReduceScatter: member m gets the m-th consecutive block of its rows, i.e. the |V| highest
        // free row bits are fixed to its V bits, the highest to the outermost level.
        std::vector<Term> fr(n_);  // row bit rb is free
        for (unsigned rb = 0; rb < n_; ++rb) {
          std::vector<Term> nobody;
          for (unsigned b = 0; b < n_; ++b) nobody.push_back(smt::extract(fix_[f][b], rb, rb) == s_.bv_val(1, 0));
          fr[rb] = smt::all_of(nobody, tt_);
        }
        const unsigned w = bits_for(n_);
        const Term one1 = s_.bv_val(1, 1), zero1 = s_.bv_val(1, 0);
        std::vector<Term> above(n_);  // free row bits above rb
        Term acc = s_.bv_val(w, 0);
        for (unsigned rb = n_; rb-- > 0;) {
          above[rb] = acc;
          acc = acc + smt::ite(fr[rb], s_.bv_val(w, 1), s_.bv_val(w, 0));
        }
        for (std::size_t j = 0; j < vary.size(); ++j) {
          Term mask;
          for (unsigned rb = n_; rb-- > 0;) {  // most significant first
            Term b1 = smt::ite(fr[rb] && above[rb] == s_.bv_val(w, j), one1, zero1);
            mask = mask.valid() ? smt::concat(mask, b1) : b1;
          }
          rs_fix[vary[j]] = mask;
        }
      }
      for (unsigned b : vary) {
        Term nf = fix_[f][b];
        if (!ag.empty()) nf = smt::ite(ag[0], zn_, nf);
        if (!rs.empty()) nf = smt::ite(rs[0], rs_fix[b], nf);
        next_fix[b] = nf;
      }
    }
    for (unsigned b = 0; b < n_; ++b) eqs.push_back(fix_[t][b] == next_fix[b]);
    constrain(smt::implies(smt::any_of(sels, ff_), smt::all_of(eqs, tt_)));
  }

  smt::Solver& s_;
  const SearchProblem& p_;
  unsigned k_, n_ = 0, csel_ = 1;
  bool summed_ = false;  // columns as summed levels and presence (pres_, sum_) instead of col_
  Term tt_, ff_, zk_, onesk_, zn_, onesn_;
  std::vector<std::vector<Term>> fix_, col_, pres_, sum_, sel_;
  std::vector<Term> choice_;
  std::vector<Term>* sink_ = nullptr;
};

// The closure's view: one step from a free start state, graph nodes by their per-level form.
class PerLevelStep : public detail::OneStep {
 public:
  // With `asserted`, the step's constraints are asserted (the closure's queries); without, they
  // are kept as one term, relation() (the batched validity query asserts its negation).
  PerLevelStep(smt::Solver& s, const SearchProblem& p, const std::vector<std::optional<PerLevelState>>& nodes,
               bool asserted, bool summed)
      : e_(s, p, /*free_initial=*/true, summed), nodes_(nodes) {
    std::vector<Term> parts;
    if (!asserted) e_.collect_into(&parts);
    e_.add_step();
    e_.collect_into(nullptr);
    if (!asserted) relation_ = smt::all_of(parts, e_.tt());
  }
  Term relation() override { return relation_; }
  Term state_is(int t, int u) override { return e_.state_is(t, node(u)); }
  std::vector<Term> state_parts(int t, int u) override { return e_.state_parts(t, node(u)); }
  Term goal(int t) override { return e_.goal(t); }
  Term chosen(int i) override { return e_.chosen(1, i); }

 private:
  const PerLevelState& node(int u) const {
    const auto& st = nodes_.at(static_cast<std::size_t>(u));
    if (!st) throw std::logic_error("per-level encoding: a node without per-level form");
    return *st;
  }
  PerLevelEncoder e_;
  const std::vector<std::optional<PerLevelState>>& nodes_;
  Term relation_;
};

}  // namespace

namespace {

// Per state of the reference graph: its per-level form, whether it has one (with_sets: the states
// the column-set encoding represents) and whether it also has summed levels (with_summed).
struct StateForms {
  std::vector<std::optional<PerLevelState>> nodes;
  std::vector<char> with_sets, with_summed;
};
StateForms state_forms(const detail::StateGraph& g) {
  StateForms f;
  for (const auto& st : g.states) {
    f.nodes.push_back(per_level_state(st));
    f.with_sets.push_back(f.nodes.back().has_value());
    f.with_summed.push_back(f.nodes.back().has_value() && summed_levels(*f.nodes.back()).has_value());
  }
  return f;
}
// Whether encoding the columns as summed levels loses no program of the graph up to max_size that
// the column sets keep (the paths through either kind of state, at most `limit` of each, agree).
bool summed_levels_lose_nothing(const detail::StateGraph& g, const StateForms& f, int max_size, std::size_t limit) {
  return detail::graph_programs(g, max_size, limit, f.with_summed) ==
         detail::graph_programs(g, max_size, limit, f.with_sets);
}

}  // namespace

std::vector<EnumerationResult> confirm_by_symbolic_closure(
    const std::vector<smt::SolverKind>& kinds, const SearchProblem& p, const std::vector<engine::Program>& programs,
    int max_size, const SearchOptions& opt, const std::function<std::string(const engine::Program&)>& name) {
  detail::check_problem(p, max_size);
  if (const std::string why = per_level_unsupported(p); !why.empty())
    throw Error("the per-level encoding does not apply: " + why + " (use --encoding concrete)");
  const detail::StateGraph g = detail::reachable_states(p, max_size);
  detail::ClosureSpec spec;
  spec.method = RunMethod::SymbolicClosure;
  // The columns as summed levels (the default) or as sets (opt.closure_column_sets, or where some
  // program passes a state whose columns are not summed levels); a state is represented when it has
  // the form. Four-level shape: 974 of the 2,530 states with a per-level form have summed levels,
  // and every program passes only those (bench_certify, one worker, CPU, three interleaved rounds:
  // z3 6.7-9.0 -> 2.2-2.7 s, cvc5 19.2-19.8 -> 5.6-6.0 s).
  const StateForms forms = state_forms(g);
  const auto& nodes = forms.nodes;
  const bool summed = !opt.closure_column_sets && summed_levels_lose_nothing(g, forms, max_size, programs.size());
  spec.represented = summed ? forms.with_summed : forms.with_sets;
  // The initial state in per-level form: nothing fixed, device x with the column {x}.
  PerLevelState init;
  init.n = log2_exact(p.k);
  init.fixed.assign(static_cast<std::size_t>(init.n), -1);
  for (int x = 0; x < p.k; ++x) {
    init.cols.emplace_back(static_cast<std::size_t>(p.k), false);
    init.cols.back()[static_cast<std::size_t>(x)] = true;
  }
  if (!nodes.at(0) || !(*nodes[0] == init)) throw std::logic_error("per-level encoding: initial state");
  spec.make = [&](smt::Solver& s) { return std::make_unique<PerLevelStep>(s, p, nodes, true, summed); };
  spec.make_relation = [&](smt::Solver& s) { return std::make_unique<PerLevelStep>(s, p, nodes, false, summed); };
  spec.assume = opt.closure_assume;
  // Batches: measured (CPU) on the three-level shape, batch 1 / 16 / 64: z3 0.64 / 0.75 / 0.94 s,
  // cvc5 2.61 / 1.24 / 1.57 s; on the four-level shape cvc5 with 16 took 45 s against about 25 s
  // one state at a time, so the default is 1.
  if (opt.closure_batch > 1) spec.batch = [&opt](smt::SolverKind) { return opt.closure_batch; };
  // The last level's states (on the four-level shape 1,386 of 2,529; most reach nothing) in one
  // query per solver: bench_certify, one worker, CPU, same run: z3 14.3 -> 11.5 s, cvc5 27.1 ->
  // 23.7 s (one query per state -> one for the level).
  spec.batch_last_level = true;
  auto runs = detail::closure_run(kinds, p, g, programs, max_size, opt, name, spec);
  for (auto& r : runs) r.summed_levels = summed;
  return runs;
}

}  // namespace p2v::encodings

namespace p2v::encodings {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Whether the columns can be encoded as summed levels for the search up to max_size: every program
// of the reference semantics that the column sets keep passes only states with summed levels (else
// its programs through the others would be missing), and the caller did not ask for column sets.
bool summed_levels_suffice(const SearchProblem& p, int max_size, const SearchOptions& opt) {
  if (opt.closure_column_sets) return false;
  const detail::StateGraph g = detail::reachable_states(p, max_size);
  const std::size_t limit = opt.max_programs > 0 ? static_cast<std::size_t>(opt.max_programs) : std::size_t{1} << 40;
  return summed_levels_lose_nothing(g, state_forms(g), max_size, limit);
}

// Bounds 1..max_size on one incremental per-level encoder, as enumerate_programs does: "not the
// goal at t < n" for good, "the goal at n" under an activation literal. `all`: every program of
// each bound (blocking those found), else stop at the first sat bound (the shortest program).
EnumerationResult per_level_bounds(smt::SolverKind kind, const SearchProblem& p, int max_size, const SearchOptions& opt,
                                   bool all) {
  detail::check_problem(p, max_size);
  if (const std::string why = per_level_unsupported(p); !why.empty())
    throw Error("the per-level encoding does not apply: " + why + " (use --encoding concrete)");
  const auto t_all = Clock::now();
  EnumerationResult res;
  res.method = RunMethod::Enumerate;
  smt::Solver s(kind, detail::solver_options(opt));
  res.solver = s.name();
  res.version = s.version();
  res.settings = s.settings();
  // Summed levels for the whole enumeration only: deciding them walks every program of the
  // reference graph, more than the shortest bound's search costs.
  PerLevelEncoder e(s, p, /*free_initial=*/false, all && summed_levels_suffice(p, max_size, opt));
  for (int n = 1; n <= max_size; ++n) {
    const auto t0 = Clock::now();
    BoundFact f;
    f.bound = n;
    while (e.steps() < n) e.add_step();
    if (n > 1) s.add(!e.goal(n - 1));
    const Term act = s.bool_var("bound_" + std::to_string(n));
    s.add(smt::implies(act, e.goal(n)));
    f.encode_seconds = since(t0);
    std::vector<engine::Program> found;
    for (;;) {
      const auto tc = Clock::now();
      const smt::Result r = s.check_assuming({act});
      if (r == smt::Result::unknown) detail::unknown(s, "at bound " + std::to_string(n), opt);
      if (r == smt::Result::unsat) {
        f.final_seconds = since(tc);
        break;
      }
      f.sat_seconds += since(tc);
      found.push_back(e.model_program(n));
      if (!all) break;
      s.add(e.block(found.back()));
      if (opt.max_programs && static_cast<std::int64_t>(res.programs.size() + found.size()) > opt.max_programs)
        throw Error("more than " + std::to_string(opt.max_programs) + " programs: lower the size bound");
    }
    std::sort(found.begin(), found.end());
    f.programs = static_cast<int>(found.size());
    if (!all && !found.empty()) f.final_result = smt::Result::sat;
    f.seconds = since(t0);
    if (!found.empty() && res.shortest == 0) res.shortest = n;
    for (auto& prog : found) res.programs.push_back(std::move(prog));
    res.bounds.push_back(std::move(f));
    if (!all && res.shortest) break;
  }
  res.terms = s.num_terms();
  res.seconds = since(t_all);
  return res;
}

}  // namespace

EnumerationResult enumerate_programs_per_level(smt::SolverKind kind, const SearchProblem& p, int max_size,
                                               const SearchOptions& opt) {
  return per_level_bounds(kind, p, max_size, opt, true);
}

EnumerationResult find_shortest_per_level(smt::SolverKind kind, const SearchProblem& p, int max_size,
                                          const SearchOptions& opt) {
  return per_level_bounds(kind, p, max_size, opt, false);
}

}  // namespace p2v::encodings
