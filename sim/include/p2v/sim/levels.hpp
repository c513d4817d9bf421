#pragma once
// The simulator at any size (docs/shape.md §7, docs/simulator.md): the same NCCL-like ring, chain
// and tree costs as the graph simulator on the same level topology (every level's interconnect a
// star of its instances' uplinks), computed from per-level counts. All groups of a step are alike,
// so a link's load follows from how many groups cross it: O(levels) per step, whatever the device
// count. Systems with a "topology" section need the graph simulator (sim_cost.hpp).
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/nccl_model.hpp"

namespace p2v::sim {

// Presets for systems given without interconnects (inline `--system node=64,gpu=8`), listed
// innermost level first; levels beyond the list reuse its last entry. Each carries its datasheet
// sources and the NCCL model's parameters (sim/nccl_model.hpp): architecture, channels, launch
// overhead, NVLS/SHARP availability, and per level (same order as `levels`) NIC count, per-NIC
// rate and per-hop latencies where they differ from NCCL's defaults.
struct Preset {
  std::string name, description;
  std::vector<engine::Interconnect> levels;  // [0] joins the devices of a node, [1] the nodes, ...
  NcclParams nccl;                           // levels[i].level empty: positional, named when applied
  std::vector<std::string> aliases;          // old names still accepted
  std::string sources;                       // where the numbers come from
};
const std::vector<Preset>& presets();
const Preset& find_preset(const std::string& name);  // also by alias; throws p2v::Error listing the names
// The preset used when an inline system has no interconnects and no --preset is given.
inline constexpr const char* kDefaultPreset = "h100";
// Fills every level of cardinality > 1 that has no interconnect from `p`; returns how many. When
// it fills any and the system has no "nccl" section, writes the preset's (level parameters named
// after the levels they were applied to). A system with fewer devices per node than the preset's
// node gets the share of the node's NICs those devices have on its node level (levels.cpp); `note`,
// when given, then says so.
int apply_preset(engine::System& s, const Preset& p, std::string* note = nullptr);
// Turns in-network reduction (SHARP / CollNet) on or off in the system's "nccl" section.
void set_sharp(engine::System& s, bool on);

struct LevelStep {
  StepCost cost;           // bottleneck_edge = the bottleneck's user level (-1: idle)
  std::string bottleneck;  // e.g. "node uplink (nic)"
};

struct LevelProgramCost {
  double time_s = 0.0;
  std::vector<LevelStep> steps;
};

class LevelSimulator {
 public:
  // Throws p2v::Error when the system has a "topology" section or a level of cardinality > 1
  // without an interconnect (naming it and the --preset way out).
  explicit LevelSimulator(const engine::System& s);
  const NcclParams& nccl() const { return nccl_; }

  // One program of shape `s`: collectives and their level patterns, starting from `bytes` per device.
  LevelProgramCost simulate(const engine::Shape& s, const std::vector<engine::Collective>& cs,
                            const std::vector<engine::GroupPattern>& gs, const CostOptions& opt) const;
  // The single AllReduce over the reduction groups.
  double allreduce_time(const engine::Shape& s, const CostOptions& opt) const;

 private:
  LevelStep step(const engine::Shape& s, engine::Collective c, const engine::GroupPattern& g, double S, Algorithm algo,
                 Protocol proto) const;
  NcclParams nccl_;
  std::vector<HwClass> hw_;  // per user level: the hop class of its interconnect
  std::vector<int> cards_;
  std::vector<std::string> names_;
  std::vector<engine::Interconnect> links_;  // per user level (unused where cardinality is 1)
};

}  // namespace p2v::sim
