#include "p2v/runtime/plan.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <map>
#include <numeric>

#include "p2v/engine/error.hpp"
#include "p2v/engine/replay.hpp"
#include "p2v/engine/state.hpp"
#include "plan_detail.hpp"

namespace p2v::runtime {

std::string describe_groups(const Groups& g, std::size_t max_groups) {
  std::string s;
  std::size_t sz = g.empty() ? 0 : g[0].size();
  bool uniform = true;
  for (const auto& x : g) uniform &= x.size() == sz;
  s = uniform ? fmt::format("{} x {}:", g.size(), sz) : fmt::format("{} groups:", g.size());
  for (std::size_t i = 0; i < g.size() && i < max_groups; ++i) {
    s += " {";
    for (std::size_t j = 0; j < g[i].size(); ++j) {
      if (j) s += ',';
      s += std::to_string(g[i][j]);
    }
    s += "}";
  }
  if (g.size() > max_groups) s += " ...";
  return s;
}

std::string PlanStep::describe() const { return describe_groups(groups); }

Layout Plan::final_layout(int rank) const {
  if (steps.empty()) return Layout{Space::Main, RowSet{Intervals{{0, units}}}};
  Layout l = steps.back().ranks[rank].after;
  if (!final_copies[rank].empty()) l.where = Space::Main;
  return l;
}

namespace detail {

Intervals to_intervals(const std::vector<int>& rows) {
  Intervals v;
  for (int r : rows) {
    if (!v.empty() && v.back().end == r)
      ++v.back().end;
    else
      v.push_back({r, r + 1});
  }
  return v;
}

Intervals merge(Intervals v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  Intervals o;
  for (const auto& i : v) {
    if (!o.empty() && o.back().end == i.begin)
      o.back().end = i.end;
    else
      o.push_back(i);
  }
  return o;
}

namespace {

Space other_stage(Space s) { return s == Space::Stage0 ? Space::Stage1 : Space::Stage0; }

// AllGather into a staging buffer whose member blocks interleave at home: member i's block (at
// i * q in `stage`) goes to its rows. For a strided family, one copy whose outer repeats run over
// the members (docs/runtime.md "Plans at any size").
std::vector<Copy> member_unpack_copies(const StepContext& c, std::int64_t q, Space stage) {
  std::vector<Copy> out;
  if (!c.first) {
    for (std::size_t i = 0; i < c.members.size(); ++i) {
      auto cs = unpack_copies(*c.members[i], Region{stage, static_cast<std::int64_t>(i) * q});
      out.insert(out.end(), cs.begin(), cs.end());
    }
    return out;
  }
  out = unpack_copies(*c.first, Region{stage, 0});
  if (out.size() != 1) throw Error("internal: a strided AllGather family whose rows are not one box");
  std::vector<Stride> members;
  std::int64_t block = q;
  for (auto it = c.family.rbegin(); it != c.family.rend(); ++it) {
    members.insert(members.begin(), Stride{it->count, block, it->stride});
    block *= it->count;
  }
  out[0].repeat.insert(out[0].repeat.begin(), members.begin(), members.end());
  return out;
}

}  // namespace

void build_rank_step(const StepContext& c, RankStep& rs, std::int64_t need_units[2]) {
  const Layout& lay = *c.layout;
  const int gs = c.group_size, m = c.member;
  auto need = [&](Region r, std::int64_t units) {
    if (r.space == Space::Main) return;
    auto& n = need_units[r.space == Space::Stage0 ? 0 : 1];
    n = std::max(n, r.offset + units);
  };
  // The contiguous input region of the rank's held rows, packing into Stage0 when needed.
  auto input_region = [&]() -> Region {
    if (lay.where != Space::Main) return Region{lay.where, 0};
    if (lay.rows.runs() == 1) return Region{Space::Main, lay.rows.first()};
    Region dst{Space::Stage0, 0};
    rs.pre = pack_copies(lay.rows, dst);
    need(dst, lay.rows.total());
    return dst;
  };
  rs.member = m;
  rs.group_size = gs;
  rs.after.rows = *c.after;
  switch (c.collective) {
    case Collective::AllReduce:
    case Collective::Reduce: {
      const Region r = input_region();
      rs.in_place = c.collective == Collective::AllReduce || m == 0;
      rs.send = rs.recv = r;
      rs.count = rs.data_units = lay.rows.total();
      rs.after.where = c.collective == Collective::AllReduce || m == 0 ? r.space : Space::Main;
      break;
    }
    case Collective::ReduceScatter: {
      const Region r = input_region();
      rs.send = r;
      rs.recv = Region{other_stage(r.space), 0};
      rs.data_units = lay.rows.total();
      rs.count = rs.data_units / gs;
      need(rs.recv, rs.count);
      rs.after.where = rs.recv.space;
      break;
    }
    case Collective::AllGather: {
      // U, the union of the members' rows, is the rank's rows after the step.
      const RowSet& U = *c.after;
      const RowSet& first = c.first ? *c.first : *c.members[0];
      const std::int64_t q = first.total();
      // Member i holds the i-th block of U: the members' rows (disjoint, q each) ascend in member
      // order. Linear in the members (explicit), or in the family's dims (strided).
      bool ordered = true;
      if (c.first) {
        std::int64_t extent = first.end() - first.first();
        for (auto it = c.family.rbegin(); it != c.family.rend() && ordered; ++it) {
          ordered = it->stride >= extent;
          extent += (it->count - 1) * it->stride;
        }
      } else {
        for (int i = 0; i + 1 < gs && ordered; ++i) {
          const RowSet &a = *c.members[i], &b = *c.members[i + 1];
          ordered = a.empty() || b.empty() || a.end() <= b.first();
        }
      }
      const bool contiguous = U.runs() == 1;
      rs.count = q;
      rs.data_units = U.total();
      if (ordered && contiguous && c.all_home) {
        rs.in_place = true;  // every member's rows already sit at their place in U
        rs.send = rs.recv = Region{Space::Main, U.first()};
        rs.after.where = Space::Main;
        break;
      }
      const bool to_main = ordered && contiguous;
      Region src;
      if (lay.where != Space::Main) {
        src = Region{lay.where, 0};
      } else if (!to_main && lay.rows.runs() == 1) {
        src = Region{Space::Main, lay.rows.first()};  // no overlap with a stage target
      } else {
        // Own rows at home: pack (the receive region would overlap them).
        src = Region{Space::Stage0, 0};
        rs.pre = pack_copies(lay.rows, src);
        need(src, q);
      }
      rs.send = src;
      if (to_main) {
        rs.recv = Region{Space::Main, U.first()};
        rs.after.where = Space::Main;
      } else {
        rs.recv = Region{other_stage(src.space), 0};
        need(rs.recv, q * gs);
        if (ordered) {
          rs.after.where = rs.recv.space;  // ascending already: stays packed
        } else {
          rs.post = member_unpack_copies(c, q, rs.recv.space);
          rs.after.where = Space::Main;
        }
      }
      break;
    }
    case Collective::Broadcast: {
      const RowSet& R0 = *c.root_rows;
      rs.count = rs.data_units = R0.total();
      if (m == 0) {
        const Region r = input_region();
        rs.send = rs.recv = r;
        rs.after.where = r.space;
      } else {
        const Region r = R0.runs() == 1 ? Region{Space::Main, R0.first()} : Region{Space::Stage0, 0};
        need(r, rs.count);
        rs.send = rs.recv = r;
        rs.after.where = r.space;
      }
      break;
    }
  }
}

}  // namespace detail

Plan make_plan(const engine::LoweredProgram& prog, int num_ranks, const Groups& reduction_groups, int check_rank) {
  if (num_ranks < 1) throw Error("the runtime needs at least one rank");
  if (num_ranks > engine::kMaxStateDevices)
    throw Error(
        fmt::format("{} ranks: the runtime's planner supports at most {} ranks", num_ranks, engine::kMaxStateDevices));
  Plan plan;
  plan.num_ranks = plan.k = num_ranks;
  plan.reduction_groups = reduction_groups;
  plan.check_rank = check_rank;
  const int N = num_ranks;

  // 1. Validate the groups and follow the state semantics.
  auto check_groups = [&](const Groups& gs, const std::string& what) {
    std::vector<char> seen(N, 0);
    for (const auto& g : gs) {
      if (g.empty()) throw Error(what + ": an empty group");
      for (std::size_t i = 0; i < g.size(); ++i) {
        if (g[i] < 0 || g[i] >= N)
          throw Error(
              fmt::format("{}: device {} does not exist with {} ranks (devices 0..{}); "
                          "the program is for another system or rank count",
                          what, g[i], N, N - 1));
        if (i && g[i] <= g[i - 1])
          throw Error(fmt::format("{}: group {} is not in ascending device order", what, describe_groups({g}, 1)));
        if (seen[g[i]]++) throw Error(fmt::format("{}: device {} is in two groups", what, g[i]));
      }
    }
  };
  check_groups(reduction_groups, "reduction groups");
  for (std::size_t s = 0; s < prog.size(); ++s)
    check_groups(prog[s].groups, fmt::format("step {} ({})", s + 1, engine::to_string(prog[s].collective)));
  // The goal is compared per rank below (to name the rank that misses it), so no goal groups here.
  engine::Trace trace = engine::replay(N, prog);
  if (trace.failed_step >= 0)
    throw Error(fmt::format("step {} ({}) is not valid here: {}", trace.failed_step + 1,
                            engine::to_string(prog[static_cast<std::size_t>(trace.failed_step)].collective),
                            trace.reason));
  std::vector<engine::StateSet> states = std::move(trace.states);
  {
    const auto goal = engine::StateSet::goal(N, reduction_groups);
    plan.reaches_goal = states.back() == goal;
    if (!plan.reaches_goal) {
      for (int d = 0; d < N && plan.goal_failure.empty(); ++d)
        if (!states.back().same_device(d, goal, d))
          plan.goal_failure = fmt::format("rank {} ends with {} instead of {}", d, states.back().describe_device(d),
                                          goal.describe_device(d));
    }
  }

  // 2. Rows per rank per state, and the unit size u.
  const std::size_t S = prog.size();
  std::vector<std::vector<RowSet>> rows(S + 1, std::vector<RowSet>(N));
  std::int64_t u64 = N;
  for (std::size_t s = 0; s <= S; ++s)
    for (int d = 0; d < N; ++d) {
      rows[s][d] = RowSet{detail::to_intervals(states[s].rows(d))};
      u64 = rows[s][d].gcd(u64);
    }
  const int u = static_cast<int>(u64);
  plan.rows_per_unit = u;
  plan.units = N / u;
  for (auto& st : rows)
    for (auto& r : st) r = r.scaled_down(u);

  if (check_rank >= 0 && check_rank < N) {
    plan.columns.resize(S);
    for (std::size_t s = 0; s < S; ++s) {
      auto& cs = plan.columns[s];
      cs.resize(plan.units);
      // Rows of one unit move together, so their columns agree; take the unit's first row.
      for (int un = 0; un < plan.units; ++un)
        if (states[s + 1].has_row(check_rank, un * u)) cs[un] = states[s + 1].columns(check_rank, un * u);
    }
  }

  // 3. Communicators: the distinct groups of size >= 2, in order of first use.
  std::map<std::vector<int>, int> comm_index;
  auto comm_of = [&](const std::vector<int>& g) {
    auto [it, fresh] = comm_index.try_emplace(g, static_cast<int>(plan.comms.size()));
    if (fresh) plan.comms.push_back(g);
    return it->second;
  };

  // 4. Layouts and per-rank actions.
  std::vector<Layout> lay(N, Layout{Space::Main, RowSet{Intervals{{0, plan.units}}}});
  for (std::size_t s = 0; s < S; ++s) {
    PlanStep ps;
    ps.collective = prog[s].collective;
    ps.groups = prog[s].groups;
    ps.ranks.resize(N);
    const auto& before = rows[s];
    const auto& after = rows[s + 1];
    std::vector<Layout> next = lay;
    for (const auto& g : ps.groups) {
      const int gs = static_cast<int>(g.size());
      if (gs < 2) continue;  // a singleton moves no data (its state is unchanged or trivially so)
      const int ci = comm_of(g);
      ps.comms.push_back(ci);
      detail::StepContext c;
      c.collective = ps.collective;
      c.group_size = gs;
      if (ps.collective == Collective::Broadcast) c.root_rows = &before[g[0]];
      if (ps.collective == Collective::AllGather)
        for (int d : g) {
          c.members.push_back(&before[d]);
          c.all_home &= lay[d].where == Space::Main;
        }
      for (int m = 0; m < gs; ++m) {
        const int d = g[m];
        c.member = m;
        c.layout = &lay[d];
        c.after = &after[d];
        RankStep& rs = ps.ranks[d];
        detail::build_rank_step(c, rs, plan.stage_units);
        rs.comm = ci;
        next[d] = rs.after;
      }
    }
    // Idle ranks (and singleton groups) keep their data where it is.
    for (int d = 0; d < N; ++d)
      if (ps.ranks[d].comm < 0) {
        next[d].rows = after[d];
        ps.ranks[d].after = next[d];
      }
    lay = std::move(next);
    plan.steps.push_back(std::move(ps));
  }
  plan.final_copies.resize(N);
  for (int d = 0; d < N; ++d)
    if (lay[d].where != Space::Main) plan.final_copies[d] = unpack_copies(lay[d].rows, Region{lay[d].where, 0});
  for (const auto& g : reduction_groups)
    if (g.size() >= 2) plan.baseline_comms.push_back(comm_of(g));
  return plan;
}

}  // namespace p2v::runtime
