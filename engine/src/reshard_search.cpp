// docs/model.md §10: memory-bounded shortest-path synthesis of redistributions, the naive baseline, costs.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>

#include "p2v/engine/error.hpp"
#include "p2v/engine/reshard.hpp"

namespace p2v::engine::reshard {

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

// The per-level α–β model of `--cost topology`: for each prime axis, the outermost system level
// its groups cross (devices numbered in mixed radix over the system's levels, outermost first).
struct Topo {
  const System* sys = nullptr;
  std::vector<int> axis_level;  // per prime axis: index into sys->levels
  int dtype_bytes = 4;

  std::vector<int> coords(std::int64_t d) const {
    std::vector<int> c(sys->levels.size());
    for (std::size_t l = sys->levels.size(); l-- > 0;) {
      c[l] = static_cast<int>(d % sys->levels[l].cardinality);
      d /= sys->levels[l].cardinality;
    }
    return c;
  }
  int level_between(std::int64_t a, std::int64_t b) const {
    const auto ca = coords(a), cb = coords(b);
    for (std::size_t l = 0; l < ca.size(); ++l)
      if (ca[l] != cb[l]) return static_cast<int>(l);
    return static_cast<int>(ca.size()) - 1;
  }
  Topo(const System* s, const Mesh& mesh, int bytes) : sys(s), dtype_bytes(bytes) {
    if (!sys) return;
    if (sys->num_devices() != mesh.num_devices())
      throw Error(fmt::format("--system {} has {} devices but the mesh has {}; they must be equal", sys->name,
                              sys->num_devices(), mesh.num_devices()));
    for (const auto& l : sys->levels)
      if (!l.interconnect)
        throw Error(
            fmt::format("--cost topology: level {} of system {} has no interconnect; use a system file with "
                        "interconnects (e.g. examples/systems/a100-2node.json) or --cost paper",
                        l.name, sys->name));
    axis_level.assign(mesh.primes.size(), static_cast<int>(sys->levels.size()) - 1);
    for (std::size_t a = 0; a < mesh.primes.size(); ++a)
      for (std::int64_t d = 0; d < mesh.num_devices(); ++d) {
        auto p = mesh.point(d);
        if (p[a] + 1 >= mesh.primes[a].size) continue;
        ++p[a];
        axis_level[a] = std::min(axis_level[a], level_between(d, mesh.device(p)));
      }
  }
  int level(const std::vector<int>& axes) const {
    int l = static_cast<int>(sys->levels.size()) - 1;
    for (int a : axes) l = std::min(l, axis_level[a]);
    return l;
  }
  // Ring-style time of a collective whose group has g members, each ending with `elems` elements.
  double time(int lvl, std::int64_t g, double elems) const {
    const auto& ic = *sys->levels[lvl].interconnect;
    const double alpha = ic.latency_us * 1e-6, beta = ic.bandwidth_gbps * 1e9;
    return static_cast<double>(g - 1) * alpha +
           static_cast<double>(g - 1) / static_cast<double>(g) * elems * dtype_bytes / beta;
  }
  double permute_time(const Type& before, const Type& after, const Mesh& mesh, int* lvl_out = nullptr) const {
    Step s;
    s.op = Op::AllPermute;
    s.target = after;
    const auto low = lower(before, s, mesh);
    int lvl = -1;
    for (std::size_t d = 0; d < low.sources.size(); ++d)
      if (low.sources[d] != static_cast<std::int64_t>(d)) {
        const int l = level_between(static_cast<std::int64_t>(d), low.sources[d]);
        lvl = lvl < 0 ? l : std::min(lvl, l);
      }
    if (lvl_out) *lvl_out = lvl;
    if (lvl < 0) return 0.0;
    const auto& ic = *sys->levels[lvl].interconnect;
    return ic.latency_us * 1e-6 + static_cast<double>(before.localsize()) * dtype_bytes / (ic.bandwidth_gbps * 1e9);
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
  if (!topo.sys) return static_cast<double>(paper_cost(s, before, after));
  if (s.op == Op::DynSlice) return 0.0;
  if (s.op == Op::AllPermute) return topo.permute_time(before, after, mesh);
  return topo.time(topo.level(s.axes), product(s.axes, mesh), static_cast<double>(after.localsize()));
}

Step make(Op op, int dim, int dim2, std::vector<int> axes) {
  Step s;
  s.op = op;
  s.dim = dim;
  s.dim2 = dim2;
  s.axes = std::move(axes);
  return s;
}

}  // namespace

namespace {

// One edge of the search: a collective, or a relabelling of one dimension's axes (no data moves).
struct Edge {
  Step step;
  bool relabel = false;
  std::vector<int> new_axes;  // relabel: the dimension's axes afterwards
};

// Turns edges into a program on physical devices: applies relabellings to the device map, lowers
// every collective to its groups, merges consecutive dynslices of one dimension, and appends the
// allpermute that restores the device map / reaches `to` when the layouts differ.
Program build(const Mesh& mesh, const Type& from, const Type& to, const std::vector<Edge>& edges) {
  Program prog;
  Type t = from;
  std::vector<std::int64_t> sigma;
  bool pending = false;
  for (const auto& e : edges) {
    if (e.relabel) {
      t = relabel(t, e.step.dim, e.new_axes, mesh, sigma);
      pending = true;
      continue;
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
  if (!(t == to) || !sigma.empty()) {
    PlannedStep ps;
    ps.step.op = Op::AllPermute;
    ps.step.target = to;
    ps.before = t;
    ps.relabelled = pending;
    ps.after = apply(t, ps.step, mesh);
    ps.lowered = lower(t, ps.step, mesh, sigma.empty() ? nullptr : &sigma);
    bool moves = false;
    for (std::size_t d = 0; d < ps.lowered.sources.size(); ++d)
      moves |= ps.lowered.sources[d] != static_cast<std::int64_t>(d);
    if (moves) prog.steps.push_back(std::move(ps));
  }
  return prog;
}

}  // namespace

Program synthesize(const Mesh& mesh, const Type& from, const Type& to, std::int64_t limit, const System* topology,
                   int dtype_bytes, std::int64_t* states) {
  const Topo topo(topology, mesh, dtype_bytes);
  struct Node {
    Type t;
    bool dirty;  // a relabelling happened: the device map must be restored by a final allpermute
    double dist;
    int steps;
    int prev;
    Edge via;
    bool done;
  };
  std::vector<Node> nodes;
  std::unordered_map<std::string, int> index;
  using Entry = std::tuple<double, int, int>;  // dist, steps, node
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> pq;
  auto relax = [&](const Type& t, bool dirty, double dist, int steps, int prev, const Edge& via) {
    if (t.localsize() > limit) return;
    auto [it, fresh] = index.try_emplace(key(t) + (dirty ? "*" : ""), static_cast<int>(nodes.size()));
    if (fresh) {
      nodes.push_back({t, dirty, dist, steps, prev, via, false});
    } else {
      auto& n = nodes[it->second];
      if (n.done || std::make_pair(n.dist, n.steps) <= std::make_pair(dist, steps)) return;
      n.dist = dist;
      n.steps = steps;
      n.prev = prev;
      n.via = via;
    }
    pq.emplace(dist, steps, it->second);
  };
  relax(from, false, 0.0, 0, -1, Edge{});
  if (nodes.empty()) throw Error("the source type exceeds the memory limit");
  const auto target_local = to.localtype();
  const int nd = static_cast<int>(from.dims.size());
  struct Best {
    int node = -1;
    double total = 0.0;
  } best;
  std::int64_t settled = 0;
  while (!pq.empty()) {
    const auto [du, su, u] = pq.top();
    pq.pop();
    if (nodes[u].done || du > nodes[u].dist) continue;
    if (best.node >= 0 && du > best.total) break;
    nodes[u].done = true;
    if (++settled > kMaxStates)
      throw Error(
          fmt::format("reshard: the search exceeded {} states; use a smaller mesh or fewer dimensions", kMaxStates));
    const Type t = nodes[u].t;  // copy: nodes may grow below
    const bool dirty = nodes[u].dirty;
    if (t == to && !dirty) {
      if (best.node < 0 || du <= best.total) best = {u, du};
      break;
    }
    if (t.localtype() == target_local) {
      Step p;
      p.op = Op::AllPermute;
      p.target = to;
      // The permute's price: exact for the paper model; for topology, estimated on the logical
      // layout (the lowering computes the physical one).
      const double total = du + step_weight(p, t, to, mesh, topo);
      if (best.node < 0 || total < best.total) best = {u, total};
    }
    std::vector<int> owner(mesh.primes.size(), -1);
    for (int i = 0; i < nd; ++i)
      for (int a : t.dims[i].axes) owner[a] = i;
    // (copies of the structured bindings: clang 14, used for the fuzz build, cannot capture them)
    auto go = [&, du = du, su = su, u = u](const Type& r, bool dr, double w, const Step& s) {
      relax(r, dr, du + w, su + 1, u, Edge{s, false, {}});
    };
    for (int i = 0; i < nd; ++i) {
      const auto& ax = t.dims[i].axes;
      for (std::size_t m = 1; m <= ax.size(); ++m) {
        const std::vector<int> moved(ax.begin(), ax.begin() + static_cast<std::ptrdiff_t>(m));
        const std::int64_t k = product(moved, mesh);
        {  // allgather(i) of the m minor-most axes
          Type r = t;
          r.dims[i].axes.erase(r.dims[i].axes.begin(), r.dims[i].axes.begin() + static_cast<std::ptrdiff_t>(m));
          r.dims[i].local *= k;
          const Step s = make(Op::AllGather, i, -1, moved);
          go(r, dirty, step_weight(s, t, r, mesh, topo), s);
        }
        for (int j = 0; j < nd; ++j) {  // alltoall(i,j) of the m minor-most axes
          if (j == i || t.dims[j].local % k != 0) continue;
          Type r = t;
          r.dims[i].axes.erase(r.dims[i].axes.begin(), r.dims[i].axes.begin() + static_cast<std::ptrdiff_t>(m));
          r.dims[i].local *= k;
          r.dims[j].axes.insert(r.dims[j].axes.begin(), moved.begin(), moved.end());
          r.dims[j].local /= k;
          const Step s = make(Op::AllToAll, i, j, moved);
          go(r, dirty, step_weight(s, t, r, mesh, topo), s);
        }
      }
      // Relabelling: bring a non-minor-most axis to the minor end (no data moves; the device map
      // changes, so the program ends with an allpermute).
      for (std::size_t k = 1; k < ax.size(); ++k) {
        Edge e;
        e.relabel = true;
        e.step.dim = i;
        e.new_axes = ax;
        std::rotate(e.new_axes.begin(), e.new_axes.begin() + static_cast<std::ptrdiff_t>(k),
                    e.new_axes.begin() + static_cast<std::ptrdiff_t>(k) + 1);
        Type r = t;
        r.dims[i].axes = e.new_axes;
        relax(r, true, du, su, u, e);
      }
      // dynslice(i, a) of one unused axis (several in a row are merged afterwards: cost 0 each).
      for (std::size_t a = 0; a < mesh.primes.size(); ++a) {
        if (owner[a] >= 0 || t.dims[i].local % mesh.primes[a].size != 0) continue;
        Type r = t;
        r.dims[i].axes.insert(r.dims[i].axes.begin(), static_cast<int>(a));
        r.dims[i].local /= mesh.primes[a].size;
        go(r, dirty, 0.0, make(Op::DynSlice, i, -1, {static_cast<int>(a)}));
      }
    }
  }
  if (states) *states = settled;
  if (best.node < 0)
    throw Error(fmt::format("reshard: no program within the memory limit of {} elements per device", limit));
  std::vector<Edge> path;
  for (int v = best.node; nodes[v].prev >= 0; v = nodes[v].prev) path.push_back(nodes[v].via);
  std::reverse(path.begin(), path.end());
  Program prog = build(mesh, from, to, path);
  price(prog, mesh, from, dtype_bytes, topology);
  return prog;
}

Program naive(const Mesh& mesh, const Type& from, const Type& to) {
  std::vector<Edge> edges;
  for (std::size_t i = 0; i < from.dims.size(); ++i)
    if (from.dims[i].axes != to.dims[i].axes && !from.dims[i].axes.empty())
      edges.push_back({make(Op::AllGather, static_cast<int>(i), -1, from.dims[i].axes), false, {}});
  for (std::size_t i = 0; i < from.dims.size(); ++i)
    if (from.dims[i].axes != to.dims[i].axes && !to.dims[i].axes.empty())
      edges.push_back({make(Op::DynSlice, static_cast<int>(i), -1, to.dims[i].axes), false, {}});
  return build(mesh, from, to, edges);
}

void price(Program& p, const Mesh& mesh, const Type& from, int dtype_bytes, const System* topology) {
  const Topo topo(topology, mesh, dtype_bytes);
  p.cost = 0;
  p.time_s = 0.0;
  p.peak = from.localsize();
  for (auto& ps : p.steps) {
    ps.cost = paper_cost(ps.step, ps.before, ps.after);
    ps.bytes = ps.cost * dtype_bytes;
    ps.group_size = 1;
    ps.num_groups = 0;
    ps.level.clear();
    ps.time_s = 0.0;
    int lvl = -1;  // outermost system level between devices exchanging data
    auto cross = [&](std::int64_t a, std::int64_t b) {
      if (topo.sys && a != b) {
        const int l = topo.level_between(a, b);
        lvl = lvl < 0 ? l : std::min(lvl, l);
      }
    };
    if (ps.step.op == Op::AllGather || ps.step.op == Op::AllToAll) {
      ps.group_size = static_cast<int>(product(ps.step.axes, mesh));
      ps.num_groups = static_cast<int>(ps.lowered.groups.size());
      for (const auto& g : ps.lowered.groups)
        for (auto d : g) cross(g.front(), d);
      if (lvl >= 0) ps.time_s = topo.time(lvl, ps.group_size, static_cast<double>(ps.after.localsize()));
    } else if (ps.step.op == Op::AllPermute) {
      ps.group_size = 2;
      for (std::size_t d = 0; d < ps.lowered.sources.size(); ++d) {
        ps.num_groups += ps.lowered.sources[d] != static_cast<std::int64_t>(d);
        cross(static_cast<std::int64_t>(d), ps.lowered.sources[d]);
      }
      if (lvl >= 0) {
        const auto& ic = *topology->levels[lvl].interconnect;
        ps.time_s =
            ic.latency_us * 1e-6 + static_cast<double>(ps.before.localsize()) * dtype_bytes / (ic.bandwidth_gbps * 1e9);
      }
    }
    if (lvl >= 0) ps.level = topology->levels[lvl].name;
    p.cost += ps.cost;
    p.time_s += ps.time_s;
    p.peak = std::max(p.peak, ps.after.localsize());
  }
}

Plan plan(const Request& r) {
  Plan pl;
  pl.mesh = parse_mesh(r.mesh);
  pl.from = parse_type(r.from, pl.mesh);
  pl.to = parse_type(r.to, pl.mesh);
  if (pl.from.dims.size() != pl.to.dims.size())
    throw Error(fmt::format("global shapes differ: {} has {} dimensions, {} has {}", r.from, pl.from.dims.size(), r.to,
                            pl.to.dims.size()));
  for (std::size_t i = 0; i < pl.from.dims.size(); ++i)
    if (pl.from.dims[i].global != pl.to.dims[i].global)
      throw Error(
          fmt::format("global shapes differ: dimension {} has global size {} in {} but {} in {}; a "
                      "redistribution keeps the array's shape",
                      i, pl.from.dims[i].global, r.from, pl.to.dims[i].global, r.to));
  pl.dtype_bytes = dtype_size(r.dtype);
  pl.cost_kind = r.cost;
  pl.bound = std::max(pl.from.localsize(), pl.to.localsize());
  pl.limit = pl.bound;
  if (r.memory_bytes) {
    pl.limit = *r.memory_bytes / pl.dtype_bytes;
    if (pl.limit < pl.bound)
      throw Error(
          fmt::format("--memory {} bytes is below the bound: the larger of the two local sizes is {} elements "
                      "({} bytes of {}); give at least that",
                      *r.memory_bytes, pl.bound, pl.bound * pl.dtype_bytes, r.dtype));
  }
  const System* sys = r.system ? &*r.system : nullptr;
  if (r.cost == CostKind::Topology && !sys)
    throw Error("--cost topology needs --system (a system file with interconnects)");
  const System* topo = r.cost == CostKind::Topology ? sys : nullptr;
  if (sys && sys->num_devices() != pl.mesh.num_devices())
    throw Error(fmt::format("--system {} has {} devices but the mesh has {}; they must be equal", sys->name,
                            sys->num_devices(), pl.mesh.num_devices()));
  pl.program = synthesize(pl.mesh, pl.from, pl.to, pl.limit, topo, pl.dtype_bytes, &pl.states);
  pl.baseline = naive(pl.mesh, pl.from, pl.to);
  price(pl.baseline, pl.mesh, pl.from, pl.dtype_bytes, topo);
  return pl;
}

nlohmann::json to_json(const Plan& p, bool full) {
  using nlohmann::json;
  const bool small = full || p.mesh.num_devices() <= 256;
  auto prog = [&](const Program& pr) {
    json steps = json::array();
    for (const auto& s : pr.steps) {
      json j = {{"op", to_string(s.step.op)},
                {"text", step_to_string(s.step, p.mesh)},
                {"type", to_string(s.after, p.mesh)},
                {"local", s.after.localtype()},
                {"cost", s.cost},
                {"bytes", s.bytes},
                {"group_size", s.group_size},
                {"num_groups", s.num_groups}};
      if (s.step.op != Op::AllPermute) {
        j["dims"] = s.step.op == Op::AllToAll ? json{s.step.dim, s.step.dim2} : json{s.step.dim};
        json axes = json::array();
        const auto names = axes_to_string(s.step.axes, p.mesh);
        std::size_t b = 0;
        for (std::size_t e; (e = names.find(',', b)) != std::string::npos; b = e + 1)
          axes.push_back(names.substr(b, e - b));
        axes.push_back(names.substr(b));
        j["axes"] = axes;
      }
      if (p.cost_kind == CostKind::Topology) {
        j["time_s"] = s.time_s;
        j["level"] = s.level;
      }
      if (s.relabelled) j["relabelled"] = true;
      if (full && s.step.op == Op::DynSlice) j["slice"] = s.lowered.slice;
      if (small && s.step.op != Op::DynSlice) {
        if (s.step.op == Op::AllPermute)
          j["sources"] = s.lowered.sources;
        else
          j["groups"] = s.lowered.groups;
      }
      steps.push_back(j);
    }
    json o = {{"steps", steps}, {"cost", pr.cost}, {"peak", pr.peak}, {"bound", p.bound}};
    if (p.cost_kind == CostKind::Topology) o["time_s"] = pr.time_s;
    return o;
  };
  json mesh = json::object(), mesh_axes = json::array();
  for (const auto& a : p.mesh.axes) {
    mesh[a.name] = a.size;
    mesh_axes.push_back({a.name, a.size});
  }
  json out = prog(p.program);
  out["mesh"] = mesh;
  out["mesh_axes"] = mesh_axes;  // in order: devices are numbered in mixed radix, first axis most significant
  if (full) out["format"] = "p2v-reshard-certificate/1";
  out["from"] = to_string(p.from, p.mesh);
  out["to"] = to_string(p.to, p.mesh);
  out["limit"] = p.limit;
  out["bytes_per_element"] = p.dtype_bytes;
  out["cost_model"] = p.cost_kind == CostKind::Paper ? "paper" : "topology";
  out["states"] = p.states;
  out["baseline"] = prog(p.baseline);
  return out;
}

}  // namespace p2v::engine::reshard

namespace p2v::engine::reshard {

RandomProblem random_problem(std::mt19937_64& rng, int kind, int max_rank, int max_shift) {
  static const std::vector<std::pair<std::string, int>> meshes[] = {
      {{"a", 2}, {"b", 2}, {"c", 2}}, {{"x", 4}, {"y", 6}}, {{"x", 3}, {"y", 5}}};
  static const int unit[] = {8, 24, 15};  // every dimension's global size is a multiple of this
  const auto& axes = meshes[kind];
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int rank = pick(1, kind == 0 ? max_rank : std::min(max_rank, 4));
  std::vector<std::int64_t> global(static_cast<std::size_t>(rank));
  for (auto& n : global)
    n = static_cast<std::int64_t>(unit[kind]) << pick(0, kind == 0 ? max_shift : std::min(max_shift, 1));
  RandomProblem p;
  for (std::size_t i = 0; i < axes.size(); ++i)
    p.mesh += fmt::format("{}{}={}", i ? "," : "", axes[i].first, axes[i].second);
  auto type = [&] {
    std::vector<std::vector<std::size_t>> split(global.size());
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const int d = pick(-1, rank - 1);
      if (d >= 0) split[d].insert(split[d].begin() + pick(0, static_cast<int>(split[d].size())), a);
    }
    std::string s = "[";
    for (std::size_t i = 0; i < global.size(); ++i) {
      std::int64_t k = 1;
      std::string names;
      for (auto a : split[i]) {
        k *= axes[a].second;
        names += (names.empty() ? "" : ",") + axes[a].first;
      }
      s += (i ? "," : "") +
           (split[i].empty() ? std::to_string(global[i]) : fmt::format("{}{{{}}}{}", global[i] / k, names, global[i]));
    }
    return s + "]";
  };
  p.from = type();
  p.to = type();
  return p;
}

}  // namespace p2v::engine::reshard
