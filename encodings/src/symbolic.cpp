#include "p2v/encodings/symbolic.hpp"

#include <fmt/core.h>

#include <algorithm>

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

// One step of the per-level encoding from a free start state: per level b a row-bit mask fix[b]
// (n bits, at most one set: the row bit level b's digit is fixed to), per device a column set
// col[x] (k bits; 0 = the device holds nothing). A device holds the rows whose fixed bits equal
// its level bits, each with col[x].
class PerLevelStep : public detail::OneStep {
 public:
  PerLevelStep(smt::Solver& s, const SearchProblem& p, const std::vector<std::optional<PerLevelState>>& nodes)
      : s_(s), p_(p), nodes_(nodes), k_(static_cast<unsigned>(p.k)) {
    n_ = static_cast<unsigned>(log2_exact(p.k));
    tt_ = s_.bool_val(true);
    ff_ = s_.bool_val(false);
    zk_ = s_.bv_val(k_, 0);
    onesk_ = s_.bv_val(k_, std::vector<bool>(k_, true));
    zn_ = s_.bv_val(n_, 0);
    for (int t = 0; t < 2; ++t) {
      for (unsigned b = 0; b < n_; ++b) fix_[t].push_back(s_.bv_var(fmt::format("fix_{}_{}", t, b), n_));
      for (unsigned x = 0; x < k_; ++x) col_[t].push_back(s_.bv_var(fmt::format("col_{}_{}", t, x), k_));
    }
    const std::size_t ni = p.instructions.size();
    csel_ = bits_for(ni - 1);
    choice_ = s_.bv_var("choice", csel_);
    if ((std::size_t{1} << csel_) != ni) s_.add(smt::ult(choice_, s_.bv_val(csel_, ni)));
    for (std::size_t i = 0; i < ni; ++i) {
      sel_.push_back(choice_ == s_.bv_val(csel_, i));
      s_.add(smt::implies(sel_.back(), step(p.instructions[i])));
    }
  }

  Term state_is(int t, int u) override {
    const auto& st = nodes_.at(static_cast<std::size_t>(u));
    if (!st) throw std::logic_error("per-level encoding: a node without per-level form");
    std::vector<Term> c;
    for (unsigned b = 0; b < n_; ++b) {
      const int rb = st->fixed[b];
      c.push_back(fix_[t][b] == s_.bv_val(n_, rb < 0 ? 0 : std::uint64_t{1} << rb));
    }
    for (unsigned x = 0; x < k_; ++x) c.push_back(col_[t][x] == s_.bv_val(k_, st->cols[x]));
    return smt::all_of(c, tt_);
  }
  Term goal(int t) override {
    std::vector<Term> c;
    for (unsigned b = 0; b < n_; ++b) c.push_back(fix_[t][b] == zn_);
    for (unsigned x = 0; x < k_; ++x) c.push_back(col_[t][x] == onesk_);
    return smt::all_of(c, tt_);
  }
  Term chosen(int i) override { return sel_.at(static_cast<std::size_t>(i)); }
  Term chosen_var() override { return choice_; }

 private:
  Term fixed(unsigned b) { return fix_[0][b] != zn_; }  // level b's digit is fixed to a row bit
  Term present(unsigned x) { return col_[0][x] != zk_; }

