#pragma once
// Pictures (docs/simulator.md), hand-written SVG: (a) the topology graph with the device groups of each
// program step highlighted and links shaded by load; (b) predicted time per program in rank
// order (as the paper's Fig. 11 plots them), with measured times when available.
#include <string>
#include <vector>

#include "p2v/sim/cost.hpp"

namespace p2v::sim {

// One panel per step of `prog` (one plain panel when `prog` is empty). `cost` (optional, same
// length as prog) shades links by bytes and marks each step's bottleneck. `step_labels` (optional)
// names the steps.
std::string topology_svg(const Topology& t, const engine::LoweredProgram& prog, const ProgramCost* cost,
                         const std::string& title, const std::vector<std::string>& step_labels = {});

// Axis ticks 0, s, 2s, ... up to `hi` with s = 1, 2, 2.5 or 5 times a power of ten, about `target`
// intervals (the labels then read 0, 10 ms, 20 ms, ... instead of 0, 14.032 ms, ...).
std::vector<double> nice_ticks(double hi, int target);

// A time tick's label in the unit that suits the axis's span: "0", "10 ms", "2.5 us", "1.2 s".
std::string tick_label(double seconds, double span);

struct RankPoint {
  std::string label;
  double predicted_s = 0.0;
  double measured_s = -1.0;  // < 0: not measured
};

// Programs in the given order (rank order); `allreduce_s` > 0 draws the single-AllReduce line.
std::string ranking_svg(const std::vector<RankPoint>& pts, double allreduce_s, const std::string& title,
                        int label_top = 5);

}  // namespace p2v::sim
