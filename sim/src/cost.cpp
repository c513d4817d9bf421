#include "p2v/sim/cost.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <cmath>
#include <limits>

#include "p2v/engine/error.hpp"
#include "p2v/sim/nccl_model.hpp"
#include "step_load.hpp"

namespace p2v::sim {

using namespace engine;

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::Ring:
      return "ring";
    case Algorithm::Tree:
      return "tree";
    case Algorithm::Auto:
      return "auto";
    case Algorithm::Nvls:
      return "nvls";
    case Algorithm::NvlsTree:
      return "nvls-tree";
    case Algorithm::CollNet:
      return "collnet";
  }
  return "?";
}

Algorithm parse_algorithm(const std::string& s) {
  if (s == "ring") return Algorithm::Ring;
  if (s == "tree") return Algorithm::Tree;
  if (s == "auto") return Algorithm::Auto;
  if (s == "nvls") return Algorithm::Nvls;
  if (s == "nvls-tree") return Algorithm::NvlsTree;
  if (s == "collnet" || s == "sharp") return Algorithm::CollNet;
  throw Error("--algo '" + s + "': expected auto, ring, tree, nvls, nvls-tree or collnet");
}

double default_bytes(const System& s) {
  double nodes = 1;
  for (std::size_t l = 0; l + 1 < s.levels.size(); ++l) nodes *= s.levels[l].cardinality;
  return std::ldexp(1.0, 29) * nodes * 4.0;
}

LoweredProgram single_allreduce(const Groups& reduction_groups) {
  return {LoweredStep{Collective::AllReduce, reduction_groups}};
}

std::string format_seconds(double s) {
  const double a = std::fabs(s);
  if (a >= 1.0) return fmt::format("{:.3f} s", s);
  if (a >= 1e-3) return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} us", s * 1e6);
}

double bus_factor(Collective c, double p) {
  switch (c) {
    case Collective::AllReduce:
      return 2.0 * (p - 1) / p;
    case Collective::ReduceScatter:
    case Collective::AllGather:
      return (p - 1) / p;
    default:
      return 1.0;
  }
}

namespace {

// Ring over members (ascending = ring order): `reps` rounds, each member sends `b` bytes to its
// successor per round.
void ring(StepLoad& acc, const std::vector<int>& m, double b, int reps) {
  const std::size_t p = m.size();
  double lat = 0.0;
  for (std::size_t i = 0; i < p; ++i) {
    const int a = m[i], c = m[(i + 1) % p];
    acc.flow(a, c, b * reps);
    lat = std::max(lat, acc.t.route_latency(a, c));
  }
  acc.latency = std::max(acc.latency, lat * reps);
}

// Pipelined chain through `order` carrying `b` bytes on each hop.
void chain(StepLoad& acc, const std::vector<int>& order, double b) {
  double lat = 0.0;
  for (std::size_t i = 0; i + 1 < order.size(); ++i) {
    acc.flow(order[i], order[i + 1], b);
    lat += acc.t.route_latency(order[i], order[i + 1]);
  }
  acc.latency = std::max(acc.latency, lat);
}

// Members of a group split by node (NCCL node: devices joined without a network link), in order.
// `outer`: split by the outermost level with more than one instance instead (the tree's chains,
// as the level model shapes them).
std::vector<std::vector<int>> segments(const StepLoad& acc, const std::vector<int>& m, bool outer = false) {
  std::vector<std::vector<int>> seg;
  auto id = [&](int d) { return outer ? acc.t.node_of(d) : (*acc.node)[static_cast<std::size_t>(d)]; };
  for (int d : m) {
    const int nd = id(d);
    bool placed = false;
    for (auto& s : seg)
      if (id(s.front()) == nd) {
        s.push_back(d);
        placed = true;
        break;
      }
    if (!placed) seg.push_back({d});
  }
  return seg;
}

// Flows of a double binary tree over the segments: tree edges between segment i and its parent,
// both directions, `b` per tree; `spread`: the bytes split over the segments' members pairwise
// (NVLS tree, CollNet: every GPU drives its own NIC) instead of one head per segment.
void tree_flows(StepLoad& acc, const std::vector<std::vector<int>>& seg, double b, bool spread) {
  const int k = static_cast<int>(seg.size());
  for (int tr = 0; tr < 2; ++tr)
    for (int i = 0; i < k; ++i) {
      const int par = nccl_tree_parent(k, i, tr);  // NCCL's double binary tree (trees.cc)
      if (par < 0) continue;
      const auto& c = seg[static_cast<std::size_t>(i)];
      const auto& p = seg[static_cast<std::size_t>(par)];
      const std::size_t w = spread ? std::min(c.size(), p.size()) : 1;
      for (std::size_t j = 0; j < w; ++j) {
        acc.flow(c[j], p[j], b / static_cast<double>(w));
        acc.flow(p[j], c[j], b / static_cast<double>(w));
      }
    }
}

// NCCL's tree AllReduce: a chain inside each node (up for the reduction, down for the
// broadcast), and a double binary tree across the node heads, each tree carrying half the data.
void tree_allreduce(StepLoad& acc, const std::vector<int>& m, double S) {
  const auto seg = segments(acc, m, true);
  for (const auto& s : seg)
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      acc.flow(s[i + 1], s[i], S);  // reduce up
      acc.flow(s[i], s[i + 1], S);  // broadcast down
    }
  if (seg.size() > 1) tree_flows(acc, seg, S / 2, false);
}

