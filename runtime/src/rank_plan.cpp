// Rank-local plans (rank_plan.hpp): a rank replays the state semantics for itself, and for the
// members whose rows a step needs (AllGather, Broadcast), memoized per (step, rank).
#include "p2v/runtime/rank_plan.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "p2v/engine/error.hpp"
#include "plan_detail.hpp"

namespace p2v::runtime {

engine::Shape program_grid(const std::vector<int>& system_cards, const std::vector<std::string>& system_names,
                           const engine::ParallelismMatrix& x, const std::vector<int>& reduce,
                           engine::HierarchyKind kind) {
  using K = engine::HierarchyKind;
  if (engine::is_reduction_kind(kind)) return engine::make_shape(system_cards, system_names, x, reduce, kind);
  // (a) is (d) collapsed over every axis, (c) is (d) uncollapsed over every axis, (b) is (c)
  // with its levels in column order. Every digit is a level's part, so Master steps fix every
  // other digit to 0: the one group of docs/model.md §5.
  std::vector<int> all(x.size());
  std::iota(all.begin(), all.end(), 0);
  engine::Shape s = engine::make_shape(system_cards, system_names, x, all,
                                       kind == K::System ? K::ReductionAxes : K::ReductionUncollapsed);
  if (kind == K::ColumnBased) {
    auto first = s.levels.begin() + (s.levels.size() > 0 && s.levels[0].parts.empty() ? 1 : 0);
    std::stable_sort(first, s.levels.end(), [](const engine::ShapeLevel& a, const engine::ShapeLevel& b) {
      return a.parts[0].second < b.parts[0].second;
    });
  }
  s.kind = kind;
  return s;
}

engine::GroupPattern reduction_pattern(const engine::Shape& grid, const std::vector<int>& reduce) {
  engine::GroupPattern g;
  for (std::size_t j = 0; j < grid.system_cards.size(); ++j)
    for (int i : reduce)
      if (grid.x[i][j] > 1) g.vary.push_back({i, static_cast<int>(j), grid.x[i][j]});
  for (const auto& d : g.vary) g.group_size *= d.factor;
  g.num_groups = grid.num_devices() / g.group_size;
  return g;
}

namespace {

std::string digits_text(const std::vector<engine::Digit>& ds, const std::vector<std::string>& names) {
  std::string s;
  for (const auto& d : ds) {
    if (!s.empty()) s += ' ';
    s += fmt::format("{}.{}", names[d.level], d.axis);
  }
  return s;
}

}  // namespace

namespace {

// "w*f" of every digit of `ds` (in that order): its place value in the device number and factor.
std::string weights_text(std::vector<engine::Digit> ds, const engine::Shape& grid) {
  engine::GroupPattern p;
  p.vary = std::move(ds);
  std::string s;
  std::int64_t place = 1;
  for (auto it = p.vary.rbegin(); it != p.vary.rend(); ++it) {
    s = fmt::format("{}*{} ", engine::member_of(p, grid, 0, place), it->factor) + s;
    place *= it->factor;
  }
  return s;
}

}  // namespace

std::string pattern_key(const engine::GroupPattern& g, const engine::Shape& grid) {
  // Groups are the classes of devices equal outside the varying digits (for Master: only the
  // class with zeros on the other grid digits): the varying digits' place values and factors,
  // and for Master those of the zero digits, identify them on any placement of the system.
  std::string k = "vary " + weights_text(g.vary, grid);
  if (g.master) {
    std::vector<engine::Digit> zero;
    for (std::size_t j = 0; j < grid.system_cards.size(); ++j)
      for (int i : grid.reduce) {
        const engine::Digit d{i, static_cast<int>(j), grid.x[i][j]};
        if (d.factor > 1 && std::find(g.vary.begin(), g.vary.end(), d) == g.vary.end()) zero.push_back(d);
      }
    k += "zero " + weights_text(std::move(zero), grid);
  }
  return k;
}

std::string describe_pattern(const engine::GroupPattern& g, const engine::Shape& grid) {
  return fmt::format("{} x {} [{}]{}", g.num_groups, g.group_size, digits_text(g.vary, grid.system_names),
                     g.master ? ", Master" : "");
}

Membership membership(const engine::GroupPattern& g, const engine::Shape& grid, std::int64_t rank) {
  Membership m;
  m.key = pattern_key(g, grid);
  m.group_size = static_cast<int>(g.group_size);
  const auto [group, member] = engine::group_of(g, grid, rank);
  m.group = group;
  m.member = member;
  return m;
}

namespace {

// Where a rank is in a step's groups, without the key (the replay asks this for many ranks).
struct Place {
  std::int64_t group = -1;
  int member = -1, size = 0;
  bool active() const { return group >= 0 && size >= 2; }
};
Place place_of(const engine::GroupPattern& g, const engine::Shape& grid, std::int64_t rank) {
  const auto [group, member] = engine::group_of(g, grid, rank);
  return {group, member, static_cast<int>(g.group_size)};
}

// The rows every device holds, as one affine function of its digits: a device that holds rows
// after step s holds box[s] translated by sum over digits i and parts j of
// parts[s][i][j].stride * (the j-th part of its digit i), where a digit's parts are its
// mixed-radix digits over the parts' counts (outermost first). This is Lemma 1 of docs/shape.md
// (every holder holds F(x_D)) with the radix the ReduceScatters choose: a ReduceScatter splits the
// box among its member digits as RowSet::split does, and an AllGather turns its members' parts
// into dims. Built once per program in
// O(steps x digits); absent (nullopt) where a step leaves that form (a digit that neither divides
// nor is a multiple of a count, gathered blocks that interleave irregularly, a Master step that
// moves rows), and the replay then lists members explicitly.
struct AffineRows {
  using Parts = std::vector<Dim>;
  std::vector<engine::Digit> digits;
  std::vector<engine::GroupPattern> digit_patterns;  // one per digit: group_of(...).second = value
  std::vector<RowSet> box;                           // [step]
  std::vector<std::vector<Parts>> parts;             // [step][digit]

