#pragma once
// Size sweeps and progress options shared by the commands (docs/sweeps.md):
// --bytes LIST|RANGE and nccl-tests' -b/-e/-f/-i, the crossover table, --progress/--quiet.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "p2v/engine/sizes.hpp"

namespace CLI {
class App;
}

namespace p2v::tools {

// nccl-tests' names for a size range: -b/--minbytes, -e/--maxbytes, -f/--stepfactor,
// -i/--stepbytes (github.com/NVIDIA/nccl-tests README.md, "Arguments"; e.g. -b 8 -e 8G -f 2).
struct SweepArgs {
  std::string min, max, factor, step;
  bool given() const { return !min.empty() || !max.empty() || !factor.empty() || !step.empty(); }
};
void add_sweep_options(CLI::App& sub, SweepArgs& a);

// The sizes asked for: --bytes `bytes` (one size, a list or a range; engine::parse_sizes) or
// -b/-e/-f/-i (not both). Empty when neither was given (the command's default size).
std::vector<double> sweep_sizes(const std::string& bytes, const SweepArgs& a, double max = 1e15, bool whole = false);

// --progress / --quiet (engine::progress_wanted).
struct ProgressArgs {
  bool quiet = false, progress = false;
  bool wanted() const;
};
void add_progress_options(CLI::App& sub, ProgressArgs& a);

// One row of a sweep as the crossover table needs it: the winner at a size and how much faster
// it is than the reference (the single AllReduce, the fixed schedule, ...).
struct SweepPoint {
  double bytes = 0;
  std::string winner;
  double speedup = 1;
};
// The crossover table: "best <what> per size range", one line per range with its speedup range.
std::string crossover_table(const std::vector<SweepPoint>& points, const std::string& what, const std::string& versus);
// The same as JSON: [{"from_bytes","to_bytes","best","speedup_min","speedup_max"}].
nlohmann::json crossover_json(const std::vector<SweepPoint>& points);

// nccl-tests' bus bandwidth of a program that reduces like one AllReduce over groups of n
// devices: algbw x 2(n-1)/n (github.com/NVIDIA/nccl-tests doc/PERFORMANCE.md, "Bus bandwidth",
// commit dcf818955fa6e279e03263c984e95384164c24ad; AllGather/ReduceScatter use (n-1)/n,
// Broadcast/Reduce 1: sim::bus_factor and runtime::busbw_factor); 0 for n <= 1.
double allreduce_bus_factor(std::int64_t n);
// algbw as nccl-tests defines it: bytes per device / time, in GB/s (10^9 bytes per second).
inline double algbw_GBps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0; }

}  // namespace p2v::tools
