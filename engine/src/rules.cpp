#include "p2v/engine/rules.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <functional>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

namespace {

using C = Collective;

GridStep st(C c, std::vector<int> axes, int shift = -1) { return {c, std::move(axes), shift, -1, 0}; }
GridStep only(C c, std::vector<int> axes, int axis, int value) { return {c, std::move(axes), -1, axis, value}; }

Rule rule(std::string id, std::string title, std::string cond, int arity, RuleSide l, RuleSide r, bool holds = true,
          bool rewrite = false, RuleCompare cmp = RuleCompare::Equal) {
  Rule x;
  x.id = std::move(id);
  x.title = std::move(title);
  x.side_conditions = std::move(cond);
  x.arity = arity;
  x.lhs = std::move(l);
  x.rhs = std::move(r);
  x.holds = holds;
  x.rewrite = rewrite;
  x.compare = cmp;
  return x;
}

// The L-level hierarchical AllReduce: RS over the innermost axes outward, AR over axis 0, AG back.
RuleSide hierarchical(int L) {
  RuleSide s;
  for (int a = L - 1; a >= 1; --a) s.steps.push_back(st(C::ReduceScatter, {a}));
  s.steps.push_back(st(C::AllReduce, {0}));
  for (int a = 1; a < L; ++a) s.steps.push_back(st(C::AllGather, {a}));
  return s;
}

std::vector<Rule> make_catalog() {
  const RuleSide id{};
  auto one = [](GridStep s) { return RuleSide{{}, {std::move(s)}}; };
  auto seq = [](std::vector<GridStep> v) { return RuleSide{{}, std::move(v)}; };
  auto lay = [](std::vector<GridStep> l, std::vector<GridStep> v) { return RuleSide{std::move(l), std::move(v)}; };
  const std::vector<int> A{0}, B{1}, AB{0, 1};
  std::vector<Rule> c;
  c.push_back(rule("ar-rs-ag", "AllReduce = AllGather after ReduceScatter on one group",
                   "same group, same member order (member i holds block i between the steps)", 1,
                   one(st(C::AllReduce, A)), seq({st(C::ReduceScatter, A), st(C::AllGather, A)}), true, true));
  c.push_back(rule("ar-bcast-reduce", "AllReduce = Broadcast after Reduce", "same group, same root", 1,
                   one(st(C::AllReduce, A)), seq({st(C::Reduce, A), st(C::Broadcast, A)}), true, true));
  c.push_back(rule("ar-2d-rows-cols", "AllReduce over a product group = AllReduce(rows) then AllReduce(cols)",
                   "the group is the product of the row and column groups (they meet in one device)", 2,
                   one(st(C::AllReduce, AB)), seq({st(C::AllReduce, B), st(C::AllReduce, A)}), true, true));
  c.push_back(rule("ar-2d-cols-rows", "AllReduce over a product group = AllReduce(cols) then AllReduce(rows)",
                   "the group is the product of the row and column groups", 2, one(st(C::AllReduce, AB)),
                   seq({st(C::AllReduce, A), st(C::AllReduce, B)}), true, true));
  c.push_back(rule("ar-hier",
                   "hierarchical AllReduce = ReduceScatter(rows) ; AllReduce(cols, owned block) ; AllGather(rows)",
                   "product group; the column AllReduce runs on the block each device owns, which is the same "
                   "for all members of a column (same row position)",
                   2, one(st(C::AllReduce, AB)), hierarchical(2), true, true));
  c.push_back(rule("ar-hier-3", "3-level hierarchical AllReduce: RS(c) ; RS(b) ; AR(a) ; AG(b) ; AG(c)",
                   "product group of three axes; every ReduceScatter splits the block its group owns", 3,
                   one(st(C::AllReduce, {0, 1, 2})), hierarchical(3)));
  c.push_back(rule("ar-hier-4", "4-level hierarchical AllReduce: RS(d) ; RS(c) ; RS(b) ; AR(a) ; AG(b) ; AG(c) ; AG(d)",
                   "product group of four axes", 4, one(st(C::AllReduce, {0, 1, 2, 3})), hierarchical(4)));
  c.push_back(rule("rs-2d", "ReduceScatter over a product group = ReduceScatter(cols) then ReduceScatter(rows)",
                   "row-major layout: device (a,b) ends with block a*n_b+b", 2, one(st(C::ReduceScatter, AB)),
                   seq({st(C::ReduceScatter, A), st(C::ReduceScatter, B)}), true, true));
  c.push_back(rule("rs-2d-transposed",
                   "ReduceScatter over a product group = ReduceScatter(rows) then ReduceScatter(cols)",
                   "column-major layout: device (a,b) ends with block b*n_a+a (member order {b,a})", 2,
                   one(st(C::ReduceScatter, {1, 0})), seq({st(C::ReduceScatter, B), st(C::ReduceScatter, A)})));
  c.push_back(rule("ag-2d", "AllGather over a product group = AllGather(rows) then AllGather(cols)",
                   "from the row-major layout of ReduceScatter{a,b} (device (a,b) owns block a*n_b+b)", 2,
                   lay({st(C::ReduceScatter, AB)}, {st(C::AllGather, AB)}),
                   lay({st(C::ReduceScatter, AB)}, {st(C::AllGather, B), st(C::AllGather, A)}), true, true));
  c.push_back(rule("adj-ar", "adjoint: AllReduce is self-adjoint", "none", 1, one(st(C::AllReduce, A)),
                   one(st(C::AllReduce, A)), true, false, RuleCompare::Transpose));
  c.push_back(rule("adj-rs-ag", "adjoint: the transpose of ReduceScatter is AllGather",
                   "the AllGather starts from the ReduceScatter's layout", 1, one(st(C::ReduceScatter, A)),
                   lay({st(C::ReduceScatter, A)}, {st(C::AllGather, A)}), true, false, RuleCompare::Transpose));
  c.push_back(rule("adj-ag-rs", "adjoint: the transpose of AllGather is ReduceScatter",
                   "the AllGather starts from the ReduceScatter's layout", 1,
                   lay({st(C::ReduceScatter, A)}, {st(C::AllGather, A)}), one(st(C::ReduceScatter, A)), true, false,
                   RuleCompare::Transpose));
  c.push_back(rule("adj-reduce-bcast", "adjoint: the transpose of Reduce is Broadcast", "same root", 1,
                   one(st(C::Reduce, A)), one(st(C::Broadcast, A)), true, false, RuleCompare::Transpose));
  c.push_back(rule("adj-bcast-reduce", "adjoint: the transpose of Broadcast is Reduce", "same root", 1,
                   one(st(C::Broadcast, A)), one(st(C::Reduce, A)), true, false, RuleCompare::Transpose));
  c.push_back(rule(
      "adj-hier", "adjoint of a program: the backward of RS(b) ; AR(a) ; AG(b) is AG^T ; AR^T ; RS^T = itself",
      "steps reversed, each transposed", 2, hierarchical(2), hierarchical(2), true, false, RuleCompare::Transpose));
  c.push_back(rule("commute-ar-rs", "independent steps commute: AllReduce and ReduceScatter on disjoint groups",
                   "the groups of the two steps are disjoint (rows a=0 and a=1)", 2,
                   seq({only(C::AllReduce, B, 0, 0), only(C::ReduceScatter, B, 0, 1)}),
                   seq({only(C::ReduceScatter, B, 0, 1), only(C::AllReduce, B, 0, 0)})));
  c.push_back(rule("commute-reduce-ag", "independent steps commute: Reduce and AllGather on disjoint groups",
                   "disjoint groups (rows a=0 and a=1)", 2,
                   seq({only(C::Reduce, B, 0, 0), only(C::AllGather, B, 0, 1)}),
                   seq({only(C::AllGather, B, 0, 1), only(C::Reduce, B, 0, 0)})));
  c.push_back(rule("commute-bcast-ar", "independent steps commute: Broadcast and AllReduce on disjoint groups",
                   "disjoint groups (columns b=0 and b=1)", 2,
                   seq({only(C::Broadcast, A, 1, 0), only(C::AllReduce, A, 1, 1)}),
                   seq({only(C::AllReduce, A, 1, 1), only(C::Broadcast, A, 1, 0)})));
  // Negative rules: refuted with a smallest counterexample.
  c.push_back(rule("neg-ar-ar", "AllReduce twice is not AllReduce (it multiplies by the group size)",
                   "none: false for every group of 2 or more", 1, seq({st(C::AllReduce, A), st(C::AllReduce, A)}),
                   one(st(C::AllReduce, A)), false));
  c.push_back(rule("neg-rs-ag-id", "ReduceScatter after AllGather is not the identity",
                   "from the ReduceScatter layout; false for every group of 2 or more", 1,
                   lay({st(C::ReduceScatter, A)}, {st(C::AllGather, A), st(C::ReduceScatter, A)}),
                   lay({st(C::ReduceScatter, A)}, {}), false));
  c.push_back(rule("neg-reduce-bcast-id", "Reduce after Broadcast is not the identity",
                   "false for every group of 2 or more", 1, seq({st(C::Broadcast, A), st(C::Reduce, A)}), id, false));
  c.push_back(rule("neg-ar-2d-overlap",
                   "the 2-D rule on overlapping groups: AllReduce{a,b} is not AllReduce{b} ; AllReduce{a,b}",
                   "the second group overlaps the first in more than one device", 2, one(st(C::AllReduce, AB)),
                   seq({st(C::AllReduce, B), st(C::AllReduce, AB)}), false));
  c.push_back(rule("neg-hier-wrong-block", "the hierarchical rule with a wrong block index",
                   "the row ReduceScatter's layout is rotated by the column coordinate, so the column AllReduce "
                   "sums different blocks",
                   2, one(st(C::AllReduce, AB)),
                   seq({st(C::ReduceScatter, B, 0), st(C::AllReduce, A), st(C::AllGather, B)}), false));
  return c;
}

}  // namespace