  std::size_t index(const engine::Digit& d) const {
    return static_cast<std::size_t>(std::find(digits.begin(), digits.end(), d) - digits.begin());
  }
  RowSet rows(std::size_t s, const engine::Shape& grid, std::int64_t device) const {
    std::int64_t off = 0;
    for (std::size_t i = 0; i < digits.size(); ++i)
      if (!parts[s][i].empty())
        off += digit_offset(parts[s][i], engine::group_of(digit_patterns[i], grid, device).second);
    return box[s].translated(off);
  }
  // An AllGather's members as a strided family (member order: the varying digits' parts).
  std::vector<Dim> family(std::size_t s, const engine::GroupPattern& g) const {
    std::vector<Dim> f;
    for (const auto& d : g.vary) {
      const Parts& ps = parts[s][index(d)];
      f.insert(f.end(), ps.begin(), ps.end());
    }
    return f;
  }
};

std::optional<AffineRows> affine_rows(const PatternProgram& p) {
  AffineRows a;
  for (const auto& st : p.steps)
    for (const auto& d : st.groups.vary)
      if (a.index(d) == a.digits.size()) {
        a.digits.push_back(d);
        engine::GroupPattern one;
        one.vary = {d};
        one.group_size = d.factor;
        a.digit_patterns.push_back(std::move(one));
      }
  a.box.push_back(RowSet{Intervals{{0, p.num_ranks()}}});
  a.parts.emplace_back(a.digits.size());
  for (const auto& st : p.steps) {
    RowSet box = a.box.back();
    std::vector<AffineRows::Parts> parts = a.parts.back();
    const auto& g = st.groups;
    const bool active = g.group_size >= 2;
    const Collective c = st.collective;
    if (active && g.master && (c == Collective::ReduceScatter || c == Collective::AllGather)) return std::nullopt;
    auto members_agree = [&] {  // the members hold the same rows
      return std::all_of(g.vary.begin(), g.vary.end(),
                         [&](const engine::Digit& d) { return parts[a.index(d)].empty(); });
    };
    if (active && c == Collective::ReduceScatter) {
      if (!members_agree()) return std::nullopt;
      std::vector<std::int64_t> factors;
      for (const auto& d : g.vary) factors.push_back(d.factor);
      auto sp = box.split(factors);
      if (!sp) return std::nullopt;
      for (std::size_t j = 0; j < g.vary.size(); ++j) parts[a.index(g.vary[j])] = std::move(sp->parts[j]);
      box = std::move(sp->first);
    } else if (active && c == Collective::AllGather) {
      std::vector<Dim> dims = box.dims();
      for (const auto& d : g.vary) {
        auto& ps = parts[a.index(d)];
        if (ps.empty()) return std::nullopt;  // members holding the same rows: not a valid AllGather
        dims.insert(dims.end(), ps.begin(), ps.end());
        ps.clear();
      }
      auto b = RowSet::box(box.box_begin(), box.box_len(), std::move(dims));
      if (!b) return std::nullopt;
      box = std::move(*b);
    } else if (active && c == Collective::Broadcast) {
      if (!members_agree()) return std::nullopt;  // the root's rows are every member's
    }
    a.box.push_back(std::move(box));
    a.parts.push_back(std::move(parts));
  }
  return a;
}

// The state semantics replayed for the ranks one rank needs: the layout (rows and where they
// are) of (step, rank), memoized; the full step only for the planning rank. Rows, not units.
// With affine rows, an AllGather's members are a strided family and only one member per pattern
// of zero and non-zero varying digits is replayed (their layouts, apart from a translation, depend
// on nothing else: docs/runtime.md "Plans at any size"); otherwise every member is.
class Replay {
 public:
  explicit Replay(const PatternProgram& p)
      : p_(p), n_(p.num_ranks()), affine_(affine_rows(p)), initial_{Space::Main, RowSet{Intervals{{0, n_}}}} {}

