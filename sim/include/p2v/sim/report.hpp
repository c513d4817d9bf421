#pragma once
// Human and machine forms of simulator results (issue 5). JSON is returned as text so that no
// JSON library leaks into public headers.
#include <string>

#include "p2v/sim/cost.hpp"

namespace p2v::sim {

// JSON array text, one object per step: collective, groups, group_size, algo, nccl_pick,
// bytes_per_rank, time_s, latency_s, bandwidth_s, algbw_gbps, busbw_gbps,
// bottleneck {link, bytes, busy_s}, links [{link, bytes, busy_s}] (at most `max_links`
// busiest; < 0: all).
std::string steps_json(const Topology& t, const ProgramCost& pc, int max_links = -1);

// A table of the steps: step, collective, groups x size, algorithm (NCCL's pick), time, busbw,
// bottleneck link and its bytes. Each line starts with `indent`.
std::string steps_table(const Topology& t, const ProgramCost& pc, const std::string& indent = "  ");

// "8.00 GiB", "512.0 MiB", "4.0 KiB", "12 B"
std::string format_bytes(double b);

// Parses a byte count: "8589934592", "1e9", "8GiB", "512MiB", "4KiB", "1GB", "100MB".
double parse_bytes(const std::string& s);

}  // namespace p2v::sim
