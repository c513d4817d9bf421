#pragma once
// Human and machine forms of simulator results (docs/simulator.md): the per-step record of a simulated
// program (the "steps" of `p2v simulate --json`, docs/formats.md), its table, and number formats.
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "p2v/sim/cost.hpp"
#include "p2v/sim/levels.hpp"

namespace p2v::engine::json_read {
class At;
}

namespace p2v::sim {

// The two simulators: the graph model (routes every transfer) and the level model (per-level
// counts, any size; docs/shape.md §7). Their step records differ (see StepRecord).
enum class SimModel { Graph, Levels };
const char* to_string(SimModel m);  // "graph", "levels"

struct LinkRecord {
  std::string link;  // Topology::edge_name
  double bytes = 0, busy_s = 0;
  bool operator==(const LinkRecord&) const = default;
};

// One step of a simulated program. Both models: collective, groups, group_size, algo, time_s,
// busbw_GBps, proto, nccl_proto, nodes (NCCL model: protocol used, NCCL's protocol, nodes spanned). Graph model:
// nccl_pick, bytes_per_rank, latency_s, bandwidth_s, algbw_GBps, bottleneck (the busiest link, none for an idle step)
// and links (busiest first). Level model: bottleneck_level ("node uplink (nic)", "" when idle) and bottleneck_bytes.
struct StepRecord {
  engine::Collective collective = engine::Collective::AllReduce;
  int groups = 0, group_size = 0;
  Algorithm algo = Algorithm::Ring;
  double time_s = 0, busbw_gbps = 0;
  Algorithm nccl_pick = Algorithm::Ring;
  double bytes_per_rank = 0, latency_s = 0, bandwidth_s = 0, algbw_gbps = 0;
  std::optional<LinkRecord> bottleneck;
  std::vector<LinkRecord> links;
  std::string bottleneck_level;
  double bottleneck_bytes = 0;
  // Both models (JSON "proto", "nccl_proto", "nodes"; optional when read, for older files).
  Protocol proto = Protocol::Simple, nccl_proto = Protocol::Simple;
  int nodes = 1;
  bool operator==(const StepRecord&) const = default;
};

// Records of a graph-model program (at most `max_links` busiest links per step; < 0: all).
std::vector<StepRecord> step_records(const Topology& t, const ProgramCost& pc, int max_links = -1);
// Records of a level-model program.
std::vector<StepRecord> step_records(const LevelProgramCost& pc);

nlohmann::json to_json(const StepRecord& s, SimModel m);
// Strict reader (see docs/formats.md); `at` is the JSON value and its path, see json_reader.hpp.
StepRecord step_record_from_json(const engine::json_read::At& at, SimModel m);

// A table of graph-model steps: step, collective, groups x size, algorithm (NCCL's pick), time,
// busbw, bottleneck link and its bytes. Each line starts with `indent`.
std::string steps_table(const std::vector<StepRecord>& steps, const std::string& indent = "  ");

// "8.00 GiB", "512.0 MiB", "4.0 KiB", "12 B"
std::string format_bytes(double b);

// Parses a byte count: "8589934592", "1e9", "8GiB", "512MiB", "4KiB", "1GB", "100MB".
double parse_bytes(const std::string& s);

}  // namespace p2v::sim
