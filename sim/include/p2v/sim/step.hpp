#pragma once
// Training-step model (docs/step.md): a model's layers, the device's compute speed and p2v's
// simulator for the gradient synchronisation, combined in an event simulation of one step
// (forward, backward layer by layer, gradients synchronised in buckets that overlap the backward
// pass), and the choice of bucket boundaries and program per bucket. docs/step.md states the
// model, its assumptions and its limits.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/cost.hpp"

namespace p2v::sim::step {

// One layer, forward order. Time is given either as FLOPs (turned into seconds with the system's
// device numbers) or measured seconds; unset values are negative.
struct Layer {
  std::string name;
  std::int64_t params = 0;
  double fwd_flops = -1, bwd_flops = -1;  // bwd defaults to 2 x fwd
  double fwd_s = -1, bwd_s = -1;          // measured; bwd defaults to 2 x fwd
};

// A measured training throughput of the model on one kind of device (the model file's
// "throughput" list; published numbers carry their source). Used to fit the compute speed.
struct Throughput {
  std::string id;            // what `p2v step --throughput ID` names
  std::string device;        // e.g. "A100-SXM4-80GB"
  std::string precision;     // e.g. "tf32", "amp", "fp32"
  std::string framework;     // what ran it (framework, container, script)
  std::string source;        // where the number is published (URL, repository + path + commit, paper + table)
  std::string note;          // optional
  int batch = 0;             // samples per device per step in the measurement
  int gpus = 1;              // devices in the measurement (data-parallel)
  double samples_per_s = 0;  // over all `gpus` devices
  double step_s() const;     // one device's step: batch / (samples_per_s / gpus)
};

struct Model {
  std::string name;
  int batch = 0;                      // per-device batch the FLOPs / seconds are for (0: not given)
  int grad_bytes = 4;                 // from "grad_dtype": fp32 4, fp16/bf16 2
  double state_bytes_per_param = 16;  // weights + gradients + Adam moments (for the fit check)
  std::vector<Layer> layers;
  std::vector<Throughput> throughput;
  std::int64_t total_params() const;
  // The entry named `id`; throws p2v::Error listing the ids there are.
  const Throughput& find_throughput(const std::string& id) const;
};

// Strict: unknown fields, missing or negative numbers and a wrong "total_params" are errors.
Model parse_model_json(const std::string& text, const std::string& origin);
Model load_model_file(const std::string& path);

// Where the layers' compute times come from. By default: FLOPs / (the system's peak x efficiency),
// or the model's measured seconds. With `measured_step_s`: one speed fitted so that one device's
// forward + backward (model-parallel degree 1, at `batch`) takes exactly that long; every layer
// keeps its share (its FLOPs, or its measured seconds), so backward stays what the model file
// says (by default 2 x forward, a modelling assumption).
struct ComputeOptions {
  int batch = 0;               // per-device batch; 0 = the model's. FLOPs and seconds scale linearly.
  double measured_step_s = 0;  // > 0: fit the compute speed to this single-device step time
};

// What layer_costs used, for the report.
struct ComputeFit {
  bool fitted = false;     // measured_step_s was given
  int batch = 0;           // the per-device batch the times are for
  double step_s = 0;       // one device's forward + backward at model-parallel degree 1
  double flops = 0;        // its FLOPs (0 when the model gives seconds only)
  double flops_per_s = 0;  // the speed used: device numbers, or fitted (0 without FLOPs)
  double efficiency = 0;   // flops_per_s / the system's peak (0 when the system has no peak)
  double time_scale = 1;   // fitted step / step from device numbers or measured seconds
};

// What one device does for one layer: compute seconds and gradient bytes it synchronises.
struct LayerCost {
  double fwd_s = 0, bwd_s = 0;
  double grad_bytes = 0;  // per device: params x grad bytes / model-parallel degree
};

// Data parallelism over the reduction axes (degree `data_parallel`); the other axes shard every
// layer evenly (tensor parallelism, degree `model_parallel`): a device computes 1/model_parallel
// of each layer's FLOPs and holds 1/model_parallel of its gradients. Throws p2v::Error when the
// model needs device numbers the system lacks, or when the model's state does not fit the device
// memory (ZeRO: state also divided by data_parallel).
// `fit`, if given, receives what was used.
std::vector<LayerCost> layer_costs(const Model& m, const engine::System& s, int data_parallel, int model_parallel,
                                   bool zero, const ComputeOptions& co = {}, ComputeFit* fit = nullptr);

// Predicted synchronisation time of program p on a bucket of `bytes` per device, from the
// simulator, cached per (program, bytes). In ZeRO mode a program's trailing AllGather steps are
// the parameter gather before the forward pass; sync() is the part before them (the gradient
// ReduceScatter) and gather() their time.
class SyncCosts {
 public:
  SyncCosts(const sim::Simulator& sim, std::vector<engine::LoweredProgram> programs, sim::Algorithm algo, bool zero);
  int size() const { return static_cast<int>(programs_.size()); }
  const engine::LoweredProgram& program(int p) const { return programs_[static_cast<std::size_t>(p)]; }
  double sync(int p, double bytes) { return get(p, bytes).first; }
  double gather(int p, double bytes) { return get(p, bytes).second; }
  bool zero() const { return zero_; }
  std::size_t evaluations() const { return evaluations_; }

