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

struct RankPoint {
  std::string label;
  double predicted_s = 0.0;
  double measured_s = -1.0;  // < 0: not measured
};

// Programs in the given order (rank order); `allreduce_s` > 0 draws the single-AllReduce line.
std::string ranking_svg(const std::vector<RankPoint>& pts, double allreduce_s, const std::string& title,
                        int label_top = 5);

}  // namespace p2v::sim
