#include "p2v/encodings/search.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>

#include <unistd.h>

#include "p2v/engine/error.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/workers.hpp"

#include "closure.hpp"

namespace p2v::encodings {

using engine::Collective;
using smt::Term;

const char* to_string(ChoiceEncoding c) { return c == ChoiceEncoding::Binary ? "binary" : "onehot"; }
ChoiceEncoding parse_choice_encoding(const std::string& s) {
  if (s == "binary") return ChoiceEncoding::Binary;
  if (s == "onehot" || s == "one-hot") return ChoiceEncoding::OneHot;
  throw Error("unknown choice encoding '" + s + "': use binary or onehot");
}

SearchProblem make_search_problem(const engine::SynthesisHierarchy& h, const std::vector<engine::Instruction>& ins,
                                  const engine::Groups& goal_groups) {
  SearchProblem p;
  p.k = h.num_local();
  for (const auto& i : ins) p.instructions.push_back({i.collective, i.grouping.groups});
  p.goal_groups = goal_groups;
  return p;
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

unsigned bits_for(std::size_t n) {  // bits to represent 0..n
  unsigned b = 1;
  while ((std::size_t{1} << b) <= n) ++b;
  return b;
}

struct Dev {
  Term pres;              // k bits
  std::vector<Term> col;  // k terms of k bits
};
using State = std::vector<Dev>;

// Builds the encoding step by step on one solver.
class Encoder {
 public:
  // free_initial: the state at t = 0 is variables (for one-step queries from a given state, see
  // state_is) instead of the initial state's constants.
  Encoder(smt::Solver& s, const SearchProblem& p, const SearchOptions& opt, bool free_initial = false)
      : s_(s), p_(p), opt_(opt), k_(static_cast<unsigned>(p.k)) {
    if (p.k < 1) throw Error("encoding: empty hierarchy");
    if (p.instructions.empty()) throw Error("encoding: the hierarchy has no instructions");
    tt_ = s_.bool_val(true);
    ff_ = s_.bool_val(false);
    zero_ = s_.bv_val(k_, std::vector<bool>(k_, false));
    ones_ = s_.bv_val(k_, std::vector<bool>(k_, true));
    cw_ = bits_for(static_cast<std::size_t>(k_)) + 1;
    if (opt.per_device && (!opt.factored || opt.functional))
      throw Error("encoding: per-device state vectors need the factored transition constraints");
    packed_ = opt.per_device;
    nr_ = packed_ ? 1 : k_;
    W_ = packed_ ? k_ * k_ : k_;
    zw_ = packed_ ? s_.bv_val(W_, std::vector<bool>(W_, false)) : zero_;
    // A device's column vectors: per row (k bits each), or one of k*k bits (bit r*k+j = row r,
    // column j) per device. `rows` gives the k-bit row masks of one device.
    vectors_ = [this](const std::vector<std::vector<bool>>& rows) {
      std::vector<Term> v;
      if (!packed_) {
        for (const auto& r : rows) v.push_back(s_.bv_val(k_, r));
        return v;
      }
      std::vector<bool> all(W_, false);
      for (unsigned r = 0; r < k_; ++r)
        for (unsigned j = 0; j < k_; ++j) all[r * k_ + j] = rows[r][j];
      v.push_back(s_.bv_val(W_, all));
      return v;
    };
    const auto& vectors = vectors_;
    // Initial state (constants): device d holds every row, with column d.
    State s0(k_);
    for (unsigned d = 0; d < k_; ++d) {
      s0[d].pres = ones_;
      std::vector<bool> c(k_, false);
      c[d] = true;
      s0[d].col = vectors(std::vector<std::vector<bool>>(k_, c));
      if (free_initial) {
        s0[d].pres = s_.bv_var("p_0_" + std::to_string(d), k_);
        for (unsigned r = 0; r < nr_; ++r)
          s0[d].col[r] = s_.bv_var("c_0_" + std::to_string(d) + "_" + std::to_string(r), W_);
      }
    }
    states_.push_back(std::move(s0));
    // Goal: every row, with the columns of the device's goal group.
    goal_col_.assign(k_, std::vector<Term>(nr_, zw_));
    for (const auto& g : p.goal_groups) {
      std::vector<bool> m(k_, false);
      for (int d : g) m.at(static_cast<std::size_t>(d)) = true;
      const auto v = vectors(std::vector<std::vector<bool>>(k_, m));
      for (int d : g) goal_col_[static_cast<std::size_t>(d)] = v;
    }
    csel_ = bits_for(p.instructions.size() - 1);
  }

  int steps() const { return static_cast<int>(states_.size()) - 1; }

  // Asserts "not the goal at t" for every t < n not yet covered (a program stops at the goal, so
  // this holds at every bound above t).
  void assert_not_goal_before(int n) {
    for (; not_goal_upto_ + 1 < n; ++not_goal_upto_) s_.add(!goal(not_goal_upto_ + 1));
  }

  // Adds step t = steps()+1: its variables and transition constraints (asserted permanently).
  void add_step() {
    const int t = steps() + 1;
    const State& prev = states_.back();
    State next(k_);
    const std::string ts = std::to_string(t);
    for (unsigned d = 0; d < k_; ++d) {
      next[d].col.resize(nr_);
      if (opt_.functional) continue;
      next[d].pres = s_.bv_var("p_" + ts + "_" + std::to_string(d), k_);
      for (unsigned r = 0; r < nr_; ++r)
        next[d].col[r] = s_.bv_var("c_" + ts + "_" + std::to_string(d) + "_" + std::to_string(r), W_);
    }
    // Choice.
    const std::size_t ni = p_.instructions.size();
    if (opt_.choice == ChoiceEncoding::Binary) {
      Term c = s_.bv_var("choice_" + ts, csel_);
      choice_bv_.push_back(c);
      if ((std::size_t{1} << csel_) != ni) s_.add(smt::ult(c, s_.bv_val(csel_, ni)));
      std::vector<Term> sel(ni);
      for (std::size_t i = 0; i < ni; ++i) sel[i] = (c == s_.bv_val(csel_, i));
      sel_.push_back(std::move(sel));
    } else {
      std::vector<Term> sel(ni);
      for (std::size_t i = 0; i < ni; ++i) sel[i] = s_.bool_var("sel_" + ts + "_" + std::to_string(i));
      s_.add(smt::any_of(sel, ff_));
      // At most one: pairwise for small sets, sequential counter otherwise.
      if (ni <= 12) {
        for (std::size_t i = 0; i < ni; ++i)
          for (std::size_t j = i + 1; j < ni; ++j) s_.add(!(sel[i] && sel[j]));
      } else {
        Term seen = sel[0];
        for (std::size_t i = 1; i < ni; ++i) {
          s_.add(!(seen && sel[i]));
          Term ns = s_.bool_var("amo_" + ts + "_" + std::to_string(i));
          s_.add(ns == (seen || sel[i]));
          seen = ns;
        }
      }
      sel_.push_back(std::move(sel));
    }
    if (opt_.factored && !opt_.functional) {
      factored_step(prev, next);
      states_.push_back(std::move(next));
      return;
    }
    std::vector<State> posts(ni);
    for (std::size_t i = 0; i < ni; ++i) {
      const auto& in = p_.instructions[i];
      std::vector<Term> pre;
      posts[i] = prev;
      for (const auto& g : in.groups) rule(in.collective, g, prev, posts[i], pre);
      if (opt_.functional) {
        s_.add(smt::implies(sel_.back()[i], smt::all_of(pre, tt_)));
      } else {
        for (unsigned d = 0; d < k_; ++d) {
          pre.push_back(next[d].pres == posts[i][d].pres);
          for (unsigned r = 0; r < k_; ++r) pre.push_back(next[d].col[r] == posts[i][d].col[r]);
        }
        s_.add(smt::implies(sel_.back()[i], smt::all_of(pre, tt_)));
      }
    }
    if (opt_.functional) {
      // The next state as a multiplexer over the instructions' post-states (no state variables).
      for (unsigned d = 0; d < k_; ++d) {
        auto mux = [&](auto get) {
          Term t = get(posts[ni - 1]);
          for (std::size_t i = ni - 1; i-- > 0;) t = smt::ite(sel_.back()[i], get(posts[i]), t);
          return t;
        };
        next[d].pres = mux([&](const State& st) { return st[d].pres; });
        for (unsigned r = 0; r < k_; ++r) next[d].col[r] = mux([&](const State& st) { return st[d].col[r]; });
      }
    }
    states_.push_back(std::move(next));
  }

  Term goal(int t) const {
    std::vector<Term> c;
    const State& s = states_.at(static_cast<std::size_t>(t));
    for (unsigned d = 0; d < k_; ++d) {
      c.push_back(s[d].pres == ones_);
      for (unsigned r = 0; r < nr_; ++r) c.push_back(s[d].col[r] == goal_col_[d][r]);
    }
    return smt::all_of(c, tt_);
  }

  Term chosen(int t, int i) const { return sel_.at(static_cast<std::size_t>(t - 1)).at(static_cast<std::size_t>(i)); }

  engine::Program model_program(int n) {
    engine::Program prog;
    for (int t = 1; t <= n; ++t) {
      if (opt_.choice == ChoiceEncoding::Binary) {
        prog.push_back(static_cast<int>(s_.value_u64(choice_bv_.at(static_cast<std::size_t>(t - 1)))));
      } else {
        int found = -1;
        const auto& sel = sel_.at(static_cast<std::size_t>(t - 1));
        for (std::size_t i = 0; i < sel.size(); ++i)
          if (s_.value_bool(sel[i])) found = static_cast<int>(i);
        prog.push_back(found);
      }
      if (prog.back() < 0 || prog.back() >= static_cast<int>(p_.instructions.size()))
        throw std::runtime_error("encoding: model chose no valid instruction");
    }
    return prog;
  }

  std::vector<LocalState> model_states(int n) {
    std::vector<LocalState> out;
    for (int t = 0; t <= n; ++t) {
      LocalState ls(k_, std::vector<std::vector<bool>>(k_));
      for (unsigned d = 0; d < k_; ++d) {
        const auto& col = states_[static_cast<std::size_t>(t)][d].col;
        if (!packed_) {
          for (unsigned r = 0; r < k_; ++r) ls[d][r] = s_.value_bv(col[r]);
          continue;
        }
        const std::vector<bool> all = s_.value_bv(col[0]);
        for (unsigned r = 0; r < k_; ++r) ls[d][r].assign(all.begin() + r * k_, all.begin() + (r + 1) * k_);
      }
      out.push_back(std::move(ls));
    }
    return out;
  }

  // "The state at step t is exactly s" (the engine's bit matrices, docs/model.md §4).
  Term state_is(int t, const engine::StateSet& st) const {
    std::vector<Term> c;
    const State& at = states_.at(static_cast<std::size_t>(t));
    for (unsigned d = 0; d < k_; ++d) {
      std::vector<bool> pres(k_, false);
      std::vector<std::vector<bool>> rows(k_, std::vector<bool>(k_, false));
      for (unsigned r = 0; r < k_; ++r) {
        pres[r] = st.has_row(static_cast<int>(d), static_cast<int>(r));
        for (unsigned j = 0; j < k_; ++j)
          rows[r][j] = st.get(static_cast<int>(d), static_cast<int>(r), static_cast<int>(j));
      }
      c.push_back(at[d].pres == s_.bv_val(k_, pres));
      const auto v = vectors_(rows);
      for (unsigned r = 0; r < nr_; ++r) c.push_back(at[d].col[r] == v[r]);
    }
    return smt::all_of(c, tt_);
  }

  Term block(const engine::Program& prog) const {
    return detail::not_program(
        prog, [this](int t, int i) { return chosen(t, i); }, ff_);
  }

  Term tt() const { return tt_; }

 private:
  // One constraint set per grouping instead of per instruction. Under each collective's
  // precondition, member d's post-state is uniform: row r = (keep(d,r) ? U_r : 0), with U_r the
  // union of the members' row r, and presence = (keep bits) & (union of presences), where keep is
  // AllReduce, AllGather, Broadcast (s_i <= s_0 makes the union s_0), Reduce at the root, or
  // ReduceScatter for the rows of the member's block.
  void factored_step(const State& prev, State& next) {
    const auto& sel = sel_.back();
    std::vector<std::pair<const engine::Groups*, std::vector<std::size_t>>> by_grouping;
    for (std::size_t i = 0; i < p_.instructions.size(); ++i) {
      const auto& g = p_.instructions[i].groups;
      auto it = std::find_if(by_grouping.begin(), by_grouping.end(), [&](const auto& e) { return *e.first == g; });
      if (it == by_grouping.end())
        by_grouping.push_back({&g, {i}});
      else
        it->second.push_back(i);
    }
    const Term one = s_.bv_val(1, 1), zero1 = s_.bv_val(1, 0);
    for (const auto& [groups, ins] : by_grouping) {
      // Without a ReduceScatter on these groups, a member keeps all rows of the union or none.
      const bool has_rs = std::any_of(ins.begin(), ins.end(), [&](std::size_t i) {
        return p_.instructions[i].collective == Collective::ReduceScatter;
      });
      std::vector<std::vector<std::vector<Term>>> rs_in(groups->size());  // [group][position][row]
      std::vector<Term> sels;
      for (std::size_t i : ins) {
        const auto& in = p_.instructions[i];
        State scratch = prev;
        std::vector<Term> pre;
        for (std::size_t gi = 0; gi < groups->size(); ++gi) {
          rule(in.collective, (*groups)[gi], prev, scratch, pre);
          if (in.collective == Collective::ReduceScatter) rs_in[gi] = last_rs_in_;
        }
        s_.add(smt::implies(sel[i], smt::all_of(pre, tt_)));
        sels.push_back(sel[i]);
      }
      std::vector<Term> eqs;
      std::vector<bool> touched(k_, false);
      for (std::size_t gi = 0; gi < groups->size(); ++gi) {
        const auto& g = (*groups)[gi];
        std::vector<Term> U(nr_);
        Term UP = prev[static_cast<std::size_t>(g[0])].pres;
        for (std::size_t pos = 1; pos < g.size(); ++pos) UP = UP | prev[static_cast<std::size_t>(g[pos])].pres;
        for (unsigned r = 0; r < nr_; ++r) {
          Term u = prev[static_cast<std::size_t>(g[0])].col[r];
          for (std::size_t pos = 1; pos < g.size(); ++pos) u = u | prev[static_cast<std::size_t>(g[pos])].col[r];
          U[r] = u;
        }
        for (std::size_t pos = 0; pos < g.size(); ++pos) {
          const auto d = static_cast<std::size_t>(g[pos]);
          touched[d] = true;
          std::vector<Term> always;  // collectives after which the member keeps every row of the union
          for (std::size_t i : ins) {
            const auto c = p_.instructions[i].collective;
            if (c == Collective::AllReduce || c == Collective::AllGather || c == Collective::Broadcast ||
                (c == Collective::Reduce && pos == 0))
              always.push_back(sel[i]);
          }
          Term keepmask, colmask;  // built MSB (row k-1) first
          for (unsigned rr = k_; rr-- > 0;) {
            std::vector<Term> keep = always;
            for (std::size_t j = 0; j < ins.size(); ++j)
              if (p_.instructions[ins[j]].collective == Collective::ReduceScatter)
                keep.push_back(sel[ins[j]] && rs_in[gi][pos][rr]);
            Term kp = smt::any_of(keep, ff_);
            if (!packed_) eqs.push_back(next[d].col[rr] == smt::ite(kp, U[rr], zero_));
            Term b = smt::ite(kp, one, zero1);
            keepmask = keepmask.valid() ? smt::concat(keepmask, b) : b;
            if (packed_ && has_rs) {
              Term rowmask = smt::ite(kp, ones_, zero_);
              colmask = colmask.valid() ? smt::concat(colmask, rowmask) : rowmask;
            }
          }
          if (packed_)
            eqs.push_back(next[d].col[0] ==
                          (has_rs ? (U[0] & colmask) : smt::ite(smt::any_of(always, ff_), U[0], zw_)));
          eqs.push_back(next[d].pres == (UP & keepmask));
        }
      }
      for (unsigned d = 0; d < k_; ++d)
        if (!touched[d]) {
          eqs.push_back(next[d].pres == prev[d].pres);
          for (unsigned r = 0; r < nr_; ++r) eqs.push_back(next[d].col[r] == prev[d].col[r]);
        }
      s_.add(smt::implies(smt::any_of(sels, ff_), smt::all_of(eqs, tt_)));
    }
  }

  std::vector<std::vector<Term>> last_rs_in_;  // ReduceScatter block membership [position][row]

  Term bit(Term v, unsigned i) { return smt::extract(v, i, i); }
  Term popcount(Term v) {
    std::vector<Term> bits;
    for (unsigned i = 0; i < k_; ++i) bits.push_back(smt::zext(bit(v, i), cw_ - 1));
    return bits.size() == 1 ? bits[0] : smt::apply_n(smt::Op::BvAdd, bits);
  }
  Term num(std::uint64_t v) { return s_.bv_val(cw_, v); }

  // Precondition shared by AllReduce, ReduceScatter and Reduce: all row sets equal and
  // non-empty, column sets of every row pairwise disjoint. Returns the row-wise union in U.
  void reduce_pre(const std::vector<const Dev*>& m, std::vector<Term>& U, std::vector<Term>& c) {
    c.push_back(m[0]->pres != zero_);
    for (std::size_t i = 1; i < m.size(); ++i) c.push_back(m[i]->pres == m[0]->pres);
    U.resize(nr_);
    for (unsigned r = 0; r < nr_; ++r) {
      Term u = m[0]->col[r];
      for (std::size_t i = 1; i < m.size(); ++i) {
        c.push_back((m[i]->col[r] & u) == zw_);
        u = u | m[i]->col[r];
      }
      U[r] = u;
    }
  }

  // Appends the precondition of `col` on group g to c and writes the members' post-states into `post`.
  void rule(Collective col, const std::vector<int>& g, const State& prev, State& post, std::vector<Term>& c) {
    std::vector<const Dev*> m;
    std::vector<Dev*> o;
    for (int d : g) {
      m.push_back(&prev.at(static_cast<std::size_t>(d)));
      o.push_back(&post.at(static_cast<std::size_t>(d)));
    }
    const std::size_t G = m.size();
    switch (col) {
      case Collective::AllReduce: {
        std::vector<Term> U;
        reduce_pre(m, U, c);
        for (std::size_t i = 0; i < G; ++i) {
          o[i]->pres = m[0]->pres;
          for (unsigned r = 0; r < nr_; ++r) o[i]->col[r] = U[r];
        }
        break;
      }
      case Collective::Reduce: {
        std::vector<Term> U;
        reduce_pre(m, U, c);
        o[0]->pres = m[0]->pres;
        for (unsigned r = 0; r < nr_; ++r) o[0]->col[r] = U[r];
        for (std::size_t i = 1; i < G; ++i) {
          o[i]->pres = zero_;
          for (unsigned r = 0; r < nr_; ++r) o[i]->col[r] = zw_;
        }
        break;
      }
      case Collective::ReduceScatter: {
        std::vector<Term> U;
        reduce_pre(m, U, c);
        // Member i gets row r iff r is held and i*cnt <= G*rank(r) < (i+1)*cnt, where rank(r) is
        // the number of held rows below r and cnt the number of held rows (divisible by G):
        // the i-th of G equal consecutive blocks, without a divider in the circuit.
        Term P = m[0]->pres;
        const unsigned w2 = bits_for(static_cast<std::size_t>(k_) * G) + 1;
        auto wide = [&](Term t) { return smt::zext(t, w2 - cw_); };
        Term cnt = wide(popcount(P));
        std::vector<Term> div;
        for (std::size_t q = 1; q * G <= k_; ++q) div.push_back(cnt == s_.bv_val(w2, q * G));
        c.push_back(smt::any_of(div, ff_));
        std::vector<Term> mult(G + 1);  // mult[i] = i*cnt
        mult[0] = s_.bv_val(w2, 0);
        for (std::size_t i = 1; i <= G; ++i) mult[i] = mult[i - 1] + cnt;
        std::vector<Term> grank(k_);  // G*rank(r)
        Term rank = num(0);
        for (unsigned r = 0; r < k_; ++r) {
          if (r > 0) rank = rank + smt::zext(bit(P, r - 1), cw_ - 1);
          grank[r] = wide(rank) * s_.bv_val(w2, G);
        }
        const Term one = s_.bv_val(1, 1), zero1 = s_.bv_val(1, 0);
        last_rs_in_.assign(G, std::vector<Term>(k_));
        for (std::size_t i = 0; i < G; ++i) {
          Term pres_i;  // built MSB (row k-1) first
          for (unsigned rr = k_; rr-- > 0;) {
            Term in = (bit(P, rr) == one) && smt::ule(mult[i], grank[rr]) && smt::ult(grank[rr], mult[i + 1]);
            Term b = smt::ite(in, one, zero1);
            pres_i = pres_i.valid() ? smt::concat(pres_i, b) : b;
            if (!packed_) o[i]->col[rr] = smt::ite(in, U[rr], zero_);  // packed: factored_step builds it
            last_rs_in_[i][rr] = in;
          }
          o[i]->pres = pres_i;
        }
        break;
      }
      case Collective::AllGather: {
        c.push_back(m[0]->pres != zero_);
        Term cnt0 = popcount(m[0]->pres);
        Term up = m[0]->pres;
        for (std::size_t i = 1; i < G; ++i) {
          c.push_back(popcount(m[i]->pres) == cnt0);
          c.push_back((m[i]->pres & up) == zero_);
          up = up | m[i]->pres;
        }
        for (std::size_t i = 0; i < G; ++i) o[i]->pres = up;
        for (unsigned r = 0; r < nr_; ++r) {
          Term u = m[0]->col[r];
          for (std::size_t i = 1; i < G; ++i) u = u | m[i]->col[r];
          for (std::size_t i = 0; i < G; ++i) o[i]->col[r] = u;
        }
        break;
      }
      case Collective::Broadcast: {
        std::vector<Term> strict;
        // Per row, with U the members' union and I their intersection: every s_i <= s_0 iff
        // U == s_0; and not all members are equal iff I != U somewhere. U is the union the
        // reductions and the post-state build too (the same terms), so this costs one AND chain
        // per row instead of a subset test and a comparison per member and row.
        for (unsigned r = 0; r < nr_; ++r) {
          Term u = m[0]->col[r], in = m[0]->col[r];
          for (std::size_t i = 1; i < G; ++i) {
            u = u | m[i]->col[r];
            in = in & m[i]->col[r];
          }
          c.push_back(u == m[0]->col[r]);
          strict.push_back(in != u);
        }
        c.push_back(smt::any_of(strict, ff_));
        for (std::size_t i = 0; i < G; ++i) {
          o[i]->pres = m[0]->pres;
          for (unsigned r = 0; r < nr_; ++r) o[i]->col[r] = m[0]->col[r];
        }
        break;
      }
    }
  }

  std::function<std::vector<Term>(const std::vector<std::vector<bool>>&)> vectors_;  // a device's column vectors
  smt::Solver& s_;
  const SearchProblem& p_;
  SearchOptions opt_;
  unsigned k_, cw_ = 0, csel_ = 1;
  Term tt_, ff_, zero_, ones_;
  std::vector<std::vector<Term>> goal_col_;  // per device: its goal column vectors
  bool packed_ = false;                      // SearchOptions::per_device
  unsigned nr_ = 0, W_ = 0;                  // column vectors per device and their width
  Term zw_;                                  // zero of width W_
  int not_goal_upto_ = 0;
  std::vector<State> states_;
  std::vector<Term> choice_bv_;
  std::vector<std::vector<Term>> sel_;
};

}  // namespace

namespace detail {

smt::SolverOptions solver_options(const SearchOptions& o) {
  smt::SolverOptions so;
  so.timeout_ms = o.timeout_ms;
  so.proofs = o.proofs;
  so.incremental = true;
  so.z3_logic = o.z3_logic;
  so.cvc5_options = o.cvc5_options;
  return so;
}

[[noreturn]] void unknown(smt::Solver& s, const std::string& what, const SearchOptions& o) {
  std::string why = s.reason_unknown();
  std::string msg = s.name() + " answered unknown " + what + (why.empty() ? "" : " (" + why + ")");
  if (o.timeout_ms)
    msg += "; the time limit per check was " + std::to_string(o.timeout_ms) + " ms: raise it with --timeout";
  throw Error(msg + "; nothing is reported as verified");
}

// This machine's memory in bytes, or 0 where it cannot tell.
double physical_memory() {
  const long page = ::sysconf(_SC_PAGESIZE), phys = ::sysconf(_SC_PHYS_PAGES);
  return page > 0 && phys > 0 ? static_cast<double>(page) * static_cast<double>(phys) : 0.0;
}

void check_problem(const SearchProblem& p, int n) {
  if (n < 1 || n > engine::kMaxProgramSize)
    throw Error("size bound " + std::to_string(n) + " out of range (1.." + std::to_string(engine::kMaxProgramSize) +
                ")");
  if (p.k > 256)
    throw Error("encoding: " + std::to_string(p.k) + " local devices is too large for the SMT encoding (at most 256)");
  // Memory: about 4-10 KiB per state bit (k^3 per step) was measured with z3 at k = 64 (1 GiB for
  // one step, over 11 GiB by L = 5). Refuse what cannot fit instead of being killed midway.
  const double k = p.k, need = 8192.0 * k * k * k * n, have = physical_memory();
  if (have > 0 && need > 0.8 * have)
    throw Error("encoding: " + std::to_string(p.k) + " local devices and " + std::to_string(n) + " steps need about " +
                std::to_string(static_cast<long>(need / (1 << 30))) +
                " GiB (k^3 state bits per step, about 8 KiB each), more than this machine's " +
                std::to_string(static_cast<long>(have / (1 << 30))) +
                " GiB: lower --max-size or use a smaller hierarchy (the enumerator, p2v synth, handles it)");
}

}  // namespace detail

namespace {

using detail::check_problem;
using detail::physical_memory;
using detail::solver_options;
using detail::unknown;

// Opens bound n on an encoder with >= n steps: asserts "not the goal at 1..n-1" for good, and
// scopes "the goal at n" (with the optional lemma) under a fresh activation literal, returned as
// the assumption to check with, or in a push scope (opt.push_pop; returns no assumption, the
// caller pops). The lemma prunes the search: the last step is no Reduce or ReduceScatter on groups
// of two or more devices (after Reduce the non-roots are empty, after ReduceScatter a member holds
// at most k/2 rows; the goal has every device hold all k rows).
std::vector<Term> open_bound(smt::Solver& s, Encoder& e, const SearchProblem& p, int n, const SearchOptions& opt) {
  e.assert_not_goal_before(n);
  std::vector<Term> at_n{e.goal(n)};
  if (opt.last_step_lemma)
    for (std::size_t i = 0; i < p.instructions.size(); ++i) {
      const auto& in = p.instructions[i];
      const bool shrinks = in.collective == Collective::Reduce || in.collective == Collective::ReduceScatter;
      if (shrinks && !in.groups.empty() &&
          std::all_of(in.groups.begin(), in.groups.end(), [](const auto& g) { return g.size() >= 2; }))
        at_n.push_back(!e.chosen(n, static_cast<int>(i)));
    }
  if (opt.push_pop) {
    s.push();
    s.add(smt::all_of(at_n, e.tt()));
    return {};
  }
  Term act = s.bool_var("bound_" + std::to_string(n));
  s.add(smt::implies(act, smt::all_of(at_n, e.tt())));
  return {act};
}

// Bound n begun: the encoder grown to n steps and the bound opened (open_bound); records the bound
// and its encoding time (since t0, the bound's start) in f. Returns the bound's assumptions.
std::vector<Term> begin_bound(smt::Solver& s, Encoder& e, const SearchProblem& p, int n, const SearchOptions& opt,
                              Clock::time_point t0, BoundFact& f) {
  f.bound = n;
  while (e.steps() < n) e.add_step();
  std::vector<Term> bound = open_bound(s, e, p, n, opt);
  f.encode_seconds = since(t0);
  return bound;
}

// Which solver a run used: its name, version and settings.
void name_run(EnumerationResult& res, const smt::Solver& s) {
  res.solver = s.name();
  res.version = s.version();
  res.settings = s.settings();
}

// Is this process's resident memory below a quarter of the machine's (the budget for solvers
// whose teardown is skipped)? False where it cannot tell.
bool below_memory_budget() {
  long pages = 0, resident = 0;
  std::ifstream statm("/proc/self/statm");
  const long page = ::sysconf(_SC_PAGESIZE);
  if (!(statm >> pages >> resident) || page <= 0 || physical_memory() <= 0) return false;
  return static_cast<double>(resident) * static_cast<double>(page) < physical_memory() / 4;
}

// Frees the encoder and its solver, or with opt.bury_solver leaves them to the process's exit
// (see SearchOptions::bury_solver).
template <class E>
void end_of_search(std::unique_ptr<E>& e, std::unique_ptr<smt::Solver>& s, const SearchOptions& opt) {
  if (opt.bury_solver && below_memory_budget()) {
    (void)e.release();
    (void)s.release();
  }
  e.reset();
  s.reset();
}

smt::Result check(smt::Solver& s, const std::vector<Term>& assumptions) {
  return assumptions.empty() ? s.check() : s.check_assuming(assumptions);
}

}  // namespace

EnumerationResult enumerate_programs(smt::SolverKind kind, const SearchProblem& p, int max_size,
                                     const SearchOptions& opt) {
  check_problem(p, max_size);
  const auto t_all = Clock::now();
  EnumerationResult res;
  std::unique_ptr<smt::Solver> s;
  std::unique_ptr<Encoder> e;
  auto fresh = [&] {
    e.reset();
    s = std::make_unique<smt::Solver>(kind, solver_options(opt));
    e = std::make_unique<Encoder>(*s, p, opt);
  };
  fresh();
  name_run(res, *s);
  std::int64_t total = 0;
  for (int n = 1; n <= max_size; ++n) {
    const auto t0 = Clock::now();
    BoundFact f;
    if (!opt.incremental && n > 1) fresh();
    const std::vector<Term> bound = begin_bound(*s, *e, p, n, opt, t0, f);
    std::vector<engine::Program> found;
    for (;;) {
      const auto tc = Clock::now();
      const smt::Result r = check(*s, bound);
      if (r == smt::Result::unknown)
        unknown(*s, "at bound " + std::to_string(n) + " after " + std::to_string(found.size()) + " programs", opt);
      if (r == smt::Result::unsat) {
        f.final_seconds = since(tc);
        if (opt.proofs) f.proof = s->proof();
        break;
      }
      const auto tm = Clock::now();
      f.sat_seconds += std::chrono::duration<double>(tm - tc).count();
      engine::Program prog = e->model_program(n);
      f.model_seconds += since(tm);
      if (opt.keep_states) res.states.push_back(e->model_states(n));
      s->add(e->block(prog));
      found.push_back(std::move(prog));
      if (opt.max_programs && ++total > opt.max_programs)
        throw Error("more than " + std::to_string(opt.max_programs) + " programs: lower the size bound");
    }
    if (opt.push_pop) s->pop();
    f.programs = static_cast<int>(found.size());
    f.seconds = since(t0);
    if (!found.empty() && res.shortest == 0) res.shortest = n;
    // Keep states aligned with the sorted programs.
    std::vector<std::size_t> idx(found.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return found[a] < found[b]; });
    if (opt.keep_states) {
      const std::size_t base = res.states.size() - found.size();
      std::vector<std::vector<LocalState>> st;
      for (std::size_t i : idx) st.push_back(std::move(res.states[base + i]));
      res.states.resize(base);
      for (auto& x : st) res.states.push_back(std::move(x));
    }
    for (std::size_t i : idx) res.programs.push_back(found[i]);
    res.bounds.push_back(std::move(f));
  }
  res.terms = s->num_terms();
  res.seconds = since(t_all);
  end_of_search(e, s, opt);
  return res;
}