// NVLS AllReduce inside a node: every GPU sends its buffer into the NVSwitch (which reduces) and
// receives the result: S out and S in per GPU (a one-round ring of S has exactly that load on a
// star). Across nodes: NVLS tree (tree over nodes, every GPU carrying its slice) or, with SHARP,
// the network reduces: every node sends S and receives S (a one-round ring over nodes).
void nvls_allreduce(StepLoad& acc, const std::vector<int>& m, double S, Algorithm a) {
  const auto seg = segments(acc, m);
  for (const auto& s : seg)
    if (s.size() > 1) ring(acc, s, S, 1);
  if (seg.size() < 2) return;
  if (a == Algorithm::NvlsTree) {
    tree_flows(acc, seg, S / 2, true);
  } else {
    std::size_t w = seg.front().size();
    for (const auto& s : seg) w = std::min(w, s.size());
    for (std::size_t i = 0; i < seg.size(); ++i)
      for (std::size_t j = 0; j < w; ++j) acc.flow(seg[i][j], seg[(i + 1) % seg.size()][j], S / static_cast<double>(w));
  }
}

// CollNet (SHARP) AllReduce: reduce-scatter inside the node, every GPU sends its slice into the
// network and receives the reduced slice (node: S out, S in), all-gather inside the node.
void collnet_allreduce(StepLoad& acc, const std::vector<int>& m, double S) {
  const auto seg = segments(acc, m);
  std::size_t w = seg.front().size();
  for (const auto& s : seg) {
    w = std::min(w, s.size());
    const double q = static_cast<double>(s.size());
    if (s.size() > 1) ring(acc, s, S / q, 2 * (static_cast<int>(s.size()) - 1));
  }
  if (seg.size() < 2) return;
  for (std::size_t i = 0; i < seg.size(); ++i)
    for (std::size_t j = 0; j < w; ++j) acc.flow(seg[i][j], seg[(i + 1) % seg.size()][j], S / static_cast<double>(w));
}

// Adds every group's transfers of the step to acc (algorithm `algo`, which the collective must
// offer); fills S (per rank buffer of the first group).
void add_step(StepLoad& acc, const LoweredStep& st, double n, const std::vector<double>& frac, Algorithm algo,
              double* S_out) {
  double S_first = 0.0;
  bool first = true;
  for (const auto& g : st.groups) {
    const int p = static_cast<int>(g.size());
    if (p < 2) continue;
    const double f = frac[static_cast<std::size_t>(g.front())];
    double S = f * n;
    switch (st.collective) {
      case Collective::AllReduce:
        if (algo == Algorithm::Tree)
          tree_allreduce(acc, g, S);
        else if (algo == Algorithm::Nvls || algo == Algorithm::NvlsTree)
          nvls_allreduce(acc, g, S, algo);
        else if (algo == Algorithm::CollNet)
          collnet_allreduce(acc, g, S);
        else
          ring(acc, g, S / p, 2 * (p - 1));
        break;
      case Collective::ReduceScatter:
        // NVLS ReduceScatter/AllGather move the ring's bytes through each GPU's link (receive
        // side), so they share the ring's flows.
        ring(acc, g, S / p, p - 1);
        break;
      case Collective::AllGather:
        ring(acc, g, S, p - 1);
        S *= p;
        break;
      case Collective::Reduce: {
        // The mirror image of Broadcast: d_{p-1} -> ... -> d_1 -> d_0 (the root).
        std::vector<int> order(g.rbegin(), g.rend());
        chain(acc, order, S);
        break;
      }
      case Collective::Broadcast:
        chain(acc, g, S);
        break;
    }
    if (first) {
      S_first = S;
      first = false;
    }
  }
  if (S_out) *S_out = S_first;
}

