#pragma once
// Ranking (docs/simulator.md): the (d) programs of a placement (from engine::ProgramSource), each simulated,
// sorted by predicted time and compared with the default single AllReduce over the reduction groups.
#include <cstdint>
#include <string>
#include <vector>

#include "p2v/engine/placement.hpp"
#include "p2v/engine/programs.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/sim/cost.hpp"

namespace p2v::sim {

struct RankedProgram {
  std::string name;     // "ReduceScatter@(gpu,Inside) ; ..."
  int synth_index = 0;  // position in SynthResult::programs (shortest first)
  engine::LoweredProgram lowered;
  double time_s = 0.0;
};

struct MatrixRanking {
  engine::ParallelismMatrix matrix;
  std::vector<int> reduce;
  double allreduce_s = 0.0;             // the default single AllReduce over the reduction groups
  std::vector<RankedProgram> programs;  // fastest first (ties: synthesis order)
  bool truncated = false;               // synthesis stopped at SynthOptions::max_programs
  double best_s() const { return programs.empty() ? allreduce_s : programs.front().time_s; }
  double speedup() const { return allreduce_s / best_s(); }
};

// Ranks the programs `programs` lists for placement `p` (hierarchy (d): make the source with
// HierarchyKind::ReductionAxes for the system and axes of `p`).
MatrixRanking rank_placement(const Simulator& sim, engine::ProgramSource& programs, const engine::Placement& p,
                             const CostOptions& cost);

// Measured whole-program times (e.g. from the runtime), to judge the ranking. CSV with a header
// naming `program` (the notation of `p2v synth`/`simulate`, quoted: it contains commas) and
// `seconds` (or `time_s`), and optionally `matrix` ("2 2;2 8"). Lines starting with '#' are
// comments; other columns are ignored.
struct ProgramMeasurement {
  engine::ParallelismMatrix matrix;  // empty: applies to whichever matrix is ranked
  std::string program;
  double seconds = 0.0;
  int line = 0;
};
std::vector<ProgramMeasurement> parse_program_measurements(const std::string& text, const std::string& origin);
std::vector<ProgramMeasurement> load_program_measurements(const std::string& path);

// How well the predicted order matches the measured one, over the measured programs of one matrix.
struct RankAccuracy {
  int measured = 0;                 // programs of this matrix with a measurement (and a prediction)
  int unmatched = 0;                // measurement rows for this matrix naming no ranked program
  std::string best_measured;        // the measured-fastest program
  int predicted_rank_of_best = 0;   // its 1-based rank in the prediction (1 = top-1 hit)
  double spearman = 0.0;            // rank correlation of predicted and measured times
  double mean_abs_rel_error = 0.0;  // |predicted - measured| / measured, averaged
  std::vector<double> measured_s;   // per ranked program (same order as MatrixRanking::programs), -1 if none
};
RankAccuracy rank_accuracy(const MatrixRanking& r, const std::vector<ProgramMeasurement>& ms);

}  // namespace p2v::sim