EnumerationResult confirm_programs(smt::SolverKind kind, const SearchProblem& p,
                                   const std::vector<engine::Program>& programs, int max_size, const SearchOptions& opt,
                                   const std::function<std::string(const engine::Program&)>& name) {
  check_problem(p, max_size);
  const auto t_all = Clock::now();
  EnumerationResult res;
  res.method = RunMethod::Confirm;
  auto s = std::make_unique<smt::Solver>(kind, solver_options(opt));
  auto e = std::make_unique<Encoder>(*s, p, opt);
  name_run(res, *s);
  auto text = [&](const engine::Program& prog) {
    if (name) return name(prog);
    std::string t;
    for (int i : prog) t += (t.empty() ? "" : ",") + std::to_string(i);
    return "[" + t + "]";
  };
  std::size_t next = 0;
  for (int n = 1; n <= max_size; ++n) {
    const auto t0 = Clock::now();
    BoundFact f;
    const std::vector<Term> bound = begin_bound(*s, *e, p, n, opt, t0, f);
    // (1) Validity of each given program of n steps: its choices as assumptions.
    const std::size_t first = next;
    for (; next < programs.size() && static_cast<int>(programs[next].size()) == n; ++next) {
      const auto& prog = programs[next];
      if (next > first && !(programs[next - 1] < prog))
        throw std::logic_error("confirm_programs: programs not sorted as the enumerator sorts them");
      std::vector<Term> as = bound;
      for (int t = 1; t <= n; ++t) {
        const int i = prog[static_cast<std::size_t>(t - 1)];
        if (i < 0 || i >= static_cast<int>(p.instructions.size()))
          throw Error(res.solver + ": program " + text(prog) + " names an instruction that does not exist");
        as.push_back(e->chosen(t, i));
      }
      const auto tc = Clock::now();
      const smt::Result r = check(*s, as);
      f.accept_seconds += since(tc);
      if (r == smt::Result::unknown) unknown(*s, "on the program " + text(prog), opt);
      if (r == smt::Result::unsat)
        throw Error(res.solver + ": the encoding rejects " + text(prog) + " (" + std::to_string(n) +
                    " steps), which the enumerator lists; nothing is certified (run p2v verify for the details)");
      if (opt.keep_states) res.states.push_back(e->model_states(n));
      res.programs.push_back(prog);
    }
    if (next < programs.size() && static_cast<int>(programs[next].size()) < n)
      throw std::logic_error("confirm_programs: programs not sorted shortest first");
    // (2) Completeness at n: none but the given ones.
    for (std::size_t i = first; i < next; ++i) s->add(e->block(programs[i]));
    const auto tc = Clock::now();
    const smt::Result r = check(*s, bound);
    f.final_seconds = since(tc);
    if (r == smt::Result::unknown)
      unknown(*s, "at bound " + std::to_string(n) + " after blocking " + std::to_string(next - first) + " programs",
              opt);
    if (r == smt::Result::sat)
      throw Error(res.solver + " finds a valid program of " + std::to_string(n) +
                  " steps that the enumerator does not list: " + text(e->model_program(n)) +
                  "; nothing is certified (run p2v verify for the details)");
    if (opt.proofs) f.proof = s->proof();
    if (opt.push_pop) s->pop();
    f.programs = static_cast<int>(next - first);
    f.seconds = since(t0);
    if (f.programs > 0 && res.shortest == 0) res.shortest = n;
    res.bounds.push_back(std::move(f));
  }
  if (next != programs.size())
    throw Error("confirm_programs: a program is longer than the size bound " + std::to_string(max_size));
  res.terms = s->num_terms();
  res.seconds = since(t_all);
  end_of_search(e, s, opt);
  return res;
}