  bool affine() const { return affine_.has_value(); }

  // The layout after step s (1-based; 0 = the initial state) on rank d.
  const Layout& at(std::size_t s, std::int64_t d) {
    if (s == 0) return initial_;
    const std::int64_t key = static_cast<std::int64_t>(s) * n_ + d;
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    std::int64_t need[2] = {0, 0};
    RankStep rs = step(s, d, need);
    // References into an unordered_map stay valid when it grows.
    return memo_.emplace(key, std::move(rs.after)).first->second;
  }

  // Rank d's part of step s; raises need[] to the staging it uses.
  RankStep step(std::size_t s, std::int64_t d, std::int64_t need[2]) {
    const PatternStep& st = p_.steps[s - 1];
    const Place pl = place_of(st.groups, p_.grid, d);
    const Layout& own = at(s - 1, d);
    RankStep rs;
    if (!pl.active()) {  // idle, or a singleton: the rows stay where they are
      rs.after = own;
      return rs;
    }
    detail::StepContext c;
    c.collective = st.collective;
    c.member = pl.member;
    c.group_size = pl.size;
    c.layout = &own;
    RowSet first;
    if (st.collective == Collective::AllGather) {
      if (affine_) {
        first = affine_->rows(s - 1, p_.grid, pl.group);
        c.first = &first;
        c.family = affine_->family(s - 1, st.groups);
        c.all_home = all_home_by_pattern(s, st.groups, pl.group);
      } else {
        for (int i = 0; i < pl.size; ++i) {
          const Layout& l = at(s - 1, engine::member_of(st.groups, p_.grid, pl.group, i));
          c.members.push_back(&l.rows);
          c.all_home &= l.where == Space::Main;
        }
      }
    } else if (st.collective == Collective::Broadcast) {
      c.root_rows = &at(s - 1, pl.group).rows;
    }
    RowSet after;
    switch (st.collective) {
      case Collective::AllReduce:
        after = own.rows;
        break;
      case Collective::Reduce:
        if (pl.member == 0) after = own.rows;
        break;
      case Collective::ReduceScatter: {
        const std::int64_t q = own.rows.total() / pl.size;
        after = affine_ ? affine_->rows(s, p_.grid, d) : own.rows.slice(pl.member * q, q);
        break;
      }
      case Collective::AllGather:
        if (affine_) {
          after = affine_->rows(s, p_.grid, d);
        } else {
          Intervals all;
          for (const RowSet* r : c.members) {
            const Intervals v = r->intervals();
            all.insert(all.end(), v.begin(), v.end());
          }
          after = RowSet{detail::merge(std::move(all))};
        }
        break;
      case Collective::Broadcast:
        after = *c.root_rows;
        break;
    }
    c.after = &after;
    detail::build_rank_step(c, rs, need);
    rs.comm = 0;
    return rs;
  }

