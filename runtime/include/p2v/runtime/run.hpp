#pragma once
// The executor: fill, run, check after every step, time; collective over the world communicator.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "p2v/runtime/backend.hpp"
#include "p2v/runtime/coordinator.hpp"
#include "p2v/runtime/rank_plan.hpp"

namespace p2v::runtime {

struct RunOptions {
  std::int64_t bytes = 1 << 20;  // per rank (rounded up to a whole number of units)
  int iters = 20, warmup = 5;
  Dtype dtype = Dtype::Int32;
  bool verify = true;                    // one untimed run checked after every step
  bool baseline = true;                  // also time one AllReduce over the reduction groups
  int fault_step = -1, fault_rank = -1;  // corrupt one element after this step on this rank
  // Called on this rank after the checked run and after each warmup or timed iteration (progress).
  std::function<void()> on_iteration;
};

struct Stats {
  double min = 0, median = 0, max = 0;  // seconds
};
Stats make_stats(std::vector<double> samples);

struct Timing {
  std::string what;         // collective name, "total", "baseline AllReduce"
  std::string groups;       // group description
  std::string groups_list;  // every group, "0-3|4-7" or "0 4|1 5" (what p2v calibrate reads)
  int group_size = 0, num_groups = 0;
  std::int64_t bytes = 0;  // nccl-tests size S of the operation on one rank
  Stats t;
  double algbw = 0, busbw = 0;  // GB/s (1e9 bytes/s), from the median time
};

struct RunReport {
  bool ok = true;
  std::string failure;  // verification failure (step, rank, chunk, values), on rank 0
  std::int64_t elems = 0, bytes = 0, elems_per_row = 0;
  std::vector<Timing> steps;                            // on rank 0
  Timing total, baseline;                               // on rank 0
  std::vector<double> total_samples, baseline_samples;  // on rank 0, per iteration (max over ranks)
};

// The value rank `rank` starts with at element `e` (identifies rank, row = e / elems_per_row,
// element). Values stay small enough that any sum over `num_ranks` ranks is exact.
std::int32_t fill_value(int rank, std::int64_t e, int num_ranks, Dtype dt);

// Runs this rank's `plan` with `be`; collective over `co` (every rank runs its own plan of the
// same program; co.size() == plan.num_ranks). The plan needs columns when opt.verify.
RunReport run_program(const RankPlan& plan, Backend& be, const RunOptions& opt, Coordinator& co);

double busbw_factor(Collective c, int n);

// The buffer a run of `requested` bytes per rank uses: a whole number of 4-byte elements per
// chunk, `k` chunks (k = the number of ranks). RunReport::bytes of such a run.
std::int64_t buffer_bytes(std::int64_t requested, std::int64_t k);

// "0-3|4-7", "0 4|1 5": groups as the calibration CSV writes them.
std::string format_groups_list(const Groups& g);

}  // namespace p2v::runtime
