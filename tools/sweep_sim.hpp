#pragma once
// Size sweeps of `p2v simulate` and `p2v explore` (docs/sweeps.md): one ranking per size, a
// row per size with nccl-tests' algbw/busbw, and the crossover table (docs/sweeps.md).
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "p2v/engine/programs.hpp"
#include "p2v/sim/simulate.hpp"
#include "sweep.hpp"

namespace p2v::tools {

struct SweepOutput {
  bool json = false;
  ProgressArgs progress;
  // simulate/explore sweeps: the preset's published accuracy (fill_interconnects), written as
  // "accuracy"; null: none. (step_sweep takes it in StepSweepInfo::head, filled by its first run.)
  nlohmann::json accuracy;
};

// `opt` is the single-size simulation; its cost.bytes is replaced by each size in turn.
int simulate_sweep(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                   const std::vector<engine::ParallelismMatrix>& matrices, sim::SimulateOptions opt,
                   const std::vector<double>& sizes, const SweepOutput& out);

// explore: reductions (axes, weight) ranked over every placement at each size.
int explore_sweep(const engine::System& system, const std::vector<int>& axes,
                  const std::vector<std::pair<std::vector<int>, double>>& reductions,
                  const std::vector<engine::ParallelismMatrix>& matrices, engine::ProgramSource& programs,
                  sim::CostOptions cost, const std::string& algo, const std::vector<double>& sizes,
                  const SweepOutput& out);

}  // namespace p2v::tools

namespace p2v::tools {

// One bucket cap of a `p2v step --buckets` sweep: the best placement's fixed (DDP/ZeRO default)
// and chosen schedules at that cap.
struct StepSweepRow {
  std::string matrix;
  double fixed_s = 0, chosen_s = 0, exposed_s = 0;  // exposed: of the reported (chosen, else fixed) schedule
  std::size_t buckets = 0;                          // of the fixed schedule
  std::string programs;                             // the chosen schedule's programs, in order of first use
  nlohmann::json json;                              // the row's JSON (bucket cap added by step_sweep)
};

// What `one` fills in while it runs: the table's first lines, whether several placements are
// ranked, and the JSON's leading fields.
struct StepSweepInfo {
  std::string header;
  bool several = false;
  nlohmann::json head;
};

// Runs `one(cap_bytes)` per cap; then prints the table (info.header first) or JSON (info.head
// plus "sizes" and "crossover"); the crossover is over the chosen programs (and placement, when
// several).
int step_sweep(const std::vector<double>& caps, const std::function<StepSweepRow(double)>& one, StepSweepInfo& info,
               const SweepOutput& out);

}  // namespace p2v::tools
