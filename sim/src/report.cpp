#include "p2v/sim/report.hpp"

#include <cctype>
#include <cmath>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "p2v/engine/error.hpp"
#include "p2v/engine/units.hpp"

namespace p2v::sim {

using namespace engine;

std::string steps_json(const Topology& t, const ProgramCost& pc, int max_links) {
  using json = nlohmann::json;
  json arr = json::array();
  for (const auto& s : pc.steps) {
    json o;
    o["collective"] = to_string(s.collective);
    o["groups"] = s.num_groups;
    o["group_size"] = s.group_size;
    o["algo"] = to_string(s.algo);
    o["nccl_pick"] = to_string(s.nccl_pick);
    o["bytes_per_rank"] = s.bytes_per_rank;
    o["time_s"] = s.time_s;
    o["latency_s"] = s.latency_s;
    o["bandwidth_s"] = s.bandwidth_s;
    o["algbw_gbps"] = s.algbw_gbps;
    o["busbw_gbps"] = s.busbw_gbps;
    if (s.bottleneck_edge >= 0)
      o["bottleneck"] = {{"link", t.edge_name(s.bottleneck_edge)},
                         {"bytes", s.bottleneck_bytes},
                         {"busy_s", s.bottleneck_bytes /
                                        t.edges()[static_cast<std::size_t>(s.bottleneck_edge)].bandwidth}};
    else
      o["bottleneck"] = nullptr;
    json links = json::array();
    int n = 0;
    for (const auto& l : s.links) {
      if (max_links >= 0 && n++ >= max_links) break;
      links.push_back({{"link", t.edge_name(l.edge)}, {"bytes", l.bytes}, {"busy_s", l.busy_s}});
    }
    o["links"] = std::move(links);
    arr.push_back(std::move(o));
  }
  return arr.dump();
}

std::string format_bytes(double b) {
  const double a = std::fabs(b);
  if (a >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (a >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

double parse_bytes(const std::string& s) { return parse_size(s, "--bytes"); }

std::string steps_table(const Topology& t, const ProgramCost& pc, const std::string& indent) {
  std::string out = fmt::format("{}{:>4}  {:<13} {:>9}  {:<11} {:>11} {:>9}  {}\n", indent, "step",
                                "collective", "groups", "algo(nccl)", "time", "busbw", "bottleneck link (bytes)");
  int i = 0;
  for (const auto& s : pc.steps) {
    out += fmt::format("{}{:>4}  {:<13} {:>9}  {:<11} {:>11} {:>9}  {}\n", indent, i++,
                       to_string(s.collective), fmt::format("{}x{}", s.num_groups, s.group_size),
                       fmt::format("{}({})", to_string(s.algo), to_string(s.nccl_pick)),
                       format_seconds(s.time_s), fmt::format("{:.1f}GB/s", s.busbw_gbps),
                       s.bottleneck_edge >= 0
                           ? fmt::format("{} ({})", t.edge_name(s.bottleneck_edge), format_bytes(s.bottleneck_bytes))
                           : std::string("-"));
  }
  return out;
}

}  // namespace p2v::sim
