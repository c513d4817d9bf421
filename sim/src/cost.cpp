#include "p2v/sim/cost.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <cmath>

#include "p2v/engine/error.hpp"

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

// Accumulates one step: per-edge bytes (already multiplied by repetitions) and the latency term.
// On a link with a per-flow cap (Edge::flow_bandwidth), the largest single flow is tracked too:
// the link is busy for max(total / bandwidth, largest flow / cap), i.e. each flow gets
// min(cap, its share of the bandwidth).
struct Acc {
  const Topology& t;
  std::vector<double> bytes;    // per edge
  std::vector<double> maxflow;  // per edge: the largest single flow (only on capped edges)
  std::vector<int> touched;
  double latency = 0.0;
  explicit Acc(const Topology& topo) : t(topo), bytes(topo.edges().size(), 0.0), maxflow(topo.edges().size(), 0.0) {}

  void flow(int a, int b, double nbytes) {
    for (int e : t.route(a, b)) {
      const auto i = static_cast<std::size_t>(e);
      auto& x = bytes[i];
      if (x == 0.0) touched.push_back(e);
      x += nbytes;
      if (t.edges()[i].flow_bandwidth > 0) maxflow[i] = std::max(maxflow[i], nbytes);
    }
  }
  // Time edge e is busy in this step.
  double busy(int e) const {
    const auto i = static_cast<std::size_t>(e);
    const auto& ed = t.edges()[i];
    const double tt = bytes[i] / ed.bandwidth;
    return ed.flow_bandwidth > 0 ? std::max(tt, maxflow[i] / ed.flow_bandwidth) : tt;
  }
  // Bandwidth term: the busiest link's time; also reports it.
  double bw_time(int* bottleneck = nullptr, double* bb = nullptr) const {
    double worst = 0.0;
    int we = -1;
    for (int e : touched) {
      const double tt = busy(e);
      if (tt > worst || (tt == worst && e < we)) {
        worst = tt;
        we = e;
      }
    }
    if (bottleneck) *bottleneck = we;
    if (bb) *bb = we >= 0 ? bytes[static_cast<std::size_t>(we)] : 0.0;
    return worst;
  }
  void clear() {
    for (int e : touched) bytes[static_cast<std::size_t>(e)] = maxflow[static_cast<std::size_t>(e)] = 0.0;
    touched.clear();
    latency = 0.0;
  }
};

// Ring over members (ascending = ring order): `reps` rounds, each member sends `b` bytes to its
// successor per round.
void ring(Acc& acc, const std::vector<int>& m, double b, int reps) {
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
void chain(Acc& acc, const std::vector<int>& order, double b) {
  double lat = 0.0;
  for (std::size_t i = 0; i + 1 < order.size(); ++i) {
    acc.flow(order[i], order[i + 1], b);
    lat += acc.t.route_latency(order[i], order[i + 1]);
  }
  acc.latency = std::max(acc.latency, lat);
}

// NCCL-like tree AllReduce: a chain inside each node (up for the reduction, down for the
// broadcast), and a double binary tree across the node heads, each tree carrying half the data.
void tree_allreduce(Acc& acc, const std::vector<int>& m, double S) {
  std::vector<std::vector<int>> seg;
  for (int d : m) {
    if (seg.empty() || acc.t.node_of(seg.back().front()) != acc.t.node_of(d)) seg.push_back({});
    seg.back().push_back(d);
  }
  double chain_lat = 0.0;
  for (const auto& s : seg) {
    double l = 0.0;
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      acc.flow(s[i + 1], s[i], S);  // reduce up
      acc.flow(s[i], s[i + 1], S);  // broadcast down
      l += std::max(acc.t.route_latency(s[i + 1], s[i]), acc.t.route_latency(s[i], s[i + 1]));
    }
    chain_lat = std::max(chain_lat, l);
  }
  const std::size_t k = seg.size();
  double tree_lat = 0.0;
  if (k > 1) {
    int depth = 0;
    while ((std::size_t{1} << (depth + 1)) <= k) ++depth;  // floor(log2 k)
    double hop = 0.0;
    for (int tr = 0; tr < 2; ++tr)
      for (std::size_t i = 1; i < k; ++i) {
        const std::size_t par = (i - 1) / 2;
        const int c = seg[tr == 0 ? i : k - 1 - i].front();
        const int p = seg[tr == 0 ? par : k - 1 - par].front();
        acc.flow(c, p, S / 2);
        acc.flow(p, c, S / 2);
        hop = std::max({hop, acc.t.route_latency(c, p), acc.t.route_latency(p, c)});
      }
    tree_lat = depth * hop;
  }
  acc.latency = std::max(acc.latency, 2.0 * (chain_lat + tree_lat));
}

