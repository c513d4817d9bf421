// The search (see p2v/reshard/search.hpp).
#include "p2v/reshard/search.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>

#include "p2v/engine/error.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/p2p_cost.hpp"

namespace p2v::reshard {

namespace {

constexpr std::int64_t kMaxStates = 2'000'000;

std::int64_t product(const std::vector<int>& axes, const Mesh& mesh) {
  std::int64_t k = 1;
  for (int a : axes) k *= mesh.primes[a].size;
  return k;
}

std::string key(const Type& t) {
  std::string k;
  for (const auto& d : t.dims) {
    for (int a : d.axes) k += static_cast<char>('A' + a);
    k += '|';
  }
  return k;
}

// `--cost topology`: the simulator's prices on the system's topology graph (docs/reshard.md "Cost
// on a topology"). Allgather is sim's collective (NCCL's algorithm and protocol choice, link
// sharing between the groups), exactly what `p2v simulate` charges for it; alltoall and the
// allpermute are sim's point-to-point patterns (sim/p2p_cost.hpp). Mesh devices are system
// devices (same numbering). During the search collectives are priced on the identity device map,
// memoised by (op, axes, bytes); price() prices the lowered, physical steps.
struct Topo {
  std::optional<sim::Simulator> sim;
  int dtype_bytes = 4;
  mutable std::unordered_map<std::string, double> memo;

