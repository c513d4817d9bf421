#include "p2v/engine/derive.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <deque>
#include <set>

#include "p2v/engine/counting.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/notation.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"

#include <chrono>

namespace p2v::engine {

namespace {
using C = Collective;

// The lowered group of every device (-1 when in none).
std::vector<int> group_index(const Groups& g, int k) {
  std::vector<int> v(static_cast<std::size_t>(k), -1);
  for (std::size_t i = 0; i < g.size(); ++i)
    for (int d : g[i]) v[static_cast<std::size_t>(d)] = static_cast<int>(i);
  return v;
}
}  // namespace

RuleMoves::RuleMoves(const SynthesisHierarchy& h, MasterCollectives mc) : h_(h) {
  k_ = static_cast<int>(h.to_system.size()) * h.num_local();
  ins_ = instructions(h, mc);
  for (const auto& in : ins_) steps_.push_back({in.collective, lower_groups(h, in.grouping.groups)});
  for (const auto& s : steps_)
    if (std::find(groupings_.begin(), groupings_.end(), s.groups) == groupings_.end()) groupings_.push_back(s.groups);
}

bool RuleMoves::available(const LoweredStep& s) const {
  return std::find(steps_.begin(), steps_.end(), s) != steps_.end();
}

std::string RuleMoves::form_of(const LoweredStep& s) const {
  for (std::size_t i = 0; i < steps_.size(); ++i)
    if (steps_[i].groups == s.groups) return form_name(h_, ins_[i].grouping);
  return "";
}

// x and y cut every group of g into a grid: each x-group and y-group lies in one g-group, they
// cover g's devices, and an x-group and a y-group of the same g-group meet in exactly one device.
bool RuleMoves::product(const Groups& g, const Groups& x, const Groups& y) const {
  if (x == g || y == g) return false;
  const auto gi = group_index(g, k_), xi = group_index(x, k_), yi = group_index(y, k_);
  for (int d = 0; d < k_; ++d) {
    const bool in = gi[static_cast<std::size_t>(d)] >= 0;
    if (in != (xi[static_cast<std::size_t>(d)] >= 0) || in != (yi[static_cast<std::size_t>(d)] >= 0)) return false;
  }
  for (const auto& xs : x) {
    const int gg = gi[static_cast<std::size_t>(xs[0])];
    for (int d : xs)
      if (gi[static_cast<std::size_t>(d)] != gg) return false;
  }
  for (const auto& ys : y) {
    const int gg = gi[static_cast<std::size_t>(ys[0])];
    for (int d : ys)
      if (gi[static_cast<std::size_t>(d)] != gg) return false;
  }
  // |x ∩ y| == 1 for x, y in the same g-group: |g| = |x| * |y| and pairs distinct.
  for (const auto& gs : g) {
    const std::size_t nx = x[static_cast<std::size_t>(xi[static_cast<std::size_t>(gs[0])])].size();
    const std::size_t ny = y[static_cast<std::size_t>(yi[static_cast<std::size_t>(gs[0])])].size();
    if (nx < 2 || ny < 2 || nx * ny != gs.size()) return false;
    std::set<std::pair<int, int>> seen;
    for (int d : gs)
      if (!seen.insert({xi[static_cast<std::size_t>(d)], yi[static_cast<std::size_t>(d)]}).second) return false;
  }
  return true;
}

std::vector<std::pair<RuleApplication, LoweredProgram>> RuleMoves::expand(const LoweredStep& s, int pos) const {
  std::vector<std::pair<RuleApplication, LoweredProgram>> out;
  auto add = [&](const char* rule, LoweredProgram p) {
    for (const auto& x : p)
      if (!available(x)) return;
    out.push_back({RuleApplication{rule, pos, false}, std::move(p)});
  };
  const Groups& G = s.groups;
  if (s.collective == C::AllReduce) {
    add("ar-rs-ag", {{C::ReduceScatter, G}, {C::AllGather, G}});
    add("ar-bcast-reduce", {{C::Reduce, G}, {C::Broadcast, G}});
  }
  for (const auto& X : groupings_)
    for (const auto& Y : groupings_) {
      if (!product(G, X, Y)) continue;
      // X is the "rows" grouping when its groups are the inner (consecutive) ones.
      const bool rows_first = X[0].size() > 1 && X[0][1] - X[0][0] < Y[0][1] - Y[0][0];
      switch (s.collective) {
        case C::AllReduce:
          add(rows_first ? "ar-2d-rows-cols" : "ar-2d-cols-rows", {{C::AllReduce, X}, {C::AllReduce, Y}});
          add("ar-hier", {{C::ReduceScatter, X}, {C::AllReduce, Y}, {C::AllGather, X}});
          break;
        case C::ReduceScatter:
          add("rs-2d", {{C::ReduceScatter, X}, {C::ReduceScatter, Y}});
          break;
        case C::AllGather:
          add("ag-2d", {{C::AllGather, X}, {C::AllGather, Y}});
          break;
        default:
          break;
      }
    }
  return out;
}

std::vector<std::pair<RuleApplication, LoweredProgram>> RuleMoves::moves(const LoweredProgram& p, bool reverse) const {
  std::vector<std::pair<RuleApplication, LoweredProgram>> out;
  const int n = static_cast<int>(p.size());
  for (int i = 0; i < n; ++i) {
    for (auto& [app, rep] : expand(p[static_cast<std::size_t>(i)], i)) {
      LoweredProgram q(p.begin(), p.begin() + i);
      q.insert(q.end(), rep.begin(), rep.end());
      q.insert(q.end(), p.begin() + i + 1, p.end());
      out.push_back({app, std::move(q)});
    }
    if (!reverse) continue;
    // Reverse: a window equal to a forward expansion of a single available step contracts to it.
    for (const auto& cand : steps_) {
      for (auto& [app, rep] : expand(cand, i)) {
        const int len = static_cast<int>(rep.size());
        if (i + len > n || !std::equal(rep.begin(), rep.end(), p.begin() + i)) continue;
        LoweredProgram q(p.begin(), p.begin() + i);
        q.push_back(cand);
        q.insert(q.end(), p.begin() + i + len, p.end());
        RuleApplication a = app;
        a.reverse = true;
        out.push_back({a, std::move(q)});
      }
    }
  }
  return out;
}

bool RuleMoves::equal(const LoweredProgram& a, const LoweredProgram& b) const {
  return !first_difference(run_counting(k_, a), run_counting(k_, b));
}

DeriveResult derive(const RuleMoves& m, const Groups& groups, const DeriveOptions& opt) {
  const LoweredStep start{C::AllReduce, groups};
  if (!m.available(start)) throw Error("AllReduce over the reduction groups is not an instruction of the hierarchy");
  DeriveResult res;
  std::set<LoweredProgram> seen{{start}};
  res.programs.push_back({{start}, {}});
  const CountState goal = run_counting(m.devices(), {start});
  for (std::size_t qi = 0; qi < res.programs.size(); ++qi) {
    const DerivedProgram cur = res.programs[qi];
    for (auto& [app, q] : m.moves(cur.program, false)) {
      if (static_cast<int>(q.size()) > opt.max_size || seen.count(q)) continue;
      ++res.applications;
      seen.insert(q);
      if (first_difference(goal, run_counting(m.devices(), q))) {
        ++res.rejected;
        continue;
      }
      DerivedProgram d{std::move(q), cur.derivation};
      d.derivation.push_back(app);
      res.programs.push_back(std::move(d));
      if (opt.max_programs && static_cast<std::int64_t>(res.programs.size()) >= opt.max_programs) {
        res.truncated = true;
        return res;
      }
    }
  }
  return res;
}

std::string derivation_text(const std::vector<RuleApplication>& d) {
  if (d.empty()) return "(start)";
  std::string t;
  for (const auto& a : d)
    t += fmt::format("{}{}{}@{}", t.empty() ? "" : ", ", a.reverse ? "~" : "", a.rule, a.position + 1);
  return t;
}

DeriveComparison compare_with_enumerator(const Placement& p, const std::vector<std::string>& level_names,
                                         const DeriveOptions& opt) {
  DeriveComparison c;
  c.hierarchy = make_hierarchy(p, level_names, HierarchyKind::ReductionAxes);
  const RuleMoves m(c.hierarchy, opt.master);
  const auto t0 = std::chrono::steady_clock::now();
  c.derived = derive(m, p.reduction_groups(), opt);
  c.derive_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  SynthOptions so;
  so.max_size = opt.max_size;
  so.master = opt.master;
  const SynthResult r = synthesize(c.hierarchy, local_goal_groups(c.hierarchy, p), so);
  std::set<LoweredProgram> enumerated;
  for (const auto& prog : r.programs) enumerated.insert(lower(r, prog));
  c.enumerated = static_cast<std::int64_t>(enumerated.size());
  std::set<LoweredProgram> derived;
  const int k = m.devices();
  for (const auto& d : c.derived.programs) {
    derived.insert(d.program);
    if (enumerated.count(d.program)) {
      ++c.common;
      continue;
    }
    // Why the enumerator does not list it: the first boolean precondition that fails.
    StateSet s = StateSet::initial(k), t(k);
    std::string why;
    for (std::size_t i = 0; i < d.program.size() && why.empty(); ++i) {
      if (s.apply(d.program[i].collective, d.program[i].groups, t, &why))
        s = t;
      else
        why = fmt::format("step {}: {}", i + 1, why);
    }
    if (why.empty()) why = "valid under the boolean semantics, yet not enumerated (a discrepancy)";
    c.only_derived.push_back({program_notation(c.hierarchy, d.program), why, derivation_text(d.derivation)});
  }
  for (const auto& e : enumerated) {
    if (derived.count(e)) continue;
    std::string reason;
    for (const auto& st : e)
      if (m.form_of(st).rfind("Master", 0) == 0) reason = "has a Master step: no rule introduces Master groupings";
    if (reason.empty())
      for (const auto& st : e)
        if (st.collective == C::Reduce || st.collective == C::Broadcast) {
          bool paired = false;
          for (std::size_t i = 0; i + 1 < e.size(); ++i)
            paired = paired || (e[i].collective == C::Reduce && e[i + 1].collective == C::Broadcast &&
                                e[i].groups == e[i + 1].groups);
          if (!paired) reason = "uses Reduce/Broadcast other than as Reduce ; Broadcast on one group (no rule for it)";
        }
    if (reason.empty())
      reason =
          "no sequence of rewrite rules from AllReduce reaches it (e.g. it needs a rule for groupings that are "
          "not a product of two groupings, or for a non-aligned block layout)";
    c.only_enumerator.push_back({program_notation(c.hierarchy, e), reason, ""});
  }
  return c;
}

}  // namespace p2v::engine