  // The contributing ranks of row r on rank d after step s (sorted).
  std::vector<int> columns(std::size_t s, std::int64_t d, std::int64_t r) {
    if (s == 0) return {static_cast<int>(d)};
    const PatternStep& st = p_.steps[s - 1];
    const Place m = place_of(st.groups, p_.grid, d);
    if (!m.active()) return columns(s - 1, d, r);
    switch (st.collective) {
      case Collective::AllReduce:
      case Collective::ReduceScatter:
      case Collective::Reduce: {
        std::vector<int> out;
        for (int i = 0; i < m.size; ++i) {
          const auto c = columns(s - 1, engine::member_of(st.groups, p_.grid, m.group, i), r);
          out.insert(out.end(), c.begin(), c.end());
        }
        std::sort(out.begin(), out.end());
        return out;
      }
      case Collective::AllGather:
        for (int i = 0; i < m.size; ++i) {
          const std::int64_t o = engine::member_of(st.groups, p_.grid, m.group, i);
          if (at(s - 1, o).rows.contains(r)) return columns(s - 1, o, r);
        }
        return {};
      case Collective::Broadcast:
        return columns(s - 1, m.group, r);
    }
    return {};
  }

 private:
  // Whether every member of the group is at home before step s. A member's layout depends, up to
  // a translation of its rows, only on which of its digits are 0 (every choice the plan makes
  // tests a member's position for 0, or a Master group's other digits for 0, or compares shapes
  // that translations keep), so one member per pattern of zero varying digits stands for all:
  // the member whose non-zero varying digits are 1. 2^|varying digits| replays, whatever the size.
  bool all_home_by_pattern(std::size_t s, const engine::GroupPattern& g, std::int64_t group) {
    const std::size_t v = g.vary.size();
    for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << v); ++mask) {
      std::int64_t position = 0;
      for (std::size_t i = 0; i < v; ++i) position = position * g.vary[i].factor + ((mask >> (v - 1 - i)) & 1);
      if (at(s - 1, engine::member_of(g, p_.grid, group, position)).where != Space::Main) return false;
    }
    return true;
  }

  const PatternProgram& p_;
  std::int64_t n_;
  std::optional<AffineRows> affine_;
  Layout initial_;
  std::unordered_map<std::int64_t, Layout> memo_;
};

std::int64_t gcd_all(std::int64_t u, const std::vector<Copy>& cs) {
  for (const auto& c : cs) {
    u = std::gcd(u, std::gcd(c.units, std::gcd(c.src.offset, c.dst.offset)));
    for (const auto& r : c.repeat) u = std::gcd(u, std::gcd(r.src, r.dst));
  }
  return u;
}

void scale(std::vector<Copy>& cs, std::int64_t u) {
  for (auto& c : cs) {
    c.src.offset /= u;
    c.dst.offset /= u;
    c.units /= u;
    for (auto& r : c.repeat) {
      r.src /= u;
      r.dst /= u;
    }
  }
}
void scale(RankStep& rs, std::int64_t u) {
  scale(rs.pre, u);
  scale(rs.post, u);
  rs.after.rows = rs.after.rows.scaled_down(u);
  rs.send.offset /= u;
  rs.recv.offset /= u;
  rs.count /= u;
  rs.data_units /= u;
}

}  // namespace