void update_fractions(const LoweredStep& st, std::vector<double>& frac) {
  for (const auto& g : st.groups) {
    const int p = static_cast<int>(g.size());
    if (p < 2) continue;
    const double f = frac[static_cast<std::size_t>(g.front())];
    switch (st.collective) {
      case Collective::AllReduce:
        break;
      case Collective::ReduceScatter:
        for (int d : g) frac[static_cast<std::size_t>(d)] = f / p;
        break;
      case Collective::AllGather:
        for (int d : g) frac[static_cast<std::size_t>(d)] = f * p;
        break;
      case Collective::Reduce:
        for (std::size_t i = 1; i < g.size(); ++i) frac[static_cast<std::size_t>(g[i])] = 0.0;
        break;
      case Collective::Broadcast:
        for (int d : g) frac[static_cast<std::size_t>(d)] = f;
        break;
    }
  }
}

void check_step(const Topology& t, const LoweredStep& st) {
  for (const auto& g : st.groups)
    for (int d : g)
      if (d < 0 || d >= t.num_devices())
        throw Error(fmt::format("simulate: device {} is out of range (the system has {} devices)", d, t.num_devices()));
}

// The hop classes and level parameters one group sees (NCCL's intra/inter hardware latencies).
struct GroupInfo {
  CallShape shape;
  GroupLevels lv;
};

HwClass route_class(const Topology& t, int a, int b) {
  HwClass h = HwClass::NVLink;
  for (int e : t.route(a, b)) h = std::max(h, hw_class_of(t.edges()[static_cast<std::size_t>(e)].kind));
  return h;
}

GroupInfo group_info(const Topology& t, const NcclParams& np, const std::vector<int>& node, Collective c,
                     const std::vector<int>& g, double S) {
  GroupInfo gi;
  gi.shape.coll = c;
  gi.shape.ranks = static_cast<int>(g.size());
  gi.shape.bytes = c == Collective::AllGather ? S * static_cast<double>(g.size()) : S;
  std::vector<int> seen;
  for (int d : g) {
    const int nd = node[static_cast<std::size_t>(d)];
    if (std::find(seen.begin(), seen.end(), nd) == seen.end()) seen.push_back(nd);
  }
  gi.shape.nodes = static_cast<int>(seen.size());
  bool have_intra = false;
  // NCCL's ring in one node closes on itself (the last GPU sends to the first): that hop is part of
  // the graph's typeIntra too (tuning.cc's LL128 filter, available()).
  if (gi.shape.nodes == 1 && g.size() > 2 && route_class(t, g.back(), g.front()) == HwClass::PCI)
    gi.shape.intra_pci = true;
  for (std::size_t i = 0; i + 1 < g.size(); ++i) {
    const int a = g[i], b = g[i + 1];
    const auto r = t.route(a, b);
    if (r.empty()) continue;
    if (node[static_cast<std::size_t>(a)] == node[static_cast<std::size_t>(b)]) {
      if (route_class(t, a, b) == HwClass::PCI) gi.shape.intra_pci = true;
      if (!have_intra) {
        gi.lv.intra_hw = route_class(t, a, b);
        gi.lv.intra = np.level(t.edges()[static_cast<std::size_t>(r.front())].cls);
        have_intra = true;
      }
    } else {
      // The network's own latency: the largest over the group's node-crossing hops; the level
      // parameters: those of the first network link (the node's uplink).
      double lat = 0, reported = 0;  // seconds, microseconds
      for (int e : r) {
        const auto& ed = t.edges()[static_cast<std::size_t>(e)];
        if (hw_class_of(ed.kind) != HwClass::Net) continue;
        lat += ed.latency;
        // The edge's share of its level's per-path latency: a star's path crosses two half edges.
        const NcclLevelParams* lp = np.level(ed.cls);
        reported += lp ? lp->estimate_latency_us(ed.latency / t.edge_path_scale(e) * 1e6) * t.edge_path_scale(e)
                       : ed.latency * 1e6;
        if (!gi.lv.inter) gi.lv.inter = lp;
      }
      gi.lv.latency_inter_us = std::max(gi.lv.latency_inter_us, lat * 1e6);
      gi.lv.reported_latency_inter_us = std::max(gi.lv.reported_latency_inter_us, reported);
    }
  }
  return gi;
}

}  // namespace

