#include "p2v/sim/topology.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "p2v/engine/error.hpp"
#include "p2v/engine/json_reader.hpp"

namespace p2v::sim {

using namespace engine;

namespace {

using json = nlohmann::json;

struct Template {
  std::string scope;  // empty: no explicit graph, only parameters
  std::vector<std::string> uplinks;
  double step_overhead_us = 0.0;
  struct V {
    std::string name, kind;
  };
  struct L {
    std::string a, b, kind;
    double bw = 0, lat = 0;
  };
  std::vector<V> vertices;
  std::vector<L> links;
};

// The "topology" section of a system file (docs/simulator.md), read strictly: unknown fields at
// any depth are errors naming their path.
double non_negative(const engine::json_read::At& at) {
  const double x = at.number();
  if (x < 0) at.fail(fmt::format("must be a non-negative number, got {}", x));
  return x;
}

Template parse_template(const json& j, const std::string& sysname) {
  const std::string origin = fmt::format("system '{}'", sysname);
  engine::json_read::Object o(engine::json_read::At(j, origin, "topology"));
  Template t;
  o.optional("description");
  if (const auto v = o.optional("step_overhead_us")) t.step_overhead_us = non_negative(*v);
  const auto scope = o.optional("scope"), uplink = o.optional("uplink"), vertices = o.optional("vertices"),
             links = o.optional("links");
  if (!scope && !uplink && !vertices && !links) {
    o.finish();
    return t;  // parameters only: the graph comes from the levels
  }
  t.scope = o["scope"].string();
  if (uplink) {
    if (uplink->raw().is_string())
      t.uplinks.push_back(uplink->string());
    else
      uplink->each([&](const engine::json_read::At& u) { t.uplinks.push_back(u.string()); });
    if (t.uplinks.empty()) uplink->fail("must be a vertex name or a non-empty list of them (one per NIC)");
  }
  if (vertices)
    vertices->each([&](const engine::json_read::At& at) {
      engine::json_read::Object v(at);
      const auto kind = v.optional("kind");
      t.vertices.push_back({v["name"].string(), kind ? kind->string() : "switch"});
      v.finish();
    });
  o["links"].each([&](const engine::json_read::At& at) {
    engine::json_read::Object l(at);
    Template::L x;
    x.a = l["a"].string();
    x.b = l["b"].string();
    if (const auto k = l.optional("kind"))
      x.kind = k->string();
    else
      x.kind = "link";
    const auto bw = l.renamed("bandwidth_GBps", "bandwidth_gbps");  // GB/s; the second name is deprecated
    x.bw = non_negative(bw);
    if (x.bw <= 0) bw.fail("must be positive");
    if (const auto lat = l.optional("latency_us")) x.lat = non_negative(*lat);
    if (x.a == x.b) at.fail("a link needs two different ends");
    l.finish();
    t.links.push_back(std::move(x));
  });
  o.finish();
  return t;
}

}  // namespace

int Topology::add_vertex(std::string name, std::string kind, int device, int depth) {
  vertices_.push_back({std::move(name), std::move(kind), device, depth});
  return static_cast<int>(vertices_.size()) - 1;
}

void Topology::add_link(int a, int b, double bw, double lat, const std::string& kind, const std::string& cls,
                        double path_scale, double flow_bw) {
  const int e = static_cast<int>(edges_.size());
  edges_.push_back({a, b, bw, lat, kind, cls, e + 1, flow_bw});
  edges_.push_back({b, a, bw, lat, kind, cls, e, flow_bw});
  edge_path_scale_.push_back(path_scale);
  edge_path_scale_.push_back(path_scale);
}

Topology Topology::build(const System& s) {
  Topology t;
  const int L = static_cast<int>(s.levels.size());
  if (L == 0) throw Error(fmt::format("system '{}': no levels", s.name));
  const auto nd64 = s.num_devices();
  if (nd64 > 2048)
    throw Error(
        fmt::format("system '{}': {} devices; the simulator handles at most 2048 (it stores a route per device pair)",
                    s.name, nd64));
  t.num_devices_ = static_cast<int>(nd64);
  const auto& leaf_name = s.levels.back().name;
  // below[l] = devices inside one instance of level l (below[-1] -> all).
  std::vector<int> below(static_cast<std::size_t>(L) + 1, 1);
  for (int l = L - 1; l >= 0; --l)
    below[static_cast<std::size_t>(l)] =
        (l == L - 1) ? 1
                     : below[static_cast<std::size_t>(l) + 1] * s.levels[static_cast<std::size_t>(l) + 1].cardinality;
  auto devs_in = [&](int l) {  // devices inside one instance of level l (l = -1: root)
    return l < 0 ? t.num_devices_ : below[static_cast<std::size_t>(l)];
  };

  Template tmpl;
  int scope = -2;  // level whose instances get the template; -1 = root (whole system)
  if (s.has_topology()) tmpl = parse_template(s.topology, s.name);
  t.step_overhead_ = tmpl.step_overhead_us * 1e-6;
  if (!tmpl.scope.empty()) {
    if (tmpl.scope == "root" || tmpl.scope == "system") {
      scope = -1;
    } else {
      for (int l = 0; l < L; ++l)
        if (s.levels[static_cast<std::size_t>(l)].name == tmpl.scope) scope = l;
      if (scope == -2)
        throw Error(
            fmt::format("system '{}': \"topology\".scope '{}' is not a level (use a level "
                        "name or \"root\")",
                        s.name, tmpl.scope));
      if (scope == L - 1)
        throw Error(
            fmt::format("system '{}': \"topology\".scope '{}' is the device level; use a "
                        "level above it",
                        s.name, tmpl.scope));
      if (tmpl.uplinks.empty())
        throw Error(
            fmt::format("system '{}': \"topology\" needs \"uplink\": the vertex through "
                        "which one '{}' reaches the rest of the system",
                        s.name, tmpl.scope));
    }
    t.explicit_ = true;
  }

  t.device_vertex_.assign(static_cast<std::size_t>(t.num_devices_), -1);

  // Instantiates the template for the instance at level `scope` with path `path`.
  auto instantiate = [&](const std::string& path, int first) -> std::vector<int> {
    const int m = devs_in(scope);
    std::map<std::string, int> local;
    const std::string pre = path.empty() ? "" : path + "/";
    for (int i = 0; i < m; ++i) {
      const int v = t.add_vertex(pre + leaf_name + std::to_string(i), "device", first + i, 0);
      t.device_vertex_[static_cast<std::size_t>(first + i)] = v;
      local[leaf_name + std::to_string(i)] = v;
    }
    for (const auto& v : tmpl.vertices) {
      if (local.count(v.name))
        throw Error(
            fmt::format("system '{}': \"topology\" vertex '{}' is defined twice (devices "
                        "are named {}0..{}{})",
                        s.name, v.name, leaf_name, leaf_name, m - 1));
      local[v.name] = t.add_vertex(pre + v.name, v.kind, -1, 1);
    }
    for (const auto& l : tmpl.links) {
      auto a = local.find(l.a), b = local.find(l.b);
      for (const auto* nm : {&l.a, &l.b})
        if (!local.count(*nm))
          throw Error(
              fmt::format("system '{}': \"topology\" link names unknown vertex '{}' "
                          "(devices are {}0..{}{}; other vertices must be listed in "
                          "\"vertices\")",
                          s.name, *nm, leaf_name, leaf_name, m - 1));
      t.add_link(a->second, b->second, l.bw * 1e9, l.lat * 1e-6, l.kind, l.kind, 1.0);
    }
    if (scope < 0) return {};
    std::vector<int> ports;
    for (const auto& up : tmpl.uplinks) {
      auto u = local.find(up);
      if (u == local.end())
        throw Error(fmt::format("system '{}': \"topology\".uplink '{}' is not a vertex of the section", s.name, up));
      ports.push_back(u->second);
    }
    return ports;
  };

  // Returns the port vertices of the instance of level l (l = -1: root) at `path`: the vertices
  // through which it reaches its parent's interconnect (several for a section with several NICs).
  auto build_rec = [&](auto&& self, int l, const std::string& path, int first) -> std::vector<int> {
    if (l == scope) return instantiate(path, first);
    if (l == L - 1) {
      const int v = t.add_vertex(path, "device", first, 0);
      t.device_vertex_[static_cast<std::size_t>(first)] = v;
      return {v};
    }
    const auto& child = s.levels[static_cast<std::size_t>(l) + 1];
    const int per = devs_in(l + 1);
    const std::string pre = path.empty() ? "" : path + "/";
    if (child.cardinality == 1) return self(self, l + 1, pre + child.name + "0", first);
    if (!child.interconnect)
      throw Error(
          fmt::format("system '{}': level '{}' has {} instances but no \"interconnect\"; "
                      "the simulator needs its bandwidth and latency (or a \"topology\" "
                      "section)",
                      s.name, child.name, child.cardinality));
    const auto& ic = *child.interconnect;
    if (!(ic.bandwidth_gbps > 0))
      throw Error(fmt::format("system '{}': level '{}': interconnect bandwidth must be positive", s.name, child.name));
    const int hub = t.add_vertex((path.empty() ? std::string("root") : path) + ":" + to_string(ic.kind),
                                 ic.kind == LinkKind::Nic ? "network" : to_string(ic.kind), -1, L - 1 - l);
    for (int c = 0; c < child.cardinality; ++c) {
      for (int port : self(self, l + 1, pre + child.name + std::to_string(c), first + c * per))
        t.add_link(port, hub, ic.bandwidth_gbps * 1e9, ic.latency_us * 1e-6 / 2, to_string(ic.kind), child.name, 0.5,
                   ic.flow_bandwidth_gbps * 1e9);
    }
    return {hub};
  };
  if (scope == -1)
    instantiate("", 0);
  else
    build_rec(build_rec, -1, "", 0);

  // node_of: index at the outermost level with more than one instance.
  int outer = -1;
  for (int l = 0; l < L; ++l)
    if (s.levels[static_cast<std::size_t>(l)].cardinality > 1) {
      outer = l;
      break;
    }
  t.node_of_.resize(static_cast<std::size_t>(t.num_devices_));
  t.num_nodes_ = outer < 0 ? 1 : s.levels[static_cast<std::size_t>(outer)].cardinality;
  for (int d = 0; d < t.num_devices_; ++d) t.node_of_[static_cast<std::size_t>(d)] = outer < 0 ? 0 : d / devs_in(outer);
  for (int d = 0; d < t.num_devices_; ++d)
    if (t.device_vertex_[static_cast<std::size_t>(d)] < 0)
      throw Error(fmt::format("system '{}': device {} has no vertex", s.name, d));
  t.compute_routes();
  return t;
}

void Topology::compute_routes() {
  using namespace boost;
  using Graph =
      adjacency_list<vecS, vecS, directedS, no_property, property<edge_weight_t, double, property<edge_index_t, int>>>;
  const int V = static_cast<int>(vertices_.size());
  const int D = num_devices_;
  // Devices do not forward: device d's vertex keeps its outgoing edges; its incoming edges go to
  // an extra sink vertex V + d.
  Graph g(static_cast<std::size_t>(V + D));
  for (int e = 0; e < static_cast<int>(edges_.size()); ++e) {
    const auto& ed = edges_[static_cast<std::size_t>(e)];
    const int to = vertices_[static_cast<std::size_t>(ed.to)].is_device()
                       ? V + vertices_[static_cast<std::size_t>(ed.to)].device
                       : ed.to;
    // Time per GB first; latency as a tie-break; a tiny per-hop term prefers fewer hops.
    const double w = 1.0 / ed.bandwidth * 1e9 + ed.latency + 1e-12;
    add_edge(static_cast<std::size_t>(ed.from), static_cast<std::size_t>(to),
             property<edge_weight_t, double, property<edge_index_t, int>>(w, e), g);
  }
  auto eidx = get(edge_index, g);
  route_begin_.assign(static_cast<std::size_t>(D) * D + 1, 0);
  route_edges_.clear();
  std::vector<Graph::vertex_descriptor> pred(static_cast<std::size_t>(V + D));
  std::vector<double> dist(static_cast<std::size_t>(V + D));
  std::vector<int> pred_edge(static_cast<std::size_t>(V + D), -1);
  for (int a = 0; a < D; ++a) {
    const auto src = static_cast<std::size_t>(device_vertex_[static_cast<std::size_t>(a)]);
    dijkstra_shortest_paths(g, src,
                            predecessor_map(make_iterator_property_map(pred.begin(), get(vertex_index, g)))
                                .distance_map(make_iterator_property_map(dist.begin(), get(vertex_index, g))));
    for (int b = 0; b < D; ++b) {
      const auto i = static_cast<std::size_t>(a) * D + b;
      route_begin_[i] = route_edges_.size();
      if (a == b) continue;
      std::size_t v = static_cast<std::size_t>(V + b);
      if (pred[v] == v || dist[v] == std::numeric_limits<double>::max())
        throw Error(
            fmt::format("topology: device {} ({}) cannot reach device {} ({}); every "
                        "device needs a path that does not pass through another device",
                        a, vertices_[src].name, b,
                        vertices_[static_cast<std::size_t>(device_vertex_[static_cast<std::size_t>(b)])].name));
      std::vector<int> path;
      while (v != src) {
        const auto u = pred[v];
        // The cheapest parallel edge u->v (there is normally one).
        int best = -1;
        double bw = -1;
        for (auto [it, end] = out_edges(u, g); it != end; ++it)
          if (target(*it, g) == v) {
            const int e = eidx[*it];
            if (get(edge_weight, g, *it) + dist[u] <= dist[v] * (1 + 1e-12) + 1e-15 &&
                edges_[static_cast<std::size_t>(e)].bandwidth > bw) {
              best = e;
              bw = edges_[static_cast<std::size_t>(e)].bandwidth;
            }
          }
        path.push_back(best);
        v = u;
      }
      std::reverse(path.begin(), path.end());
      route_edges_.insert(route_edges_.end(), path.begin(), path.end());
    }
  }
  route_begin_.back() = route_edges_.size();
  recompute_route_latency();
}

void Topology::recompute_route_latency() {
  const auto D = static_cast<std::size_t>(num_devices_);
  route_latency_.assign(D * D, 0.0);
  for (std::size_t i = 0; i < D * D; ++i) {
    double s = 0;
    for (auto k = route_begin_[i]; k < route_begin_[i + 1]; ++k)
      s += edges_[static_cast<std::size_t>(route_edges_[k])].latency;
    route_latency_[i] = s;
  }
}

std::string Topology::edge_name(int e) const {
  const auto& ed = edges_[static_cast<std::size_t>(e)];
  return vertices_[static_cast<std::size_t>(ed.from)].name + "->" + vertices_[static_cast<std::size_t>(ed.to)].name;
}

std::vector<std::string> Topology::classes() const {
  std::set<std::string> s;
  for (const auto& e : edges_) s.insert(e.cls);
  return {s.begin(), s.end()};
}

void Topology::set_class(const std::string& cls, double bandwidth, double latency_per_path) {
  bool any = false;
  for (std::size_t e = 0; e < edges_.size(); ++e)
    if (edges_[e].cls == cls) {
      edges_[e].bandwidth = bandwidth;
      edges_[e].latency = latency_per_path * edge_path_scale_[e];
      any = true;
    }
  if (!any) throw Error("topology: no link of class '" + cls + "'");
  recompute_route_latency();
}

std::pair<double, double> Topology::class_params(const std::string& cls) const {
  double bw = 0, lat = 0;
  int n = 0;
  for (std::size_t e = 0; e < edges_.size(); ++e)
    if (edges_[e].cls == cls) {
      bw += edges_[e].bandwidth;
      lat += edges_[e].latency / edge_path_scale_[e];
      ++n;
    }
  if (n == 0) throw Error("topology: no link of class '" + cls + "'");
  return {bw / n, lat / n};
}

std::string Topology::describe() const {
  std::string out = fmt::format("{} devices, {} vertices, {} links{}\n", num_devices_, vertices_.size(),
                                edges_.size() / 2, explicit_ ? " (explicit topology section)" : "");
  for (const auto& c : classes()) {
    auto [bw, lat] = class_params(c);
    int n = 0;
    std::string kind;
    for (const auto& e : edges_)
      if (e.cls == c) {
        ++n;
        kind = e.kind;
      }
    out += fmt::format("  class {:<10} kind {:<8} {:>4} links  {:>8.2f} GB/s  {:>6.2f} us\n", c, kind, n / 2, bw / 1e9,
                       lat * 1e6);
  }
  return out;
}

}  // namespace p2v::sim