RankPlan make_rank_plan(std::shared_ptr<const PatternProgram> prog, std::int64_t rank, bool with_columns) {
  const PatternProgram& p = *prog;
  const std::int64_t N = p.num_ranks();
  if (rank < 0 || rank >= N) throw Error(fmt::format("rank {} does not exist on {} ranks", rank, N));
  RankPlan plan;
  plan.num_ranks = plan.k = N;
  plan.rank = rank;
  plan.program = prog;
  Replay replay(p);
  plan.strided = replay.affine();
  const std::size_t S = p.steps.size();
  for (std::size_t s = 1; s <= S; ++s) {
    RankPlanStep st;
    st.collective = p.steps[s - 1].collective;
    st.comm = membership(p.steps[s - 1].groups, p.grid, rank);
    st.rs = replay.step(s, rank, plan.stage_units);
    plan.steps.push_back(std::move(st));
  }
  const Layout& last = S ? plan.steps.back().rs.after : replay.at(0, rank);
  if (last.where != Space::Main) plan.final_copies = unpack_copies(last.rows, Region{last.where, 0});
  plan.baseline = membership(p.reduction, p.grid, rank);

  // The unit: the gcd of every row number this rank's actions use.
  std::int64_t u = N;
  for (const auto& st : plan.steps) {
    const RankStep& rs = st.rs;
    u = rs.after.rows.gcd(gcd_all(gcd_all(u, rs.pre), rs.post));
    for (std::int64_t v : {rs.send.offset, rs.recv.offset, rs.count, rs.data_units}) u = std::gcd(u, v);
  }
  u = gcd_all(u, plan.final_copies);
  for (auto& v : plan.stage_units) u = std::gcd(u, v);
  if (u < 1) u = 1;
  if (with_columns) {
    plan.columns.resize(S);
    for (std::size_t s = 1; s <= S; ++s)
      for (const auto& iv : plan.steps[s - 1].rs.after.rows.intervals())
        for (std::int64_t r = iv.begin; r < iv.end; r += u) plan.columns[s - 1].push_back(replay.columns(s, rank, r));
    if (plan.baseline.group >= 0)
      for (int i = 0; i < plan.baseline.group_size; ++i)
        plan.goal_columns.push_back(static_cast<int>(engine::member_of(p.reduction, p.grid, plan.baseline.group, i)));
  }
  plan.rows_per_unit = u;
  plan.units = N / u;
  for (auto& st : plan.steps) scale(st.rs, u);
  scale(plan.final_copies, u);
  for (auto& v : plan.stage_units) v /= u;
  return plan;
}

namespace {

void to_rows(std::vector<Copy>& cs, std::int64_t u) {
  cs = expand_copies(cs);
  for (auto& c : cs) c = {{c.src.space, c.src.offset * u}, {c.dst.space, c.dst.offset * u}, c.units * u, {}};
}
RankStep to_rows(RankStep rs, std::int64_t u) {
  to_rows(rs.pre, u);
  to_rows(rs.post, u);
  rs.after.rows = rs.after.rows.scaled_up(u);
  rs.send.offset *= u;
  rs.recv.offset *= u;
  rs.count *= u;
  rs.data_units *= u;
  rs.comm = rs.comm < 0 ? -1 : 0;
  return rs;
}

// Columns per held row, from columns per held unit (`held`: the held units, in order).
std::vector<std::vector<int>> per_row(
    const Intervals& held, std::int64_t u,
    const std::function<const std::vector<int>&(std::int64_t unit, std::size_t i)>& f) {
  std::vector<std::vector<int>> out;
  std::size_t i = 0;
  for (const auto& iv : held)
    for (std::int64_t un = iv.begin; un < iv.end; ++un, ++i)
      for (std::int64_t r = 0; r < u; ++r) out.push_back(f(un, i));
  return out;
}

}  // namespace