const std::vector<Rule>& rule_catalog() {
  static const std::vector<Rule> c = make_catalog();
  return c;
}

const Rule& find_rule(const std::string& id) {
  std::string ids;
  for (const auto& r : rule_catalog()) {
    if (r.id == id) return r;
    ids += (ids.empty() ? "" : ", ") + r.id;
  }
  throw Error(fmt::format("unknown rule '{}'; rules: {} (see `p2v rules list`)", id, ids));
}

std::string grid_step_text(const GridStep& s) {
  auto ax = [](int a) { return std::string(1, static_cast<char>('a' + a)); };
  std::string t = std::string(to_string(s.collective)) + "{";
  for (std::size_t i = 0; i < s.axes.size(); ++i) t += (i ? "," : "") + ax(s.axes[i]);
  t += "}";
  if (s.shift_axis >= 0) t += "+" + ax(s.shift_axis);
  if (s.only_axis >= 0) t += fmt::format("|{}={}", ax(s.only_axis), s.only_value);
  return t;
}

std::string rule_side_text(const RuleSide& s) {
  std::string t;
  if (!s.layout.empty()) {
    t = "[layout:";
    for (const auto& x : s.layout) t += " " + grid_step_text(x);
    t += "] ";
  }
  if (s.steps.empty()) return t + "id";
  for (std::size_t i = 0; i < s.steps.size(); ++i) t += (i ? " ; " : "") + grid_step_text(s.steps[i]);
  return t;
}

