#pragma once
// The `p2v run --json` file format, "p2v-run/1" (docs/formats.md): written here (tools/cmd_run.cpp
// fills the structs), read here (sim::load_measurements turns its step timings into measured
// collectives for simulate --measurements and calibrate).
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/placement.hpp"

namespace p2v::engine {

inline constexpr const char* kRunFormat = "p2v-run";
inline constexpr int kRunVersion = 1;

// One timing: a step, the program's total or the baseline AllReduce. Seconds over the timed
// iterations (max over ranks per iteration); bandwidths in GB/s as nccl-tests define them.
struct RunTiming {
  std::string what;        // collective name, "total", "baseline AllReduce"
  std::string groups;      // description of the groups
  std::string group_list;  // every group, "0-3|4-7" (what the measurements CSV holds); "" if not written
  int group_size = 0, num_groups = 0;
  std::int64_t bytes = 0;  // nccl-tests size S of the operation on one rank
  double min_s = 0, median_s = 0, max_s = 0, algbw_GBps = 0, busbw_GBps = 0;
  bool operator==(const RunTiming&) const = default;
};

struct RunProgram {
  std::string program;
  ParallelismMatrix matrix;
  std::int64_t bytes = 0;  // per rank
  bool ok = true;
  std::string failure;  // when !ok
  std::vector<RunTiming> steps;
  std::optional<RunTiming> total, baseline;  // when ok; baseline unless --no-baseline
  bool operator==(const RunProgram&) const = default;
};

struct RunFile {
  int version = kRunVersion;
  std::string system;
  std::vector<int> levels;
  std::int64_t ranks = 0;
  std::string backend, dtype;  // dtype: int32 or float32
  std::vector<int> axes, reduce;
  std::int64_t bytes = 0;  // per rank (the last size of a sweep)
  int iters = 0, warmup = 0;
  bool verified = false;
  std::vector<RunProgram> programs;
  bool operator==(const RunFile&) const = default;
};

nlohmann::json to_json(const RunTiming& t);
nlohmann::json to_json(const RunProgram& p);
nlohmann::json to_json(const RunFile& f);

// Strict (json_read): unknown, missing and mistyped fields are named by path; another family or a
// newer version is refused.
RunFile run_file_from_json(const nlohmann::json& j, const std::string& origin);
RunFile parse_run_file(const std::string& text, const std::string& origin);

}  // namespace p2v::engine