RankView rank_view(const Plan& plan, int rank) {
  RankView v;
  const std::int64_t u = plan.rows_per_unit;
  for (const auto& st : plan.steps) v.steps.push_back(to_rows(st.ranks[rank], u));
  v.final_copies = plan.final_copies[rank];
  to_rows(v.final_copies, u);
  if (plan.check_rank == rank)
    for (std::size_t s = 0; s < plan.columns.size(); ++s)
      v.columns.push_back(
          per_row(plan.steps[s].ranks[rank].after.rows.intervals(), u,
                  [&](std::int64_t un, std::size_t) -> const std::vector<int>& { return plan.columns[s][un]; }));
  return v;
}

RankView rank_view(const RankPlan& plan) {
  RankView v;
  const std::int64_t u = plan.rows_per_unit;
  for (const auto& st : plan.steps) v.steps.push_back(to_rows(st.rs, u));
  v.final_copies = plan.final_copies;
  to_rows(v.final_copies, u);
  for (std::size_t s = 0; s < plan.columns.size(); ++s)
    v.columns.push_back(
        per_row(plan.steps[s].rs.after.rows.intervals(), u,
                [&](std::int64_t, std::size_t i) -> const std::vector<int>& { return plan.columns[s][i]; }));
  return v;
}

namespace {

std::string region_text(Region r) { return fmt::format("{}+{}", to_string(r.space), r.offset); }
std::string copies_text(const std::vector<Copy>& cs) {
  std::string s;
  for (const auto& c : cs) s += fmt::format(" {}->{}x{}", region_text(c.src), region_text(c.dst), c.units);
  return s.empty() ? "none" : s;
}

}  // namespace

std::string compare_views(const RankView& a, const RankView& b) {
  if (a.steps.size() != b.steps.size()) return fmt::format("{} vs {} steps", a.steps.size(), b.steps.size());
  for (std::size_t s = 0; s < a.steps.size(); ++s) {
    const RankStep &x = a.steps[s], &y = b.steps[s];
    auto diff = [&](const char* what, const std::string& p, const std::string& q) {
      return fmt::format("step {}: {} {} vs {}", s + 1, what, p, q);
    };
    if (x.comm != y.comm) return diff("active", std::to_string(x.comm), std::to_string(y.comm));
    if (x.comm < 0) {
      if (x.after.rows != y.after.rows || x.after.where != y.after.where)
        return diff("idle rows", x.after.rows.format(), y.after.rows.format());
      continue;
    }
    if (x.member != y.member || x.group_size != y.group_size)
      return diff("member", fmt::format("{}/{}", x.member, x.group_size), fmt::format("{}/{}", y.member, y.group_size));
    if (x.in_place != y.in_place) return diff("in_place", std::to_string(x.in_place), std::to_string(y.in_place));
    if (!(x.send == y.send)) return diff("send", region_text(x.send), region_text(y.send));
    if (!(x.recv == y.recv)) return diff("recv", region_text(x.recv), region_text(y.recv));
    if (x.count != y.count) return diff("count", std::to_string(x.count), std::to_string(y.count));
    if (x.data_units != y.data_units) return diff("data", std::to_string(x.data_units), std::to_string(y.data_units));
    if (copies_text(x.pre) != copies_text(y.pre)) return diff("pre", copies_text(x.pre), copies_text(y.pre));
    if (copies_text(x.post) != copies_text(y.post)) return diff("post", copies_text(x.post), copies_text(y.post));
    if (x.after.where != y.after.where || x.after.rows != y.after.rows)
      return diff("after", fmt::format("{} in {}", x.after.rows.format(), to_string(x.after.where)),
                  fmt::format("{} in {}", y.after.rows.format(), to_string(y.after.where)));
  }
  if (copies_text(a.final_copies) != copies_text(b.final_copies))
    return fmt::format("final copies {} vs {}", copies_text(a.final_copies), copies_text(b.final_copies));
  if (!a.columns.empty() && !b.columns.empty() && a.columns != b.columns) {
    for (std::size_t s = 0; s < a.columns.size() && s < b.columns.size(); ++s)
      if (a.columns[s] != b.columns[s]) return fmt::format("step {}: columns differ", s + 1);
    return "columns differ";
  }
  return {};
}

}  // namespace p2v::runtime
