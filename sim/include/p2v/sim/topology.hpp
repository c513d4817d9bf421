#pragma once
// The simulator's topology graph (docs/simulator.md §1): devices, switches, NICs, CPUs and PCIe switches as
// vertices; one directed edge per direction of every physical link, with bandwidth and latency.
// Built from a system's per-level interconnects (a tree of stars), or, below a chosen level, from
// the system file's explicit "topology" section (docs/simulator.md describes the format).
// Routes between devices are fixed shortest paths (time per byte first, then latency); devices never
// forward traffic (a GPU is not a router), every other vertex does.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "p2v/engine/system.hpp"

namespace p2v::sim {

struct Vertex {
  std::string name;  // "node1/gpu3", "node1:switch", "root:nic", "node0/cpu1", ...
  std::string kind;  // "device", "switch", "ring", "pcie", "nic", "cpu", "network", ... (free text)
  int device = -1;   // system device number for devices, -1 otherwise
  int depth = 0;     // 0 for devices; hubs get the depth of the level they join (for drawing)
  bool is_device() const { return device >= 0; }
};

// One direction of a full-duplex link.
struct Edge {
  int from = 0, to = 0;         // vertex indices
  double bandwidth = 0.0;       // bytes per second, this direction
  double latency = 0.0;         // seconds
  std::string kind;             // "switch", "nic", "nvlink", "pcie", "qpi", ...
  std::string cls;              // calibration class: a level name, or the link kind of a topology section
  int reverse = -1;             // the other direction
  double flow_bandwidth = 0.0;  // bytes per second one flow gets at most on this link; 0 = no cap
};

class Topology {
 public:
  // Builds the graph of system `s`. Throws p2v::Error when a level with more than one instance
  // has no interconnect, or when the topology section is malformed or leaves devices unreachable.
  static Topology build(const engine::System& s);

  int num_devices() const { return num_devices_; }
  const std::vector<Vertex>& vertices() const { return vertices_; }
  const std::vector<Edge>& edges() const { return edges_; }
  int device_vertex(int device) const { return device_vertex_[static_cast<std::size_t>(device)]; }
  // "node0/gpu3->node0:switch"
  std::string edge_name(int e) const;

  // Directed edges of the route from device a to device b (empty when a == b).
  std::span<const int> route(int a, int b) const {
    const auto i = static_cast<std::size_t>(a) * static_cast<std::size_t>(num_devices_) + static_cast<std::size_t>(b);
    return {route_edges_.data() + route_begin_[i], route_edges_.data() + route_begin_[i + 1]};
  }
  // Sum of the latencies along route(a, b), seconds.
  double route_latency(int a, int b) const {
    return route_latency_[static_cast<std::size_t>(a) * static_cast<std::size_t>(num_devices_) +
                          static_cast<std::size_t>(b)];
  }
  // The "node" a device belongs to: its index at the outermost level with more than one
  // instance (used to shape NCCL-like trees: chains inside a node, trees across nodes).
  int node_of(int device) const { return node_of_[static_cast<std::size_t>(device)]; }
  int num_nodes() const { return num_nodes_; }

  // Calibration classes, sorted; and per-class parameters (bandwidth B/s, latency s).
  std::vector<std::string> classes() const;
  // Sets bandwidth and latency of every edge of class `cls` (latency is per edge; a star's
  // device-to-hub-to-device path crosses two half-latency edges). Recomputes nothing: routes
  // stay fixed, only their costs change.
  void set_class(const std::string& cls, double bandwidth, double latency_per_path);
  // Mean bandwidth and per-path latency of class `cls` (as set_class takes them).
  std::pair<double, double> class_params(const std::string& cls) const;
  // The share of its class's per-path latency edge `e` carries (0.5 for each of a star's two
  // half-latency edges, 1 for a topology section's links).
  double edge_path_scale(int e) const { return edge_path_scale_[static_cast<std::size_t>(e)]; }

  // Human-readable summary: vertices, links, classes.
  std::string describe() const;
  // True if built from an explicit "topology" section.
  bool explicit_section() const { return explicit_; }

  // Fixed cost of every step (collective call: launch and synchronisation), seconds; from the
  // topology section's "step_overhead_us" (default 0).
  double step_overhead() const { return step_overhead_; }
  void set_step_overhead(double s) { step_overhead_ = s; }

 private:
  void compute_routes();
  void recompute_route_latency();
  int add_vertex(std::string name, std::string kind, int device, int depth);
  void add_link(int a, int b, double bw, double lat, const std::string& kind, const std::string& cls, double path_scale,
                double flow_bw = 0.0);

  int num_devices_ = 0, num_nodes_ = 1;
  double step_overhead_ = 0.0;
  bool explicit_ = false;
  std::vector<Vertex> vertices_;
  std::vector<Edge> edges_;
  std::vector<double> edge_path_scale_;  // latency of a path = sum; class latency = edge lat / scale
  std::vector<int> device_vertex_, node_of_;
  std::vector<std::size_t> route_begin_;
  std::vector<int> route_edges_;
  std::vector<double> route_latency_;
};

}  // namespace p2v::sim