  Topo(const System* s, const Mesh& mesh, int bytes) : dtype_bytes(bytes) {
    if (!s) return;
    if (s->num_devices() != mesh.num_devices())
      throw Error(fmt::format("--system {} has {} devices but the mesh has {}; they must be equal", s->name,
                              s->num_devices(), mesh.num_devices()));
    sim.emplace(*s);
  }
  bool on() const { return sim.has_value(); }
  std::string level(int edge) const {
    return edge < 0 ? std::string{} : sim->topology().edges()[static_cast<std::size_t>(edge)].cls;
  }
  // A collective step's time on its physical groups; `level` gets the bottleneck link's class.
  double collective(Op op, const Lowered& low, std::int64_t in, std::int64_t out, std::string* lvl = nullptr) const {
    if (op == Op::AllGather) {
      engine::LoweredStep st{engine::Collective::AllGather, {}};
      for (const auto& g : low.groups) st.groups.emplace_back(g.begin(), g.end());
      const auto c = sim->collective(st, static_cast<double>(out * dtype_bytes), sim::Algorithm::Auto);
      if (lvl) *lvl = level(c.bottleneck_edge);
      return c.time_s;
    }
    const auto c = sim::alltoall_cost(*sim, low.groups, static_cast<double>(in * dtype_bytes));
    if (lvl) *lvl = c.bottleneck_class;
    return c.time_s;
  }
  double permute(const Lowered& low, std::int64_t in, std::string* lvl = nullptr) const {
    const auto c = sim::permute_cost(*sim, low.sources, static_cast<double>(in * dtype_bytes));
    if (lvl) *lvl = c.bottleneck_class;
    return c.time_s;
  }
  // Search estimate on the identity device map.
  double estimate(const Step& s, const Type& before, const Type& after, const Mesh& mesh) const {
    if (s.op == Op::AllPermute) return permute(lower(before, s, mesh), before.localsize());
    std::string k = fmt::format("{}|{}|{}|", static_cast<int>(s.op), before.localsize(), after.localsize());
    for (int a : s.axes) k += std::to_string(a) + ',';
    if (const auto it = memo.find(k); it != memo.end()) return it->second;
    const double t = collective(s.op, lower(before, s, mesh), before.localsize(), after.localsize());
    memo.emplace(std::move(k), t);
    return t;
  }
};

// Paper cost of one step given the types around it.
std::int64_t paper_cost(const Step& s, const Type& before, const Type& after) {
  switch (s.op) {
    case Op::AllGather:
      return after.localsize();
    case Op::AllToAll:
    case Op::AllPermute:
      return before.localsize();
    case Op::DynSlice:
      return 0;
  }
  return 0;
}

double step_weight(const Step& s, const Type& before, const Type& after, const Mesh& mesh, const Topo& topo) {
  if (!topo.on()) return static_cast<double>(paper_cost(s, before, after));
  if (s.op == Op::DynSlice) return 0.0;
  return topo.estimate(s, before, after, mesh);
}

Step make(Op op, int dim, int dim2, std::vector<int> axes) { return Step{op, dim, dim2, std::move(axes), {}}; }

}  // namespace

namespace {

// One edge of the search: a collective (on `before`, the logical type it is taken on: in a dirty
// state the device map is relabelled to it first, moving no data), the switch to a dirty state
// (from here on any relabelling is free, and an allpermute must follow), or an allpermute.
struct Edge {
  enum Kind { Collective, Dirty, Permute } kind = Collective;
  Step step;
  Type before;  // Collective: the logical type the step is taken on (empty: the current one)
};

Edge collective(Step s, Type before = {}) { return Edge{Edge::Collective, std::move(s), std::move(before)}; }

bool moves(const Lowered& low) {
  for (std::size_t d = 0; d < low.sources.size(); ++d)
    if (low.sources[d] != static_cast<std::int64_t>(d)) return true;
  return false;
}

// Turns edges into a program on physical devices: applies relabellings to the device map, lowers
// every collective to its groups, merges consecutive dynslices of one dimension, lowers each
// allpermute from the physical layout (dropped when no device moves), and appends an allpermute
// when the end differs from `to` (the search never needs it; naive() relies on it being absent).
Program build(const Mesh& mesh, const Type& from, const Type& to, const std::vector<Edge>& edges) {
  Program prog;
  Type t = from;
  std::vector<std::int64_t> sigma;
  bool pending = false;
  auto permute = [&](const Type& target) {
    PlannedStep ps;
    ps.step.op = Op::AllPermute;
    ps.step.target = target;
    ps.before = t;
    ps.relabelled = pending;
    ps.after = apply(t, ps.step, mesh);
    ps.lowered = lower(t, ps.step, mesh, sigma.empty() ? nullptr : &sigma);
    if (moves(ps.lowered)) prog.steps.push_back(std::move(ps));
    t = target;
    sigma.clear();
    pending = false;
  };
  for (const auto& e : edges) {
    if (e.kind == Edge::Dirty) continue;
    if (e.kind == Edge::Permute) {
      permute(e.step.target);
      continue;
    }
    if (!e.before.dims.empty() && !(e.before == t)) {
      t = relabel(t, e.before, mesh, sigma);
      pending = true;
    }
    if (e.step.op == Op::DynSlice && !pending && !prog.steps.empty() && prog.steps.back().step.op == Op::DynSlice &&
        prog.steps.back().step.dim == e.step.dim) {
      auto& last = prog.steps.back();
      last.step.axes.insert(last.step.axes.begin(), e.step.axes.begin(), e.step.axes.end());
      last.after = t = apply(t, e.step, mesh);
      last.lowered = lower(last.before, last.step, mesh, sigma.empty() ? nullptr : &sigma);
      continue;
    }
    PlannedStep ps;
    ps.step = e.step;
    ps.before = t;
    ps.relabelled = pending;
    ps.after = apply(t, e.step, mesh);
    ps.lowered = lower(t, e.step, mesh, sigma.empty() ? nullptr : &sigma);
    prog.steps.push_back(std::move(ps));
    t = prog.steps.back().after;
    pending = false;
  }
  if (!(t == to) || !sigma.empty()) permute(to);
  return prog;
}

// The types over the prime axes whose dimension i is split by axes of product ratio[i]: every
// assignment of axes to dimensions (`ordered`: every order within a dimension too; else each
// dimension's axes ascending). Calls f(type) for each.
template <class F>
void for_each_type(const Mesh& mesh, const Type& shape, const std::vector<std::int64_t>& local, bool ordered, F&& f) {
  const std::size_t nd = shape.dims.size(), np = mesh.primes.size();
  std::vector<std::int64_t> rem(nd);
  for (std::size_t i = 0; i < nd; ++i) {
    if (local[i] < 1 || shape.dims[i].global % local[i] != 0) return;
    rem[i] = shape.dims[i].global / local[i];
  }
  Type t;
  t.dims.resize(nd);
  for (std::size_t i = 0; i < nd; ++i) t.dims[i] = Dim{local[i], shape.dims[i].global, {}};
  std::function<void(std::size_t)> orders = [&](std::size_t i) {
    if (i == nd) return f(t);
    auto& ax = t.dims[i].axes;
    std::sort(ax.begin(), ax.end());
    do orders(i + 1);
    while (std::next_permutation(ax.begin(), ax.end()));
  };
  std::function<void(std::size_t)> rec = [&](std::size_t a) {
    if (a == np) {
      for (auto r : rem)
        if (r != 1) return;
      if (ordered) return orders(0);
      return f(t);
    }
    rec(a + 1);  // axis a unused
    const int p = mesh.primes[a].size;
    for (std::size_t i = 0; i < nd; ++i)
      if (rem[i] % p == 0) {
        rem[i] /= p;
        t.dims[i].axes.push_back(static_cast<int>(a));
        rec(a + 1);
        t.dims[i].axes.pop_back();
        rem[i] *= p;
      }
  };
  rec(0);
}

std::string local_key(const std::vector<std::int64_t>& c) {
  std::string k = "D";
  for (auto v : c) k += std::to_string(v) + ',';
  return k;
}

// The search's path from `from` to `to` (see synthesize). `clean_only`: no relabelling, so every
// edge is priced on the device map it runs on (exact under --cost topology too).
std::vector<Edge> search(const Mesh& mesh, const Type& from, const Type& to, std::int64_t limit, const Topo& topo,
                         bool clean_only, std::int64_t& settled) {
  // Two kinds of node: clean (an exact type on the identity device map) and dirty (a local type:
  // after a relabelling any type with that local type describes the layout for free, and an
  // allpermute must follow). Dijkstra on (cost, allpermutes, steps): on equal cost the program
  // with fewer permutes, then fewer steps, wins.
  struct Node {
    Type t;  // clean: the type; dirty: a type with the node's local type
    bool dirty;
    double dist;
    int permutes, steps;
    int prev;
    Edge via;
    bool done;
  };
  using Prio = std::tuple<double, int, int>;
  std::vector<Node> nodes;
  std::unordered_map<std::string, int> index;
  std::priority_queue<std::pair<Prio, int>, std::vector<std::pair<Prio, int>>, std::greater<>> pq;
  auto relax = [&](const Type& t, bool dirty, Prio pr, int prev, Edge via) {
    if (t.localsize() > limit) return;
    auto [it, fresh] = index.try_emplace(dirty ? local_key(t.localtype()) : key(t), static_cast<int>(nodes.size()));
    if (fresh) {
      nodes.push_back({t, dirty, std::get<0>(pr), std::get<1>(pr), std::get<2>(pr), prev, std::move(via), false});
    } else {
      auto& n = nodes[it->second];
      if (n.done || Prio{n.dist, n.permutes, n.steps} <= pr) return;
      n.t = t;
      n.dist = std::get<0>(pr);
      n.permutes = std::get<1>(pr);
      n.steps = std::get<2>(pr);
      n.prev = prev;
      n.via = std::move(via);
    }
    pq.emplace(pr, it->second);
  };
  relax(from, false, {0.0, 0, 0}, -1, Edge{});
  if (nodes.empty()) throw Error("the source type exceeds the memory limit");
  const int nd = static_cast<int>(from.dims.size());
  int best = -1;
  // The collectives on the exact type t: allgather and alltoall of the m minor-most axes of a
  // dimension (any m), dynslice of one unused axis (several in a row are merged afterwards).
  auto expand = [&](const Type& t, auto&& go) {
    std::vector<int> owner(mesh.primes.size(), -1);
    for (int i = 0; i < nd; ++i)
      for (int a : t.dims[i].axes) owner[a] = i;
    for (int i = 0; i < nd; ++i) {
      const auto& ax = t.dims[i].axes;
      for (std::size_t m = 1; m <= ax.size(); ++m) {
        const std::vector<int> moved(ax.begin(), ax.begin() + static_cast<std::ptrdiff_t>(m));
        const std::int64_t k = product(moved, mesh);
        {
          Type r = t;
          r.dims[i].axes.erase(r.dims[i].axes.begin(), r.dims[i].axes.begin() + static_cast<std::ptrdiff_t>(m));
          r.dims[i].local *= k;
          go(r, make(Op::AllGather, i, -1, moved));
        }
        for (int j = 0; j < nd; ++j) {
          if (j == i || t.dims[j].local % k != 0) continue;
          Type r = t;
          r.dims[i].axes.erase(r.dims[i].axes.begin(), r.dims[i].axes.begin() + static_cast<std::ptrdiff_t>(m));
          r.dims[i].local *= k;
          r.dims[j].axes.insert(r.dims[j].axes.begin(), moved.begin(), moved.end());
          r.dims[j].local /= k;
          go(r, make(Op::AllToAll, i, j, moved));
        }
      }
      for (std::size_t a = 0; a < mesh.primes.size(); ++a) {
        if (owner[a] >= 0 || t.dims[i].local % mesh.primes[a].size != 0) continue;
        Type r = t;
        r.dims[i].axes.insert(r.dims[i].axes.begin(), static_cast<int>(a));
        r.dims[i].local /= mesh.primes[a].size;
        go(r, make(Op::DynSlice, i, -1, {static_cast<int>(a)}));
      }
    }
  };
  while (!pq.empty()) {
    const auto [pr, u] = pq.top();
    pq.pop();
    if (nodes[u].done || pr > Prio{nodes[u].dist, nodes[u].permutes, nodes[u].steps}) continue;
    nodes[u].done = true;
    if (++settled > kMaxStates)
      throw Error(
          fmt::format("reshard: the search exceeded {} states; use a smaller mesh or fewer dimensions", kMaxStates));
    const Type t = nodes[u].t;  // copy: nodes may grow below
    const bool dirty = nodes[u].dirty;
    const auto [du, pu, su] = pr;
    if (!dirty && t == to) {
      best = u;
      break;
    }
    if (!dirty) {
      // Clean: the collectives of t; and the switch to dirty (no cost, no step).
      expand(t, [&, du = du, pu = pu, su = su, u = u](const Type& r, const Step& s) {
        relax(r, false, {du + step_weight(s, t, r, mesh, topo), pu, su + 1}, u, collective(s));
      });
      if (!clean_only) relax(t, true, pr, u, Edge{Edge::Dirty, {}, {}});
      continue;
    }
    // Dirty, local type t.localtype(): the collectives of every type with that local type (each
    // dimension's axes in any order, so only which axes and the m minor-most's product matter:
    // the moved axes are put minor-most first), and an allpermute to any clean type with it.
    const auto local = t.localtype();
    for_each_type(mesh, t, local, false, [&, du = du, pu = pu, su = su, u = u](const Type& base) {
      std::vector<int> owner(mesh.primes.size(), -1);
      for (int i = 0; i < nd; ++i)
        for (int a : base.dims[i].axes) owner[a] = i;
      for (int i = 0; i < nd; ++i) {
        const auto& ax = base.dims[i].axes;
        const std::size_t m = ax.size();
        for (std::uint32_t mask = 1; mask < (1u << m); ++mask) {
          Type b = base;
          std::vector<int> moved, rest;
          for (std::size_t q = 0; q < m; ++q) ((mask >> q) & 1 ? moved : rest).push_back(ax[q]);
          b.dims[i].axes = moved;
          b.dims[i].axes.insert(b.dims[i].axes.end(), rest.begin(), rest.end());
          const std::int64_t k = product(moved, mesh);
          Type r = b;
          r.dims[i].axes = rest;
          r.dims[i].local *= k;
          Step s = make(Op::AllGather, i, -1, moved);
          relax(r, true, {du + step_weight(s, b, r, mesh, topo), pu, su + 1}, u, collective(s, b));
          for (int j = 0; j < nd; ++j) {
            if (j == i || b.dims[j].local % k != 0) continue;
            Type q = b;
            q.dims[i].axes = rest;
            q.dims[i].local *= k;
            q.dims[j].axes.insert(q.dims[j].axes.begin(), moved.begin(), moved.end());
            q.dims[j].local /= k;
            s = make(Op::AllToAll, i, j, moved);
            relax(q, true, {du + step_weight(s, b, q, mesh, topo), pu, su + 1}, u, collective(s, b));
          }
        }
        for (std::size_t a = 0; a < mesh.primes.size(); ++a) {
          if (owner[a] >= 0 || base.dims[i].local % mesh.primes[a].size != 0) continue;
          Type r = base;
          r.dims[i].axes.insert(r.dims[i].axes.begin(), static_cast<int>(a));
          r.dims[i].local /= mesh.primes[a].size;
          relax(r, true, {du, pu, su + 1}, u, collective(make(Op::DynSlice, i, -1, {static_cast<int>(a)}), base));
        }
      }
    });
    for_each_type(mesh, t, local, true, [&, du = du, pu = pu, su = su, u = u](const Type& r) {
      Step p;
      p.op = Op::AllPermute;
      p.target = r;
      // The permute's price: exact for the paper model; for topology, estimated on the logical
      // layout (the lowering computes the physical one and price() the exact time).
      relax(r, false, {du + step_weight(p, t, r, mesh, topo), pu + 1, su + 1}, u, Edge{Edge::Permute, p, {}});
    });
  }
  if (best < 0)
    throw Error(fmt::format("reshard: no program within the memory limit of {} elements per device", limit));
  std::vector<Edge> path;
  for (int v = best; nodes[v].prev >= 0; v = nodes[v].prev) path.push_back(nodes[v].via);
  std::reverse(path.begin(), path.end());
  return path;
}

void price_with(Program& p, const Mesh& mesh, const Type& from, const Topo& topo);

}  // namespace

Program synthesize(const Mesh& mesh, const Type& from, const Type& to, std::int64_t limit, const System* topology,
                   int dtype_bytes, std::int64_t* states) {
  const Topo topo(topology, mesh, dtype_bytes);
  std::int64_t settled = 0;
  Program prog = build(mesh, from, to, search(mesh, from, to, limit, topo, false, settled));
  price_with(prog, mesh, from, topo);
  // Under --cost topology a relabelled stretch is priced on the logical device map, which is an
  // estimate (the physical groups depend on the path): keep the best program without relabelling,
  // whose prices are exact, when the physical price says it is faster.
  if (topo.on() && std::any_of(prog.steps.begin(), prog.steps.end(), [](const auto& s) { return s.relabelled; })) {
    try {
      Program alt = build(mesh, from, to, search(mesh, from, to, limit, topo, true, settled));
      price_with(alt, mesh, from, topo);
      if (alt.time_s < prog.time_s) prog = std::move(alt);
    } catch (const Error&) {  // no program within the limit without relabelling
    }
  }
  if (states) *states = settled;
  return prog;
}

Program naive(const Mesh& mesh, const Type& from, const Type& to) {
  std::vector<Edge> edges;
  for (std::size_t i = 0; i < from.dims.size(); ++i)
    if (from.dims[i].axes != to.dims[i].axes && !from.dims[i].axes.empty())
      edges.push_back(collective(make(Op::AllGather, static_cast<int>(i), -1, from.dims[i].axes)));
  for (std::size_t i = 0; i < from.dims.size(); ++i)
    if (from.dims[i].axes != to.dims[i].axes && !to.dims[i].axes.empty())
      edges.push_back(collective(make(Op::DynSlice, static_cast<int>(i), -1, to.dims[i].axes)));
  return build(mesh, from, to, edges);
}

std::int64_t staged_elements(const PlannedStep& s) {
  const std::int64_t in = s.before.localsize(), out = s.after.localsize();
  switch (s.step.op) {
    case Op::AllGather:
      return in + 2 * out;
    case Op::AllToAll:
      return 3 * in;
    case Op::AllPermute:
      return 2 * in;
    case Op::DynSlice:
      return in + out;
  }
  return in;
}

namespace {
void price_with(Program& p, const Mesh& mesh, const Type& from, const Topo& topo) {
  const int dtype_bytes = topo.dtype_bytes;
  p.cost = 0;
  p.time_s = 0.0;
  p.peak = p.peak_staged = from.localsize();
  for (auto& ps : p.steps) {
    ps.cost = paper_cost(ps.step, ps.before, ps.after);
    ps.bytes = ps.cost * dtype_bytes;
    ps.group_size = 1;
    ps.num_groups = 0;
    ps.level.clear();
    ps.time_s = 0.0;
    if (ps.step.op == Op::AllGather || ps.step.op == Op::AllToAll) {
      ps.group_size = static_cast<int>(product(ps.step.axes, mesh));
      ps.num_groups = static_cast<int>(ps.lowered.groups.size());
      if (topo.on())
        ps.time_s = topo.collective(ps.step.op, ps.lowered, ps.before.localsize(), ps.after.localsize(), &ps.level);
    } else if (ps.step.op == Op::AllPermute) {
      ps.group_size = 2;
      for (std::size_t d = 0; d < ps.lowered.sources.size(); ++d)
        ps.num_groups += ps.lowered.sources[d] != static_cast<std::int64_t>(d);
      if (topo.on()) ps.time_s = topo.permute(ps.lowered, ps.before.localsize(), &ps.level);
    }
    p.cost += ps.cost;
    p.time_s += ps.time_s;
    p.peak = std::max(p.peak, ps.after.localsize());
    p.peak_staged = std::max(p.peak_staged, staged_elements(ps));
  }
}

}  // namespace

void price(Program& p, const Mesh& mesh, const Type& from, int dtype_bytes, const System* topology) {
  price_with(p, mesh, from, Topo(topology, mesh, dtype_bytes));
}

}  // namespace p2v::reshard