namespace detail {

std::string state_key(const engine::StateSet& s) {
  const std::size_t stride = static_cast<std::size_t>(s.words()) * (static_cast<std::size_t>(s.k()) + 1);
  std::string key(stride * static_cast<std::size_t>(s.k()) * sizeof(std::uint64_t), '\0');
  for (int d = 0; d < s.k(); ++d)
    std::memcpy(key.data() + static_cast<std::size_t>(d) * stride * sizeof(std::uint64_t), s.dev(d),
                stride * sizeof(std::uint64_t));
  return key;
}

StateGraph reachable_states(const SearchProblem& p, int max_size) {
  StateGraph g;
  std::map<std::string, int> index;
  const engine::StateSet goal = engine::StateSet::goal(p.k, p.goal_groups);
  auto add = [&](engine::StateSet st, int depth) {
    auto [it, fresh] = index.emplace(state_key(st), static_cast<int>(g.states.size()));
    if (fresh) {
      g.goal.push_back(st == goal);
      g.states.push_back(std::move(st));
      g.depth.push_back(depth);
      g.expanded.push_back(0);
      g.succ.emplace_back();
    }
    return it->second;
  };
  add(engine::StateSet::initial(p.k), 0);
  engine::StateSet next(p.k);
  for (std::size_t u = 0; u < g.states.size(); ++u) {  // breadth first: depth[u] is minimal
    if (g.goal[u] || g.depth[u] >= max_size) continue;
    g.expanded[u] = 1;
    // From the last level (depth max_size - 1) only steps to the goal matter: a program that is
    // there at step max_size - 1 must reach the goal with its last step.
    const bool last = g.depth[u] == max_size - 1;
    for (std::size_t i = 0; i < p.instructions.size(); ++i) {
      const auto& in = p.instructions[i];
      if (!g.states[u].apply(in.collective, in.groups, next)) continue;
      if (last && !(next == goal)) continue;
      const int v = add(next, g.depth[u] + 1);
      g.succ[u].push_back({static_cast<int>(i), v});
    }
  }
  return g;
}

// The programs the graph's paths spell: from the initial state to the goal in at most max_size
// steps (the goal is not expanded, so no path passes it). Stops after `limit` programs.
std::vector<engine::Program> graph_programs(const StateGraph& g, int max_size, std::size_t limit,
                                            const std::vector<char>& keep) {
  std::vector<engine::Program> out;
  engine::Program prefix;
  std::function<void(int)> walk = [&](int u) {
    if (out.size() > limit) return;
    if (g.goal[static_cast<std::size_t>(u)]) {
      if (!prefix.empty()) out.push_back(prefix);
      return;
    }
    if (static_cast<int>(prefix.size()) >= max_size) return;
    for (auto [i, v] : g.succ[static_cast<std::size_t>(u)]) {
      if (!keep.empty() && !keep[static_cast<std::size_t>(v)]) continue;
      prefix.push_back(i);
      walk(v);
      prefix.pop_back();
    }
  };
  walk(0);
  std::sort(out.begin(), out.end(), [](const engine::Program& a, const engine::Program& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return out;
}

std::vector<EnumerationResult> closure_run(const std::vector<smt::SolverKind>& kinds, const SearchProblem& p,
                                           const StateGraph& g, const std::vector<engine::Program>& programs,
                                           int max_size, const SearchOptions& opt,
                                           const std::function<std::string(const engine::Program&)>& name,
                                           const ClosureSpec& spec) {
  check_problem(p, max_size);
  const auto t_all = Clock::now();
  if (kinds.empty()) throw Error("the closure check needs at least one solver");
  if (opt.choice != ChoiceEncoding::Binary) throw Error("the closure check needs the binary choice encoding");
  auto text = [&](const engine::Program& prog) {
    if (name) return name(prog);
    std::string t;
    for (int i : prog) t += (t.empty() ? "" : ",") + std::to_string(i);
    return "[" + t + "]";
  };
  const auto& rep = spec.represented;
  auto in_encoding = [&](std::size_t u) { return rep.empty() || rep[u]; };
  // The graph's paths must be exactly the given programs (a check of the enumerator against the
  // reference semantics; the solver facts below are what make them the valid programs).
  const auto paths = graph_programs(g, max_size, programs.size());
  if (paths != programs) {
    for (const auto& q : paths)
      if (!std::binary_search(programs.begin(), programs.end(), q,
                              [](const engine::Program& a, const engine::Program& b) {
                                return a.size() != b.size() ? a.size() < b.size() : a < b;
                              }))
        throw Error("the reference semantics has the valid program " + text(q) +
                    ", which the enumerator does not list");
    throw Error("the enumerator lists " + std::to_string(programs.size()) + " programs, the reference semantics has " +
                std::to_string(paths.size()));
  }
  // With an encoding that represents only some states, the programs must pass only those (the
  // paths through the others, checked above, are then dead ends of the reference semantics).
  if (!rep.empty() && graph_programs(g, max_size, programs.size(), rep) != programs)
    throw Error("a program of the reference semantics passes a state the encoding does not represent");
  // The edges the programs use (their validity is checked one by one).
  std::vector<std::vector<std::pair<int, int>>> used(g.states.size());
  for (const auto& prog : programs) {
    int u = 0;
    for (int i : prog) {
      const auto& sv = g.succ[static_cast<std::size_t>(u)];
      const auto it = std::find_if(sv.begin(), sv.end(), [i](const auto& e) { return e.first == i; });
      auto& us = used[static_cast<std::size_t>(u)];
      if (std::find(us.begin(), us.end(), *it) == us.end()) us.push_back(*it);
      u = it->second;
    }
  }
  // Every solver kind closes every expanded state. The (kind, state) tasks go to `jobs` workers,
  // each with its own solver per kind (states are independent queries: each is pushed, checked
  // and popped); a worker starts on its own kind and helps the others when that one is done, so
  // a faster solver's worker joins the slower one's states.
  std::vector<std::size_t> todo;
  for (std::size_t u = 0; u < g.states.size(); ++u)
    if (g.expanded[u] && in_encoding(u)) todo.push_back(u);
  if (opt.progress) opt.progress(fmt::format("closure over {} of {} reachable states", todo.size(), g.states.size()));
  // The tasks per solver kind: batches of spec.batch(kind) states (consecutive in breadth-first
  // order), one query each.
  const std::size_t K = kinds.size();
  std::vector<std::vector<std::vector<std::size_t>>> batches(K);
  std::size_t tasks = 0;
  for (std::size_t kk = 0; kk < K; ++kk) {
    const auto b = static_cast<std::size_t>(spec.batch ? std::max(1, spec.batch(kinds[kk])) : 1);
    // With spec.batch_last_level the last level's states are one task, and it comes first: the
    // longest task first, so that the workers do not end with one of them alone on it.
    std::vector<std::size_t> rest, last;
    for (std::size_t u : todo) (spec.batch_last_level && g.depth[u] == max_size - 1 ? last : rest).push_back(u);
    if (!last.empty()) batches[kk].push_back(std::move(last));
    // With spec.make_relation, the programs' steps are one task (an empty batch), next in line.
    if (spec.make_relation) batches[kk].emplace_back();
    for (std::size_t i = 0; i < rest.size(); i += b)
      batches[kk].emplace_back(rest.begin() + static_cast<std::ptrdiff_t>(i),
                               rest.begin() + static_cast<std::ptrdiff_t>(std::min(rest.size(), i + b)));
    tasks += batches[kk].size();
  }
  // opt.jobs workers (0: one per hardware thread), at least one per kind so that the solvers run
  // concurrently, at most one per task.
  const std::size_t asked = engine::worker_count(opt.jobs);
  const std::size_t jobs = std::clamp<std::size_t>(std::max(asked, K), 1, std::max<std::size_t>(1, tasks));
  std::vector<EnumerationResult> res(K);
  for (auto& r : res) {
    r.method = spec.method;
    r.programs = programs;
    r.shortest = programs.empty() ? 0 : static_cast<int>(programs.front().size());
  }
  // One state's queries on a solver whose step starts free: the counts it adds to its kind's totals.
  struct Counts {
    int edges = 0, checks = 0;
    double validity_seconds = 0, closure_seconds = 0;
  };
  // Validity of the programs' steps from u: the step relation holds, with the successor's goal
  // status; `base` names u (assumptions; empty where u is asserted).
  auto check_steps = [&](smt::SolverKind kind, smt::Solver& s, OneStep& e, std::size_t u, const std::vector<Term>& base,
                         Counts& n) {
    for (auto [i, v] : used[u]) {
      const auto tc = Clock::now();
      const Term at_goal = e.goal(1);
      std::vector<Term> as = base;
      as.push_back(e.chosen(i));
      as.push_back(e.state_is(1, v));
      as.push_back(g.goal[static_cast<std::size_t>(v)] ? at_goal : !at_goal);
      const smt::Result r = s.check_assuming(as);
      n.validity_seconds += since(tc);
      ++n.checks;
      if (r == smt::Result::unknown) unknown(s, "on a step of a program", opt);
      if (r == smt::Result::unsat)
        throw Error(std::string(to_string(kind)) +
                    ": the encoding rejects a step of the enumerator's programs (instruction " + std::to_string(i) +
                    " from a state at depth " + std::to_string(g.depth[u]) +
                    "); nothing is certified (run p2v verify for the details)");
    }
  };
  // After a sat closure query: the instruction of the unlisted step, found by one check per
  // instruction (the closure's solvers build no models).
  auto culprit = [&](smt::Solver& s, OneStep& e, std::vector<Term> base) -> std::string {
    for (std::size_t i = 0; i < p.instructions.size(); ++i) {
      base.push_back(e.chosen(static_cast<int>(i)));
      if (s.check_assuming(base) == smt::Result::sat) return " (instruction " + std::to_string(i) + ")";
      base.pop_back();
    }
    return "";
  };
  auto close_state = [&](smt::SolverKind kind, smt::Solver& s, OneStep& e, std::size_t u) {
    Counts n;
    // The start state (and on the last level the goal after the step) asserted in a push scope,
    // or with spec.assume, as assumptions of every check (the closure's blocks then under a
    // literal of this state's own).
    std::vector<Term> base;
    if (spec.assume) {
      base = e.state_parts(0, static_cast<int>(u));
    } else {
      s.push();
      s.add(e.state_is(0, static_cast<int>(u)));
    }
    // On the last level the closure is about steps to the goal only (see reachable_states).
    if (g.depth[u] == max_size - 1) {
      if (spec.assume)
        base.push_back(e.goal(1));
      else
        s.add(e.goal(1));
    }
    if (!spec.make_relation) check_steps(kind, s, e, u, base, n);
    // Closure: no valid step from u other than the listed ones (with their exact successors); on
    // the last level, no valid step to the goal other than the listed ones.
    Term act;
    if (spec.assume) {
      act = s.bool_var("closure_" + std::to_string(u));
      base.push_back(act);
    }
    for (auto [i, v] : g.succ[u])
      if (in_encoding(static_cast<std::size_t>(v))) {
        const Term block = !(e.chosen(i) && e.state_is(1, v));
        s.add(spec.assume ? smt::implies(act, block) : block);
        ++n.edges;
      }
    const auto tc = Clock::now();
    const smt::Result r = spec.assume ? s.check_assuming(base) : s.check();
    n.closure_seconds = since(tc);
    if (r == smt::Result::unknown) unknown(s, "on the steps from a reachable state", opt);
    if (r == smt::Result::sat)
      throw Error(std::string(to_string(kind)) + " finds a valid step" + culprit(s, e, base) +
                  " from a reachable state at depth " + std::to_string(g.depth[u]) +
                  " that the reference semantics does not list; nothing is certified");
    if (spec.assume)
      s.add(!act);  // this state's blocks are done with
    else
      s.pop();
    return n;
  };
  // A batch of states in one closure query: a selector per state implies its start state (and
  // on the last level the goal after the step) and its blocks; one of the selectors holds. The
  // validity checks come first, each under its state's selector.
  auto close_batch = [&](smt::SolverKind kind, smt::Solver& s, OneStep& e, const std::vector<std::size_t>& us) {
    Counts n;
    s.push();
    std::vector<Term> selectors;
    for (std::size_t u : us) {
      const Term b = s.bool_var("batch_" + std::to_string(u));
      selectors.push_back(b);
      s.add(smt::implies(b, e.state_is(0, static_cast<int>(u))));
      if (g.depth[u] == max_size - 1) s.add(smt::implies(b, e.goal(1)));
    }
    if (!spec.make_relation)
      for (std::size_t q = 0; q < us.size(); ++q) check_steps(kind, s, e, us[q], {selectors[q]}, n);
    for (std::size_t q = 0; q < us.size(); ++q)
      for (auto [i, v] : g.succ[us[q]])
        if (in_encoding(static_cast<std::size_t>(v))) {
          s.add(smt::implies(selectors[q], !(e.chosen(i) && e.state_is(1, v))));
          ++n.edges;
        }
    s.add(smt::any_of(selectors, e.goal(1)));
    const auto tc = Clock::now();
    const smt::Result r = s.check();
    n.closure_seconds = since(tc);
    if (r == smt::Result::unknown) unknown(s, "on the steps from reachable states", opt);
    if (r == smt::Result::sat)
      throw Error(std::string(to_string(kind)) + " finds a valid step" + culprit(s, e, {}) +
                  " from a reachable state that the reference semantics does not list; nothing is certified");
    s.pop();
    return n;
  };
  // Every solver of the closure: sat/unsat is all it reads, so no models.
  smt::SolverOptions closure_options = solver_options(opt);
  closure_options.models = false;
  // Every step of the programs in one query (spec.make_relation), on a solver of its own whose
  // step relation is not asserted: a selector per listed step implies its start state,
  // instruction, successor and the successor's goal status, one selector holds, and the step
  // relation does not. Unsat iff the relation holds on every listed step (each is fully determined
  // by its selector's literals). On sat, the steps are checked one by one to name the rejected one.
  auto validate_all = [&](smt::SolverKind kind) {
    Counts n;
    const auto tc = Clock::now();
    smt::Solver s(kind, closure_options);
    const auto owned = spec.make_relation(s);
    OneStep& e = *owned;
    const Term relation = e.relation();
    if (!relation.valid()) throw std::logic_error("closure: make_relation without a step relation");
    std::vector<Term> selectors;
    for (std::size_t u = 0; u < g.states.size(); ++u)
      for (auto [i, v] : used[u]) {
        const Term sel = s.bool_var("step_" + std::to_string(u) + "_" + std::to_string(i));
        const Term at_goal = e.goal(1);
        s.add(smt::implies(sel, e.state_is(0, static_cast<int>(u)) && e.chosen(i) && e.state_is(1, v) &&
                                    (g.goal[static_cast<std::size_t>(v)] ? at_goal : !at_goal)));
        selectors.push_back(sel);
        ++n.checks;
      }
    s.add(smt::any_of(selectors, s.bool_val(false)));
    const Term on = s.bool_var("step_relation_fails");
    s.add(smt::implies(on, !relation));
    // Z3 refutes the steps one by one (each under its selector), cvc5 all at once: four-level shape,
    // 1,279 steps, bench_certify CPU: z3 1.7 s one by one, 3.5 s at once; cvc5 14.4 s one by one,
    // 3.2 s at once (the per-step sat checks before: z3 3.8 s, cvc5 8.9 s).
    smt::Result r = smt::Result::unsat;
    if (kind == smt::SolverKind::Z3) {
      for (std::size_t q = 0; q < selectors.size() && r == smt::Result::unsat; ++q)
        r = s.check_assuming({on, selectors[q]});
    } else {
      r = s.check_assuming({on});
    }
    n.validity_seconds = since(tc);
    if (r == smt::Result::unknown) unknown(s, "on the steps of the programs", opt);
    if (r == smt::Result::sat) {
      // Name the step: the per-step sat checks with the relation asserted.
      s.add(relation);
      for (std::size_t u = 0; u < g.states.size(); ++u)
        if (!used[u].empty()) {
          Counts ignored;
          check_steps(kind, s, e, u, e.state_parts(0, static_cast<int>(u)), ignored);
        }
      throw Error(std::string(to_string(kind)) +
                  ": the encoding rejects a step of the enumerator's programs; nothing is certified (run p2v verify "
                  "for the details)");
    }
    return n;
  };
  std::vector<std::atomic<std::size_t>> next(K);
  for (auto& n : next) n = 0;
  std::vector<char> named(K, 0);
  std::vector<std::size_t> done(K, 0);  // tasks finished per kind
  std::mutex mu;                        // guards res, named, the progress callback and the first error
  std::string first_error;
  std::atomic<bool> stop{false};
  auto worker = [&](std::size_t w) {
    std::vector<std::unique_ptr<smt::Solver>> solver(K);
    std::vector<std::unique_ptr<OneStep>> enc(K);
    // The next task: a state of this worker's own kind first, else of another kind.
    auto claim = [&](std::size_t& kk, std::size_t& t) {
      for (std::size_t j = 0; j < K; ++j) {
        kk = (w + j) % K;
        if ((t = next[kk].fetch_add(1)) < batches[kk].size()) return true;
      }
      return false;
    };
    try {
      for (std::size_t kk = 0, t = 0; !stop && claim(kk, t);) {
        if (!solver[kk]) {
          solver[kk] = std::make_unique<smt::Solver>(kinds[kk], closure_options);
          enc[kk] = spec.make(*solver[kk]);
          std::lock_guard<std::mutex> lock(mu);
          if (!named[kk]) name_run(res[kk], *solver[kk]);
          named[kk] = 1;
        }
        const auto& batch = batches[kk][t];
        Counts n;
        if (batch.empty()) {
          n = validate_all(kinds[kk]);
        } else if (batch.size() > 1) {
          // A batch on a solver of its own, dropped after it: what a batch leaves in a solver (its
          // clauses, learned and popped) slows the one-state queries that follow (four-level shape,
          // cvc5: 3.8 ms per state after no batch, about 12 ms after the last level's).
          smt::Solver own(kinds[kk], closure_options);
          const auto own_enc = spec.make(own);
          n = close_batch(kinds[kk], own, *own_enc, batch);
        } else {
          n = close_state(kinds[kk], *solver[kk], *enc[kk], batch[0]);
        }
        std::lock_guard<std::mutex> lock(mu);
        EnumerationResult& r = res[kk];
        r.closure_edges += n.edges;
        r.validity_checks += n.checks;
        r.validity_seconds += n.validity_seconds;
        r.closure_seconds += n.closure_seconds;
        const int before = r.closure_states;
        r.closure_states += static_cast<int>(batch.size());
        if (++done[kk] == batches[kk].size()) r.seconds = since(t_all);
        if (opt.state_closed)
          for (std::size_t b = 0; b < batch.size(); ++b) opt.state_closed(todo.size() * K);
        if (opt.progress && r.closure_states / 200 != before / 200)
          opt.progress(fmt::format("{}: {} of {} states closed", to_string(kinds[kk]), r.closure_states, todo.size()));
      }
      for (std::size_t kk = 0; kk < K; ++kk)
        if (solver[kk]) {
          {
            std::lock_guard<std::mutex> lock(mu);
            res[kk].terms = std::max(res[kk].terms, solver[kk]->num_terms());
          }
          end_of_search(enc[kk], solver[kk], opt);
        }
    } catch (const std::bad_alloc&) {
      stop = true;
      throw;  // rethrown by run_workers after the join: reported as out of memory
    } catch (const std::exception& ex) {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
      if (first_error.empty()) first_error = ex.what();
    }
  };
  if (jobs > 1 && opt.progress) opt.progress(fmt::format("{} workers, one solver per kind each", jobs));
  engine::run_workers(
      jobs, worker, [&] { stop = true; }, "try fewer --jobs");
  if (!first_error.empty()) throw Error(first_error);
  for (std::size_t kk = 0; kk < K; ++kk) {
    if (!named[kk]) {  // no state to close
      name_run(res[kk], smt::Solver(kinds[kk], closure_options));
    }
    if (res[kk].seconds == 0) res[kk].seconds = since(t_all);
  }
  return res;
}

}  // namespace detail

namespace {

// The concrete encoding's step from a free start state (state bits of the graph's states).
class ConcreteStep : public detail::OneStep {
 public:
  ConcreteStep(smt::Solver& s, const SearchProblem& p, const SearchOptions& opt, const detail::StateGraph& g)
      : e_(s, p, opt, /*free_initial=*/true), g_(g) {
    e_.add_step();
  }
  Term state_is(int t, int u) override { return e_.state_is(t, g_.states.at(static_cast<std::size_t>(u))); }
  Term goal(int t) override { return e_.goal(t); }
  Term chosen(int i) override { return e_.chosen(1, i); }

 private:
  Encoder e_;
  const detail::StateGraph& g_;
};

}  // namespace

std::vector<EnumerationResult> confirm_by_closure(const std::vector<smt::SolverKind>& kinds, const SearchProblem& p,
                                                  const std::vector<engine::Program>& programs, int max_size,
                                                  const SearchOptions& opt,
                                                  const std::function<std::string(const engine::Program&)>& name) {
  check_problem(p, max_size);
  if (kinds.empty()) throw Error("the closure check needs at least one solver");
  const detail::StateGraph g = detail::reachable_states(p, max_size);
  detail::ClosureSpec spec;
  spec.make = [&](smt::Solver& s) { return std::make_unique<ConcreteStep>(s, p, opt, g); };
  return detail::closure_run(kinds, p, g, programs, max_size, opt, name, spec);
}

EnumerationResult confirm_by_closure(smt::SolverKind kind, const SearchProblem& p,
                                     const std::vector<engine::Program>& programs, int max_size,
                                     const SearchOptions& opt,
                                     const std::function<std::string(const engine::Program&)>& name) {
  return confirm_by_closure(std::vector<smt::SolverKind>{kind}, p, programs, max_size, opt, name).front();
}

std::optional<engine::Program> find_program(smt::SolverKind kind, const SearchProblem& p, int n,
                                            const SearchOptions& opt) {
  check_problem(p, n);
  smt::Solver s(kind, solver_options(opt));
  Encoder e(s, p, opt);
  while (e.steps() < n) e.add_step();
  const smt::Result r = check(s, open_bound(s, e, p, n, opt));
  if (r == smt::Result::unknown) unknown(s, "at bound " + std::to_string(n), opt);
  if (r == smt::Result::unsat) return std::nullopt;
  return e.model_program(n);
}

EnumerationResult find_shortest(smt::SolverKind kind, const SearchProblem& p, int max_size, const SearchOptions& opt) {
  check_problem(p, max_size);
  const auto t_all = Clock::now();
  EnumerationResult res;
  auto s = std::make_unique<smt::Solver>(kind, solver_options(opt));
  auto e = std::make_unique<Encoder>(*s, p, opt);
  name_run(res, *s);
  for (int n = 1; n <= max_size && res.shortest == 0; ++n) {
    const auto t0 = Clock::now();
    BoundFact f;
    const std::vector<Term> bound = begin_bound(*s, *e, p, n, opt, t0, f);
    const auto tc = Clock::now();
    const smt::Result r = check(*s, bound);
    if (r == smt::Result::unknown) unknown(*s, "at bound " + std::to_string(n), opt);
    if (r == smt::Result::sat) {
      f.sat_seconds = since(tc);
      res.programs.push_back(e->model_program(n));
      if (opt.keep_states) res.states.push_back(e->model_states(n));
      res.shortest = n;
      f.programs = 1;
      f.final_result = smt::Result::sat;
    } else {
      f.final_seconds = since(tc);
      if (opt.proofs) f.proof = s->proof();
    }
    if (opt.push_pop) s->pop();
    f.seconds = since(t0);
    res.bounds.push_back(std::move(f));
  }
  res.terms = s->num_terms();
  res.seconds = since(t_all);
  end_of_search(e, s, opt);
  return res;
}

bool encoding_accepts(smt::SolverKind kind, const SearchProblem& p, const engine::Program& prog,
                      const SearchOptions& opt) {
  const int n = static_cast<int>(prog.size());
  check_problem(p, n);
  smt::Solver s(kind, solver_options(opt));
  Encoder e(s, p, opt);
  while (e.steps() < n) e.add_step();
  std::vector<Term> as = open_bound(s, e, p, n, opt);
  for (int t = 1; t <= n; ++t) {
    if (prog[static_cast<std::size_t>(t - 1)] < 0 ||
        prog[static_cast<std::size_t>(t - 1)] >= static_cast<int>(p.instructions.size()))
      return false;
    as.push_back(e.chosen(t, prog[static_cast<std::size_t>(t - 1)]));
  }
  const smt::Result r = check(s, as);
  if (r == smt::Result::unknown) unknown(s, "on a fixed program", opt);
  return r == smt::Result::sat;
}

}  // namespace p2v::encodings