 private:
  std::pair<double, double> get(int p, double bytes);
  const sim::Simulator& sim_;
  std::vector<engine::LoweredProgram> programs_;
  std::vector<std::size_t> prefix_len_;  // steps before the trailing AllGathers (ZeRO)
  sim::Algorithm algo_;
  bool zero_;
  std::size_t evaluations_ = 0;
  struct Key {
    int p;
    std::uint64_t bits;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return std::hash<std::uint64_t>()(k.bits * 31 + static_cast<std::uint64_t>(k.p));
    }
  };
  std::unordered_map<Key, std::pair<double, double>, KeyHash> cache_;
};

// A bucket: layers [first, last] (forward indices) whose gradients are synchronised together.
struct Bucket {
  int first = 0, last = 0;
  int program = 0;
  double bytes = 0;
  double ready_s = 0, start_s = 0, end_s = 0;   // gradient sync (backward)
  double gather_start_s = 0, gather_end_s = 0;  // ZeRO parameter gather (forward)
  double sync_s() const { return end_s - start_s; }
  double gather_s() const { return gather_end_s - gather_start_s; }
};

struct StepResult {
  double step_s = 0, compute_s = 0, fwd_s = 0, bwd_s = 0;
  double sync_s = 0;            // sum of all buckets' sync (and, ZeRO, gather) times
  double exposed_comm_s = 0;    // step_s - compute_s
  double autosync_s = 0;        // AutoSync: max(compute_s, sum over layers of the program's cost)
  std::vector<Bucket> buckets;  // backward order (the first synchronised first)
  std::vector<double> layer_fwd_start, layer_bwd_start;  // per layer (forward index)
};

// Buckets as DDP forms them: layers in backward order, a bucket closed once it holds at least
// `cap_bytes` (per device). Returned in backward order as (first, last) forward indices.
std::vector<std::pair<int, int>> ddp_buckets(const std::vector<LayerCost>& lc, double cap_bytes);

// Event simulation of one step with the given buckets (backward order) and program per bucket.
// DDP: forward, backward; a bucket's sync starts when its last gradient is ready and the
// previous sync has finished. ZeRO: before the forward pass each bucket's parameters are
// gathered (in forward order, one bucket prefetched ahead of the compute), and the gradients are
// reduce-scattered like DDP's buckets. `autosync_program` is used for AutoSync's estimate.
StepResult simulate_step(const std::vector<LayerCost>& lc, const std::vector<std::pair<int, int>>& buckets,
                         const std::vector<int>& programs, SyncCosts& costs, int autosync_program);

struct ChooseOptions {
  int max_units = 64;           // candidate boundaries: layers merged into at most this many units
  double max_bucket_bytes = 0;  // a bucket holds at most this much (0: 4 x the DDP cap, at least 1 unit)
  std::vector<int> programs;    // candidate programs (indices into SyncCosts)
};

struct Choice {
  std::vector<std::pair<int, int>> buckets;
  std::vector<int> programs;
  int units = 0;  // candidate boundaries considered (+1)
};

// Dynamic programming over bucket boundaries in backward order, jointly with the program per
// bucket: E[j] = min over i < j and programs p of max(ready(j), E[i]) + sync_p(bytes(i..j)),
// the earliest end of the last sync covering the first j units. The step's end is
// max(compute end, E[U]) and E is monotone in E[i], so the DP is exact for the candidate
// boundaries and programs (ZeRO: it optimises the backward pass; the gathers follow the buckets).
Choice choose(const std::vector<LayerCost>& lc, SyncCosts& costs, double ddp_cap_bytes, const ChooseOptions& opt);

// Gantt chart of a step: compute lanes, sync lane (and, ZeRO, gather lane) on a time axis with
// ticks, buckets labelled b0, b1, ... and listed in a table; with `ddp` non-null, DDP's default
// schedule is drawn above the chosen one on the same axis.
std::string step_svg(const StepResult& chosen, const StepResult* ddp, const std::vector<std::string>& program_names,
                     const std::string& title);
std::string step_svg(const StepResult& r, const std::vector<std::string>& program_names, const std::string& title);

}  // namespace p2v::sim::step
