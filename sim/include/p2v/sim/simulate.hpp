#pragma once
// `p2v simulate` as a library call, and its report: every (matrix, program) pair of a problem
// ranked by predicted time with the graph or the level model. The report is the format of
// `p2v simulate --json` (docs/formats.md, "Simulator"): to_json writes it, simulate_report_from_json
// reads it strictly (unknown, missing and mistyped fields are errors naming their path).
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/placement.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/report.hpp"

namespace p2v::sim {

inline constexpr const char* kSimulateFormat = "p2v-simulate";
inline constexpr int kSimulateVersion = 1;

// "graph", "levels" or "auto" (the level model above 2048 devices when the system has no
// topology section); throws p2v::Error for another name.
SimModel choose_model(const std::string& name, const engine::System& s);

struct ProgramRecord {
  int rank = 0;                      // 1-based
  std::string program;               // notation, as `p2v synth` prints it
  double time_s = 0, speedup = 0;    // speedup over the single AllReduce
  std::optional<double> measured_s;  // from --measured-programs
  std::vector<StepRecord> steps;     // empty unless requested (SimulateOptions::program_steps)
  bool operator==(const ProgramRecord&) const = default;
};

struct BestRecord {
  std::string program;
  double time_s = 0;
  bool operator==(const BestRecord&) const = default;
};

// How the measured program times of one matrix compare with the prediction (rank.hpp's RankAccuracy).
struct MeasuredRecord {
  int programs = 0, unmatched_rows = 0;
  std::string best_measured;
  int predicted_rank_of_best = 0;
  double spearman = 0, mean_abs_rel_error = 0;
  bool operator==(const MeasuredRecord&) const = default;
};

struct MatrixRecord {
  engine::ParallelismMatrix matrix;
  std::string shape;                        // level model: the shape's signature
  double allreduce_s = 0;                   // the single AllReduce over the reduction groups
  std::vector<StepRecord> allreduce_steps;  // graph model
  std::optional<BestRecord> best;           // none when the matrix has no program
  double speedup = 0;
  std::int64_t num_programs = 0;           // all programs; `programs` may list fewer
  bool truncated = false;                  // graph model: synthesis stopped at max_programs
  std::optional<MeasuredRecord> measured;  // graph model with measured programs
  std::vector<ProgramRecord> programs;     // fastest first
  double best_s() const { return best ? best->time_s : allreduce_s; }
  bool operator==(const MatrixRecord&) const = default;
};

// One measured collective of --measurements and its prediction (graph model).
struct MeasurementRecord {
  int line = 0;
  engine::Collective collective = engine::Collective::AllReduce;
  std::string groups;
  double bytes = 0, measured_s = 0, predicted_s = 0, rel_error = 0;
  bool operator==(const MeasurementRecord&) const = default;
};
struct MeasurementsRecord {
  std::string file;
  std::vector<MeasurementRecord> rows;
  double mean_abs_rel_error = 0;
  bool operator==(const MeasurementsRecord&) const = default;
};

struct SimulateReport {
  int version = kSimulateVersion;
  engine::System system;
  std::vector<int> axes, reduce;
  std::string algo = "ring";  // ring, tree or auto
  double bytes = 0;           // per device
  SimModel model = SimModel::Graph;
  std::vector<MatrixRecord> results;
  std::optional<MeasurementsRecord> measurements;
  // The matrix with the fastest best program (the first on ties); results must not be empty.
  std::size_t best_matrix() const;
};

nlohmann::json to_json(const SimulateReport& r);
SimulateReport simulate_report_from_json(const nlohmann::json& j, const std::string& origin);
SimulateReport parse_simulate_report(const std::string& text, const std::string& origin);
SimulateReport load_simulate_report(const std::string& path);
// Equal as files: the same JSON (the system compared by its JSON form).
bool same_report(const SimulateReport& a, const SimulateReport& b);

struct SimulateOptions {
  engine::SynthOptions synth;
  CostOptions cost;
  std::string algo = "ring";  // the name given (recorded in the report)
  SimModel model = SimModel::Graph;
  int list = -1;                  // programs recorded per matrix (-1: all)
  bool program_steps = false;     // step records of every recorded program and of the single AllReduce
  bool best_steps = false;        // step records of the single AllReduce and of the best program only
  int links = -1;                 // busiest links per step record (-1: all)
  std::string measurements;       // graph model: CSV of measured collectives (calibrate.hpp)
  std::string measured_programs;  // graph model: CSV of measured program times (rank.hpp)
  bool svg_topology = false, svg_ranking = false;
  int svg_program = 1;  // rank drawn by the topology picture (0: the single AllReduce)
};

struct SimulateRun {
  SimulateReport report;
  std::string topology_svg, ranking_svg;  // when requested
};

// Ranks the programs of every matrix of the problem. Throws p2v::Error on bad options (an
// --svg-program rank the matrix does not have, measured programs without a matrix column when
// several matrices are ranked) or bad measurement files.
SimulateRun simulate(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                     const std::vector<engine::ParallelismMatrix>& matrices, const SimulateOptions& opt);

}  // namespace p2v::sim