std::vector<std::vector<int>> grid_shapes(int arity, int max_devices, int min_axis) {
  std::vector<std::vector<int>> out;
  std::vector<int> cur;
  std::function<void(int)> rec = [&](int prod) {
    if (static_cast<int>(cur.size()) == arity) {
      if (prod >= 2) out.push_back(cur);
      return;
    }
    for (int n = std::max(1, min_axis); n <= max_devices / prod; ++n) {  // prod * n <= max_devices, no overflow
      cur.push_back(n);
      rec(prod * n);
      cur.pop_back();
    }
  };
  rec(1);
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    int px = 1, py = 1;
    for (int v : x) px *= v;
    for (int v : y) py *= v;
    return px < py;
  });
  return out;
}

LoweredProgram lower_grid(const std::vector<GridStep>& steps, const std::vector<int>& shape) {
  const int L = static_cast<int>(shape.size());
  int k = 1;
  for (int n : shape) k *= n;
  auto coords = [&](int d) {
    std::vector<int> c(L);
    for (int a = L - 1; a >= 0; --a) {
      c[a] = d % shape[a];
      d /= shape[a];
    }
    return c;
  };
  auto device = [&](const std::vector<int>& c) {
    int d = 0;
    for (int a = 0; a < L; ++a) d = d * shape[a] + c[a];
    return d;
  };
  LoweredProgram out;
  for (const auto& s : steps) {
    for (int a : s.axes)
      if (a < 0 || a >= L)
        throw Error(fmt::format("grid step {} uses axis {} of a {}-axis grid", grid_step_text(s), a, L));
    LoweredStep ls{s.collective, {}};
    for (int d = 0; d < k; ++d) {
      auto c = coords(d);
      bool first = true;  // d is the group's representative: coordinates 0 on the varying axes
      for (int a : s.axes) first = first && c[a] == 0;
      if (!first) continue;
      if (s.only_axis >= 0 && c[s.only_axis] != s.only_value) continue;
      // Members in mixed radix over s.axes (listed order, first most significant).
      int g = 1;
      for (int a : s.axes) g *= shape[a];
      std::vector<int> members(g);
      for (int i = 0; i < g; ++i) {
        int rest = i;
        for (int x = static_cast<int>(s.axes.size()) - 1; x >= 0; --x) {
          c[s.axes[x]] = rest % shape[s.axes[x]];
          rest /= shape[s.axes[x]];
        }
        members[i] = device(c);
      }
      if (s.shift_axis >= 0) {
        // Member index (i + c_s) mod g: position p holds the device whose natural index is p - c_s.
        const int sh = coords(d)[s.shift_axis] % g;
        std::vector<int> rot(g);
        for (int i = 0; i < g; ++i) rot[(i + sh) % g] = members[i];
        members = std::move(rot);
      }
      ls.groups.push_back(std::move(members));
    }
    out.push_back(std::move(ls));
  }
  return out;
}

