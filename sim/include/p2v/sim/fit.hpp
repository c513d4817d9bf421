#pragma once
// Predicted vs measured for nccl-tests logs, and the fit of a system's model parameters to them
// (`p2v calibrate --nccl-tests`; docs/simulator.md "Calibration").
//
// A log of R ranks on N hosts is one group of all R devices of a system of R devices (the
// system's node count must be N when the log names its hosts). Every row is one point: the
// collective of the log, nccl-tests' size S (bytes per rank; AllGather: output, ReduceScatter:
// input), the out-of-place time.
//
// The fit works on the system file itself: its knobs are numbers of the system's JSON (the
// "nccl" section's launch_us, fill_stage and per-level bus_bw_GBps / hop_latency_scale per protocol
// (a factor on NCCL's per-algorithm hop latencies, so the fit starts from the system itself); when no
// point's prediction depends on any of them - no "nccl" section, or a model that does not read it -
// the levels' interconnect bandwidth_gbps / latency_us and the topology section's
// step_overhead_us). Knobs no point's prediction depends on are left alone and reported as
// unconstrained. The objective is the mean squared log ratio predicted / measured (a point 2x too
// slow weighs as much as one 2x too fast), minimised by Nelder-Mead over log(knob) with restarts.
//
// The system's own values are a prior: the minimised objective adds `prior_weight` times the sum
// over the free knobs of (ln(knob / its starting value))^2 (a log-normal prior, i.e. a MAP fit).
// Without it a knob the points barely constrain moves without bound to absorb a few percent of
// error elsewhere: fitted to a3-mega's AllGather log (8 MiB and up) the launch and hop latencies
// moved until every small AllReduce of the same cluster was predicted 1.3x too slow, and an
// LL128 hop latency of dgx-h100 went to 0. The default weight 0.001 is the one of {0, 0.001,
// 0.003, 0.01, 0.03} that the fidelity suite's cross-validation (bench/fidelity/run.py --cv)
// preferred (docs/simulator.md §5): a knob moves 2x only when that lowers the mean squared log
// error by 0.00048 (an rms of 2.2% against none); the per-call overhead is held 100x more loosely
// (kLaunchPriorScale). `rms_log_after` is the data term alone.

#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/nccl_tests.hpp"

namespace p2v::engine {
class Progress;
}  // namespace p2v::engine

namespace p2v::sim {

struct FitPoint {
  std::string origin;  // log file
  int line = 0;        // row's line in it
  engine::Collective collective = engine::Collective::AllReduce;
  int ranks = 0, nodes = 0;
  double bytes = 0, measured_s = 0;
  int gpus_per_thread = 1;  // GPUs one thread drives (nccl-tests -g, the log's "nGpus"): group_launch_s
  // The run's own conditions where they differ from the system's (the runs of one calibration set
  // NCCL_PROTO, NCCL_ALGO, ... apart): keys of the system's "nccl" section set for this point only
  // (null: none), and an algorithm it is predicted with instead of the call's (Auto: the call's).
  nlohmann::json nccl_env = nullptr;
  Algorithm algo = Algorithm::Auto;
  // The protocol it is predicted with (Auto: the model's pick). fit_points sets `algo` and `proto` to what
  // NCCL logged for the row's size (NcclTestsLog::picks), where it did and the model has both.
  Protocol proto = Protocol::Auto;
};

// Nodes of a system as the logs count them: the product of all but the innermost level's
// cardinalities.
int system_nodes(const engine::System& s);
int system_devices(const engine::System& s);

// Points of `log` on system `s`. Throws p2v::Error when the log's ranks differ from the
// system's devices or its hosts from the system's nodes.
std::vector<FitPoint> fit_points(const NcclTestsLog& log, const engine::System& s);
// NCCL's algorithm and protocol names as its TUNING lines print them (ncclAlgoToString: TREE, RING,
// COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT; ncclProtoToString: LL, LL128, SIMPLE) as the
// model's; nullopt for one the model does not have (PAT).
std::optional<Algorithm> nccl_algorithm(const std::string& name);
std::optional<Protocol> nccl_protocol(const std::string& name);

struct PointPrediction {
  FitPoint point;
  double predicted_s = 0;
  std::string algo;   // the algorithm the model used (StepCost::algo)
  std::string proto;  // and its protocol (StepCost::proto)
};
// Predicted time of every point on `s` with algorithm `algo` (a point's own `algo` and `nccl_env`, where
// set, instead).
std::vector<PointPrediction> predict_points(const engine::System& s, const std::vector<FitPoint>& ps, Algorithm algo);

struct FitKnob {
  std::string name;  // JSON pointer into the system file, e.g. "/nccl/levels/node/bus_bw_gbps"
  double before = 0, after = 0;
  bool constrained = false;  // some point's prediction depends on it
  double prior_scale = 1.0;  // the prior's weight on this knob, relative to the fit's prior_weight
  // Read by the NCCL model: the "nccl" section's knobs, and a network level's interconnect latency_us
  // where the system gives one (NCCL's latencyInter, added to every network hop). With an "nccl"
  // section only these are fitted; the interconnects' others only when no "nccl" knob matters.
  bool nccl = false;
};
// The per-call overhead (`/nccl/launch_us`) has a prior kLaunchPriorScale times as heavy as the
// other knobs', i.e. a log-normal 10x as wide: its start (kDefaultLaunchUs, 4 us) is an assumption,
// not NCCL's constant or a datasheet's, and a cluster's fixed cost per call varies far more than
// that (the 10-node xxrjun H100 logs: about 400 us at every size and algorithm; docs/simulator.md
// §5.1). With the full weight a log whose sizes cannot tell a per-call cost from per-hop latencies
// (all-gather from 32 MiB) put it into the hop latencies of the one protocol it ran, which other
// collectives of the cluster do not share. 0.01 is the one of {1, 0.1, 0.01, 0.001} that the
// fidelity suite's cross-validation preferred (docs/simulator.md §5).
inline constexpr double kLaunchPriorScale = 0.01;

struct SystemFit {
  nlohmann::json system;  // the fitted system file
  std::vector<FitKnob> knobs;
  double rms_log_before = 0, rms_log_after = 0;  // sqrt(mean (ln predicted/measured)^2)
  int evaluations = 0;
  int points_fitted = 0;  // the points the objective prices: points predicted alike are one (fit_system)
};

// The knobs `fit_system` would move for system `s` (before values filled).
std::vector<FitKnob> system_knobs(const engine::System& s);

// Fits the knobs of `s` to `ps`; `only` (when not empty) names the knobs that may move, the others
// keep their values. Points predicted alike (one call under one setting: repeated runs, a log given
// twice) are fitted as one at their geometric mean, weighted by their number: the same optimum and
// rms, at the cost of the distinct points. `progress`, when given, counts the model evaluations.
// Throws p2v::Error when `ps` is empty.
inline constexpr double kFitPriorWeight = 0.001;
SystemFit fit_system(const engine::System& s, const std::vector<FitPoint>& ps, Algorithm algo,
                     const std::vector<std::string>& only = {}, int max_evaluations = 4000,
                     double prior_weight = kFitPriorWeight, engine::Progress* progress = nullptr);

}  // namespace p2v::sim