Simulator::Simulator(Topology t, NcclParams p) : topo_(std::move(t)), nccl_(std::move(p)) { init_nodes(); }

Simulator::Simulator(const System& s) : topo_(Topology::build(s)), nccl_(nccl_params(s)) {
  for (const auto& l : nccl_.levels)
    if (l.bus_bw_gbps > 0) {
      const auto classes = topo_.classes();
      if (std::find(classes.begin(), classes.end(), l.level) != classes.end())
        topo_.set_class(l.level, l.bus_bw_gbps * 1e9, topo_.class_params(l.level).second);
    }
  init_nodes();
}

void Simulator::set_nccl(NcclParams p) { nccl_ = std::move(p); }

void Simulator::init_nodes() {
  // Components of the graph without its network links: union-find over the other edges.
  const auto V = topo_.vertices().size();
  std::vector<int> parent(V);
  for (std::size_t v = 0; v < V; ++v) parent[v] = static_cast<int>(v);
  auto find = [&](int x) {
    while (parent[static_cast<std::size_t>(x)] != x)
      x = parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    return x;
  };
  for (const auto& e : topo_.edges())
    if (hw_class_of(e.kind) != HwClass::Net) parent[static_cast<std::size_t>(find(e.from))] = find(e.to);
  std::vector<int> id(V, -1);
  int next = 0;
  node_.assign(static_cast<std::size_t>(topo_.num_devices()), 0);
  for (int d = 0; d < topo_.num_devices(); ++d) {
    const auto r = static_cast<std::size_t>(find(topo_.device_vertex(d)));
    if (id[r] < 0) id[r] = next++;
    node_[static_cast<std::size_t>(d)] = id[r];
  }
}

