#pragma once
// Calibration (docs/simulator.md §5): fit per-link-class α (latency) and β (1/bandwidth) to measured collective
// times by least squares on relative errors, and write a calibrated system file.
//
// Measurements CSV (docs/simulator.md): a header line naming the columns
//   collective,groups,bytes,seconds
// (other columns are ignored; "time_s" is accepted for seconds), then one row per measured
// collective: collective name (AllReduce, ReduceScatter, AllGather, Reduce, Broadcast), the
// lowered system device groups ("0 1 2 3|4 5 6 7", ranges allowed: "0-15|16-31"; ';' also separates
// groups), bytes S per rank as nccl-tests counts it (ReduceScatter: full input; AllGather: full
// output), and the measured seconds. Lines starting with '#' are comments.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/cost.hpp"

namespace p2v::sim {

struct Measurement {
  engine::LoweredStep step;
  std::string groups_text;
  double bytes = 0.0;
  double seconds = 0.0;
  int line = 0;
};

// Parses measurements; `origin` names the source in errors. Devices must be < num_devices.
std::vector<Measurement> parse_measurements(const std::string& text, const std::string& origin, int num_devices);
std::vector<Measurement> load_measurements(const std::string& path, int num_devices);

struct Prediction {
  double measured_s = 0.0, predicted_s = 0.0;
  double rel_error = 0.0;  // (predicted - measured) / measured
};
std::vector<Prediction> predict(const Simulator& sim, const std::vector<Measurement>& ms, Algorithm algo);
// Mean |relative error|.
double mean_abs_rel_error(const std::vector<Prediction>& ps);

struct ClassFit {
  std::string cls;
  double bandwidth_before = 0, bandwidth_after = 0;  // B/s
  double latency_before = 0, latency_after = 0;      // s per path across the class
  double alpha_weight = 0, beta_weight = 0;          // how much the measurements constrain it
};

struct Calibration {
  std::vector<ClassFit> classes;
  double error_before = 0, error_after = 0;        // mean |relative error|
  double overhead_before = 0, overhead_after = 0;  // per-step overhead, seconds
  int iterations = 0;
};

// Fits sim's topology in place (classes no measurement touches keep their values), and the
// per-step overhead (Topology::step_overhead).
Calibration calibrate(Simulator& sim, const std::vector<Measurement>& ms, Algorithm algo);

// System `s` with the calibrated link parameters of `t`: level interconnects for level classes,
// topology-section links for link-kind classes, and the topology section's step_overhead_us
// (a section holding only that is created when needed): the system file as a JSON object.
nlohmann::json calibrated_system_json(const engine::System& s, const Topology& t, const std::string& note);

// The report of `p2v calibrate --json` (docs/formats.md, "Simulator"): to_json and a strict reader.
inline constexpr const char* kCalibrateFormat = "p2v-calibrate";
inline constexpr int kCalibrateVersion = 1;

struct ClassRecord {
  std::string cls;
  double bandwidth_gbps_before = 0, bandwidth_gbps_after = 0;
  double latency_us_before = 0, latency_us_after = 0;
  bool constrained = false;  // some measurement uses the class (else it is unchanged)
  bool operator==(const ClassRecord&) const = default;
};

struct CalibrationReport {
  int version = kCalibrateVersion;
  std::int64_t measurements = 0;
  double error_before = 0, error_after = 0;
  int iterations = 0;
  double step_overhead_us_before = 0, step_overhead_us_after = 0;
  std::vector<ClassRecord> classes;
  nlohmann::json system;              // the calibrated system file (an object)
  std::optional<std::string> output;  // where it was written
  bool operator==(const CalibrationReport&) const = default;
};

CalibrationReport calibration_report(const Calibration& cal, std::size_t measurements, nlohmann::json system,
                                     const std::string& output);
nlohmann::json to_json(const CalibrationReport& r);
CalibrationReport calibration_report_from_json(const nlohmann::json& j, const std::string& origin);
CalibrationReport parse_calibration_report(const std::string& text, const std::string& origin);

}  // namespace p2v::sim