CountState run_lowered_side(int k, const LoweredProgram& layout, const LoweredProgram& steps) {
  CountState s(k);
  for (const auto& x : layout) s.apply(x);
  s.reset_multiplicities();
  for (const auto& x : steps) s.apply(x);
  return s;
}

CountState run_side(const RuleSide& side, const std::vector<int>& shape) {
  int k = 1;
  for (int n : shape) k *= n;
  return run_lowered_side(k, lower_grid(side.layout, shape), lower_grid(side.steps, shape));
}

std::optional<CountDifference> compare_counting(const CountState& a, const CountState& b, RuleCompare compare) {
  if (compare == RuleCompare::Equal) return first_difference(a, b);
  if (a.k() != b.k()) throw Error(fmt::format("cannot compare states of {} and {} devices", a.k(), b.k()));
  const int k = a.k();
  for (int d = 0; d < k; ++d)
    for (int r = 0; r < k; ++r)
      for (int j = 0; j < k; ++j) {
        const std::int64_t x = a.owns(d, r) ? a.mult(d, r, j) : 0;
        const std::int64_t y = b.owns(j, r) ? b.mult(j, r, d) : 0;
        if (x != y) return CountDifference{d, r, j, x, y};
      }
  return std::nullopt;
}

}  // namespace p2v::engine