// Adds every group's transfers of the step to acc; returns nothing, fills S (per rank buffer).
void add_step(Acc& acc, const LoweredStep& st, double n, const std::vector<double>& frac, Algorithm algo,
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
        else
          ring(acc, g, S / p, 2 * (p - 1));
        break;
      case Collective::ReduceScatter:
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

}  // namespace

StepCost Simulator::step(const LoweredStep& st, double n, std::vector<double>& frac, Algorithm algo,
                         bool breakdown) const {
  check_step(topo_, st);
  StepCost sc;
  sc.collective = st.collective;
  for (const auto& g : st.groups)
    if (g.size() > 1) {
      ++sc.num_groups;
      sc.group_size = std::max(sc.group_size, static_cast<int>(g.size()));
    }
  Acc acc(topo_);
  auto eval = [&](Algorithm a, double* S) {
    acc.clear();
    add_step(acc, st, n, frac, a, S);
    double bw = acc.bw_time();
    if (a == Algorithm::Tree && st.collective == Collective::AllReduce) bw /= kTreeBandwidthEfficiency;
    return std::pair{bw + acc.latency, bw};
  };
  Algorithm use = algo;
  sc.nccl_pick = Algorithm::Ring;
  if (st.collective == Collective::AllReduce) {
    const double tr = eval(Algorithm::Ring, nullptr).first;
    const double tt = eval(Algorithm::Tree, nullptr).first;
    sc.nccl_pick = tt < tr ? Algorithm::Tree : Algorithm::Ring;
    if (algo == Algorithm::Auto) use = sc.nccl_pick;
  } else {
    use = Algorithm::Ring;
  }
  sc.algo = use;
  auto [total, bwt] = eval(use, &sc.bytes_per_rank);
  const double overhead = sc.num_groups > 0 ? topo_.step_overhead() : 0.0;
  sc.time_s = total + overhead;
  sc.bandwidth_s = bwt;
  sc.latency_s = acc.latency + overhead;
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
    pc.steps.push_back(step(st, n, frac, opt.algo, opt.breakdown));
    pc.time_s += pc.steps.back().time_s;
  }
  return pc;
}

double Simulator::time(const LoweredProgram& prog, const CostOptions& opt) const {
  const double n = opt.bytes;
  if (!(n > 0)) throw Error("simulate: the data size must be positive (set CostOptions::bytes)");
  std::vector<double> frac(static_cast<std::size_t>(topo_.num_devices()), 1.0);
  Acc acc(topo_);
  double total = 0.0;
  for (const auto& st : prog) {
    check_step(topo_, st);
    Algorithm use = opt.algo;
    if (st.collective != Collective::AllReduce) use = Algorithm::Ring;
    double t;
    if (use == Algorithm::Auto) {
      acc.clear();
      add_step(acc, st, n, frac, Algorithm::Ring, nullptr);
      const double tr = acc.bw_time() + acc.latency;
      acc.clear();
      add_step(acc, st, n, frac, Algorithm::Tree, nullptr);
      t = std::min(tr, acc.bw_time() / kTreeBandwidthEfficiency + acc.latency);
    } else {
      acc.clear();
      add_step(acc, st, n, frac, use, nullptr);
      t = (use == Algorithm::Tree ? acc.bw_time() / kTreeBandwidthEfficiency : acc.bw_time()) + acc.latency;
    }
    if (!acc.touched.empty()) t += topo_.step_overhead();
    total += t;
    update_fractions(st, frac);
  }
  return total;
}

StepCost Simulator::collective(const LoweredStep& st, double bytes, Algorithm algo, bool breakdown) const {
  std::vector<double> frac(static_cast<std::size_t>(topo_.num_devices()), 1.0);
  if (st.collective == Collective::AllGather)
    for (const auto& g : st.groups)
      for (int d : g) frac[static_cast<std::size_t>(d)] = 1.0 / static_cast<double>(g.size());
  return step(st, bytes, frac, algo, breakdown);
}

}  // namespace p2v::sim
