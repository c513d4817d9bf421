#pragma once
// `p2v step` as a library call (docs/step.md): for every placement, the fixed (DDP or
// ZeRO default) schedule and the chosen buckets and programs; and its report, the format of
// `p2v step --json` (docs/formats.md, "Simulator"), with to_json and a strict reader.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/placement.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/step.hpp"

namespace p2v::sim::step {

struct StepOptions {
  engine::SynthOptions synth;
  bool zero = false;      // --mode zero
  std::string program;    // the fixed schedule's program (notation); "" = the mode's default
  double bucket_mb = 25;  // DDP bucket cap, 10^6 bytes per device
  int candidates = 8;     // programs per bucket the choice considers, besides the default
  int units = 64;         // candidate bucket boundaries
  bool choose = true;     // also choose buckets and programs
  Algorithm algo = Algorithm::Ring;
  // Compute speed (docs/step.md, "Compute"): per-device batch (0 = the model's), and a measured
  // single-device step time to fit, given directly or as the id of one of the model's
  // "throughput" entries (at most one of the two).
  int batch = 0;
  double measured_step_s = 0;
  std::string throughput;
  // Devices the measured step ran on, data-parallel (1: a single device). More: the step of one
  // node of that many devices (the system's innermost levels), so the fit makes the simulated DDP
  // default step there take measured_step_s, its exposed communication included. A throughput
  // entry brings its own "gpus".
  int measured_gpus = 1;
};

// One placement: its candidate programs and the fixed and chosen schedules.
struct PlacementPlan {
  engine::ParallelismMatrix matrix;
  std::vector<std::string> names;  // per SyncCosts program
  StepResult fixed, chosen;
  bool has_chosen = false;
  bool chosen_is_fixed = false;  // the DP's schedule was not faster than the fixed one
  std::size_t evaluations = 0;
  int units = 0;
  double best() const { return has_chosen ? chosen.step_s : fixed.step_s; }
};

struct StepRun {
  int data_parallel = 1, model_parallel = 1;
  ComputeFit compute;         // what the layer times are based on
  std::string compute_basis;  // "device numbers", "model's measured seconds", "--measured-step-ms", "throughput ID"
  std::vector<PlacementPlan> placements;
  std::size_t best = 0;  // the placement with the fastest step
};

// Data parallelism over the `reduce` axes, the other axes shard the layers. Throws p2v::Error on
// bad options (a --program that is not a program of a matrix) and for a model that does not fit.
StepRun plan_step(const Model& model, const engine::System& system, const std::vector<int>& axes,
                  const std::vector<int>& reduce, const std::vector<engine::ParallelismMatrix>& matrices,
                  const StepOptions& opt);

// ---- the format of `p2v step --json`

inline constexpr const char* kStepFormat = "p2v-step";
inline constexpr int kStepVersion = 1;

struct BucketRecord {
  std::string first_layer, last_layer;
  int first = 0, last = 0;  // forward layer indices
  double bytes = 0;
  std::string program;
  double ready_s = 0, start_s = 0, end_s = 0, sync_s = 0;
  std::optional<double> gather_start_s, gather_end_s;  // ZeRO
  bool operator==(const BucketRecord&) const = default;
};

struct ScheduleRecord {
  double step_s = 0, compute_s = 0, forward_s = 0, backward_s = 0, sync_s = 0, exposed_comm_s = 0, autosync_s = 0;
  std::vector<BucketRecord> buckets;  // backward order
  bool operator==(const ScheduleRecord&) const = default;
};

struct PlacementRecord {
  engine::ParallelismMatrix matrix;
  double fixed_step_s = 0;
  std::int64_t simulator_calls = 0;
  std::optional<double> chosen_step_s;  // with the choice: and the two below
  std::int64_t chosen_buckets = 0;
  int units = 0;
  bool operator==(const PlacementRecord&) const = default;
};

// How the compute times were obtained ("compute" in the report).
struct ComputeRecord {
  std::string basis;
  int batch = 0;
  double step_s = 0;  // one device's forward + backward at model-parallel degree 1
  std::optional<double> flops_per_s, efficiency;
  bool operator==(const ComputeRecord&) const = default;
};

struct StepReport {
  int version = kStepVersion;
  std::string model, system, mode;  // mode: ddp or zero
  std::int64_t params = 0;
  std::vector<int> axes, reduce;
  int data_parallel = 1, model_parallel = 1;
  double bucket_mb = 0;
  std::optional<ComputeRecord> compute;  // always written; optional when read (older reports)
  engine::ParallelismMatrix matrix;      // the best placement, whose schedules follow
  ScheduleRecord fixed;                  // written at the top level
  std::optional<ScheduleRecord> chosen;
  bool chosen_is_fixed = false;
  double gain = 0;  // fixed / chosen step time
  std::vector<PlacementRecord> placements;
  bool operator==(const StepReport&) const = default;
};

StepReport make_report(const Model& model, const engine::System& system, const std::vector<int>& axes,
                       const std::vector<int>& reduce, const StepOptions& opt, const StepRun& run);
nlohmann::json to_json(const StepReport& r);
StepReport step_report_from_json(const nlohmann::json& j, const std::string& origin);
StepReport parse_step_report(const std::string& text, const std::string& origin);

}  // namespace p2v::sim::step