StepCost Simulator::step(const LoweredStep& st, double n, std::vector<double>& frac, Algorithm algo, bool breakdown,
                         Protocol proto) const {
  check_step(topo_, st);
  StepCost sc;
  sc.collective = st.collective;
  const std::vector<int>* first = nullptr;
  for (const auto& g : st.groups)
    if (g.size() > 1) {
      ++sc.num_groups;
      if (static_cast<int>(g.size()) > sc.group_size) first = &g;
      sc.group_size = std::max(sc.group_size, static_cast<int>(g.size()));
    }
  StepLoad acc(topo_);
  acc.node = &node_;
  if (!first) {
    sc.algo = sc.nccl_pick = Algorithm::Ring;
    add_step(acc, st, n, frac, Algorithm::Ring, &sc.bytes_per_rank);
    update_fractions(st, frac);
    return sc;
  }
  // Group shapes: the latency term is the slowest group's; the bandwidth term is the busiest link's.
  std::vector<GroupInfo> infos;
  for (const auto& g : st.groups)
    if (g.size() > 1) {
      const GroupInfo gi =
          group_info(topo_, nccl_, node_, st.collective, g, frac[static_cast<std::size_t>(g.front())] * n);
      if (std::none_of(infos.begin(), infos.end(), [&](const GroupInfo& x) {
            return x.shape.ranks == gi.shape.ranks && x.shape.nodes == gi.shape.nodes &&
                   x.shape.bytes == gi.shape.bytes && x.lv.intra_hw == gi.lv.intra_hw && x.lv.intra == gi.lv.intra &&
                   x.lv.inter == gi.lv.inter && x.lv.latency_inter_us == gi.lv.latency_inter_us &&
                   x.lv.reported_latency_inter_us == gi.lv.reported_latency_inter_us &&
                   x.shape.intra_pci == gi.shape.intra_pci;
          }))
        infos.push_back(gi);
    }
  CallShape shape = infos.front().shape;  // the largest group's call prices the bandwidth
  // One choice serves every group of the step: a protocol only where every group's NCCL offers it.
  for (const auto& gi : infos) shape.intra_pci = shape.intra_pci || gi.shape.intra_pci;
  for (const auto& gi : infos) sc.nodes = std::max(sc.nodes, gi.shape.nodes);
  auto latency = [&](Algorithm a, Protocol p, bool est = false) {
    double l = 0;
    for (const auto& gi : infos) l = std::max(l, latency_us(nccl_, gi.shape, gi.lv, a, p, est));
    return l * 1e-6;
  };
  std::vector<std::pair<Algorithm, FlowTime>> flows;  // flow time per algorithm (computed once)
  auto flow_of = [&](Algorithm a) {
    for (const auto& [x, f] : flows)
      if (x == a) return f;
    acc.clear();
    add_step(acc, st, n, frac, a, nullptr);
    flows.emplace_back(a, acc.flow_time());
    return flows.back().second;
  };
  const NcclChoice use = choose(nccl_, shape, algo, proto, flow_of, latency);
  sc.nccl_pick = use.nccl_algo;
  sc.nccl_proto = use.nccl_proto;
  sc.algo = use.algo;
  sc.proto = use.proto;
  acc.clear();
  add_step(acc, st, n, frac, use.algo, &sc.bytes_per_rank);
  const double launch = nccl_.effective_launch_us() * 1e-6 + topo_.step_overhead();
  sc.bandwidth_s = bandwidth_time(nccl_, shape, use.algo, use.proto, acc.flow_time(), false);
  sc.latency_s = latency(use.algo, use.proto) + launch;
  sc.time_s = sc.latency_s + sc.bandwidth_s;
  acc.bw_time(&sc.bottleneck_edge, &sc.bottleneck_bytes);
  if (sc.time_s > 0 && sc.group_size > 1) {
    sc.algbw_gbps = sc.bytes_per_rank / sc.time_s / 1e9;
    sc.busbw_gbps = sc.algbw_gbps * bus_factor(st.collective, sc.group_size);
  }
  if (breakdown) {
    for (int e : acc.touched) {
      const double b = acc.bytes[static_cast<std::size_t>(e)];
      sc.links.push_back({e, b, acc.busy(e)});
    }
    std::sort(sc.links.begin(), sc.links.end(), [](const LinkLoad& a, const LinkLoad& b) {
      return a.busy_s != b.busy_s ? a.busy_s > b.busy_s : a.edge < b.edge;
    });
  }
  update_fractions(st, frac);
  return sc;
}

ProgramCost Simulator::simulate(const LoweredProgram& prog, const CostOptions& opt) const {
  const double n = opt.bytes > 0 ? opt.bytes : 0.0;
  if (!(n > 0)) throw Error("simulate: the data size must be positive (set CostOptions::bytes)");
  std::vector<double> frac(static_cast<std::size_t>(topo_.num_devices()), 1.0);
  ProgramCost pc;
  for (const auto& st : prog) {
    pc.steps.push_back(step(st, n, frac, opt.algo, opt.breakdown, opt.proto));
    pc.time_s += pc.steps.back().time_s;
  }
  return pc;
}

double Simulator::time(const LoweredProgram& prog, const CostOptions& opt) const {
  const double n = opt.bytes;
  if (!(n > 0)) throw Error("simulate: the data size must be positive (set CostOptions::bytes)");
  std::vector<double> frac(static_cast<std::size_t>(topo_.num_devices()), 1.0);
  double total = 0.0;
  for (const auto& st : prog) total += step(st, n, frac, opt.algo, false, opt.proto).time_s;
  return total;
}

StepCost Simulator::collective(const LoweredStep& st, double bytes, Algorithm algo, bool breakdown,
                               Protocol proto) const {
  std::vector<double> frac(static_cast<std::size_t>(topo_.num_devices()), 1.0);
  if (st.collective == Collective::AllGather)
    for (const auto& g : st.groups)
      for (int d : g) frac[static_cast<std::size_t>(d)] = 1.0 / static_cast<double>(g.size());
  return step(st, bytes, frac, algo, breakdown, proto);
}

}  // namespace p2v::sim