  // "pre and the state at 1 is post" for one instruction.
  Term step(const SearchInstruction& in) {
    std::vector<Term> c;
    const int V = varying_bits(in.groups.at(0));
    std::vector<unsigned> vary;  // the levels the groups vary, outermost (highest bit) first
    for (int b = static_cast<int>(n_) - 1; b >= 0; --b)
      if (bit(V, b)) vary.push_back(static_cast<unsigned>(b));
    std::vector<Term> next_col(col_[0].begin(), col_[0].end()), next_fix(fix_[0].begin(), fix_[0].end());
    const Collective op = in.collective;
    // The rows (docs/shape.md Lemma 1): members hold equal rows iff no level of V is fixed, and
    // pairwise disjoint rows (of equal size) iff every level of V is.
    if (op == Collective::AllReduce || op == Collective::Reduce || op == Collective::ReduceScatter)
      for (unsigned b : vary) c.push_back(!fixed(b));
    if (op == Collective::AllGather)
      for (unsigned b : vary) c.push_back(fixed(b));
    for (const auto& g : in.groups) {
      const unsigned root = static_cast<unsigned>(g[0]);
      switch (op) {
        case Collective::AllReduce:
        case Collective::Reduce:
        case Collective::ReduceScatter: {
          // Every member holds rows; the column sets are pairwise disjoint; the union U.
          Term u = col_[0][root];
          c.push_back(present(root));
          for (std::size_t m = 1; m < g.size(); ++m) {
            const unsigned x = static_cast<unsigned>(g[m]);
            c.push_back(present(x));
            c.push_back((col_[0][x] & u) == zk_);
            u = u | col_[0][x];
          }
          for (std::size_t m = 0; m < g.size(); ++m)
            next_col[static_cast<std::size_t>(g[m])] = (op == Collective::Reduce && m > 0) ? zk_ : u;
          break;
        }
        case Collective::AllGather:
          // Every member holds rows; the successor is row-uniform only if all column sets are equal.
          for (int x : g) {
            c.push_back(present(static_cast<unsigned>(x)));
            c.push_back(col_[0][static_cast<unsigned>(x)] == col_[0][root]);
          }
          break;
        case Collective::Broadcast: {
          // s_i <= s_0: a member's columns within the root's, and its rows the root's (it agrees with
          // the root on the fixed levels; for an empty member: it then gets rows of its own form).
          std::vector<Term> strict;
          for (std::size_t m = 1; m < g.size(); ++m) {
            const unsigned x = static_cast<unsigned>(g[m]);
            c.push_back((col_[0][x] & ~col_[0][root]) == zk_);
            for (unsigned b = 0; b < n_; ++b)
              if (bit(g[m] ^ g[0], static_cast<int>(b))) c.push_back(!fixed(b));
            strict.push_back(col_[0][x] != col_[0][root]);
          }
          c.push_back(smt::any_of(strict, ff_));
          for (int x : g) next_col[static_cast<std::size_t>(x)] = col_[0][root];
          break;
        }
      }
    }
    if (op == Collective::ReduceScatter) {
      // Member m gets the m-th consecutive block of its rows: the |V| highest free row bits are
      // fixed to its V bits, the highest to the outermost level.
      std::vector<Term> fr(n_);  // row bit rb is free
      for (unsigned rb = 0; rb < n_; ++rb) {
        std::vector<Term> none;
        for (unsigned b = 0; b < n_; ++b) none.push_back(smt::extract(fix_[0][b], rb, rb) == s_.bv_val(1, 0));
        fr[rb] = smt::all_of(none, tt_);
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
        next_fix[vary[j]] = mask;
      }
    }
    if (op == Collective::AllGather)
      for (unsigned b : vary) next_fix[b] = zn_;
    for (unsigned x = 0; x < k_; ++x) c.push_back(col_[1][x] == next_col[x]);
    for (unsigned b = 0; b < n_; ++b) c.push_back(fix_[1][b] == next_fix[b]);
    return smt::all_of(c, tt_);
  }

  smt::Solver& s_;
  const SearchProblem& p_;
  const std::vector<std::optional<PerLevelState>>& nodes_;
  unsigned k_, n_ = 0, csel_ = 1;
  Term tt_, ff_, zk_, onesk_, zn_, choice_;
  std::vector<Term> fix_[2], col_[2], sel_;
};

}  // namespace

std::vector<EnumerationResult> confirm_by_symbolic_closure(
    const std::vector<smt::SolverKind>& kinds, const SearchProblem& p, const std::vector<engine::Program>& programs,
    int max_size, const SearchOptions& opt, const std::function<std::string(const engine::Program&)>& name) {
  detail::check_problem(p, max_size);
  if (const std::string why = per_level_unsupported(p); !why.empty())
    throw Error("the per-level encoding does not apply: " + why + " (use --encoding concrete)");
  const detail::StateGraph g = detail::reachable_states(p, max_size);
  std::vector<std::optional<PerLevelState>> nodes;
  detail::ClosureSpec spec;
  spec.method = RunMethod::SymbolicClosure;
  for (const auto& st : g.states) {
    nodes.push_back(per_level_state(st));
    spec.represented.push_back(nodes.back().has_value());
  }
  // The initial state in per-level form: nothing fixed, device x with the column {x}.
  PerLevelState init;
  init.n = log2_exact(p.k);
  init.fixed.assign(static_cast<std::size_t>(init.n), -1);
  for (int x = 0; x < p.k; ++x) {
    init.cols.emplace_back(static_cast<std::size_t>(p.k), false);
    init.cols.back()[static_cast<std::size_t>(x)] = true;
  }
  if (!nodes.at(0) || !(*nodes[0] == init)) throw std::logic_error("per-level encoding: initial state");
  spec.make = [&](smt::Solver& s) { return std::make_unique<PerLevelStep>(s, p, nodes); };
  return detail::closure_run(kinds, p, g, programs, max_size, opt, name, spec);
}

}  // namespace p2v::encodings
