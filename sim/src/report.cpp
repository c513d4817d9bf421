#include "p2v/sim/report.hpp"

#include <fmt/core.h>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "p2v/engine/error.hpp"
#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/units.hpp"

namespace p2v::sim {

using namespace engine;

const char* to_string(SimModel m) { return m == SimModel::Graph ? "graph" : "levels"; }

std::vector<StepRecord> step_records(const Topology& t, const ProgramCost& pc, int max_links) {
  std::vector<StepRecord> out;
  for (const auto& s : pc.steps) {
    StepRecord r{
        s.collective, s.num_groups,  s.group_size, s.algo,       s.time_s, s.busbw_gbps, s.nccl_pick, s.bytes_per_rank,
        s.latency_s,  s.bandwidth_s, s.algbw_gbps, std::nullopt, {},       "",           0,           s.proto,
        s.nccl_proto, s.nodes};
    if (s.bottleneck_edge >= 0)
      r.bottleneck = LinkRecord{t.edge_name(s.bottleneck_edge), s.bottleneck_bytes,
                                s.bottleneck_bytes / t.edges()[static_cast<std::size_t>(s.bottleneck_edge)].bandwidth};
    for (const auto& l : s.links) {
      if (max_links >= 0 && static_cast<int>(r.links.size()) >= max_links) break;
      r.links.push_back({t.edge_name(l.edge), l.bytes, l.busy_s});
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<StepRecord> step_records(const LevelProgramCost& pc) {
  std::vector<StepRecord> out;
  for (const auto& st : pc.steps) {
    StepRecord r;
    r.collective = st.cost.collective;
    r.groups = st.cost.num_groups;
    r.group_size = st.cost.group_size;
    r.algo = st.cost.algo;
    r.time_s = st.cost.time_s;
    r.busbw_gbps = st.cost.busbw_gbps;
    r.bottleneck_level = st.bottleneck;
    r.bottleneck_bytes = st.cost.bottleneck_bytes;
    r.nccl_pick = st.cost.nccl_pick;
    r.proto = st.cost.proto;
    r.nccl_proto = st.cost.nccl_proto;
    r.nodes = st.cost.nodes;
    out.push_back(std::move(r));
  }
  return out;
}

namespace {
Algorithm algorithm_from_json(const engine::json_read::At& at) {
  const std::string name = at.string();
  if (name != "ring" && name != "tree" && name != "auto" && name != "nvls" && name != "nvls-tree" && name != "collnet")
    at.fail(fmt::format("expected ring, tree, auto, nvls, nvls-tree or collnet, got \"{}\"", name));
  return parse_algorithm(name);
}
nlohmann::json link_json(const LinkRecord& l) { return {{"link", l.link}, {"bytes", l.bytes}, {"busy_s", l.busy_s}}; }
LinkRecord link_from_json(const engine::json_read::At& at) {
  engine::json_read::Object o(at);
  LinkRecord l{o["link"].string(), o["bytes"].number(), o["busy_s"].number()};
  o.finish();
  return l;
}
}  // namespace

nlohmann::json to_json(const StepRecord& s, SimModel m) {
  nlohmann::json o{{"collective", to_string(s.collective)},
                   {"groups", s.groups},
                   {"group_size", s.group_size},
                   {"algo", to_string(s.algo)},
                   {"time_s", s.time_s},
                   {"busbw_GBps", s.busbw_gbps},
                   {"proto", to_string(s.proto)},
                   {"nccl_proto", to_string(s.nccl_proto)},
                   {"nodes", s.nodes},
                   {"nccl_pick", to_string(s.nccl_pick)}};
  if (m == SimModel::Levels) {
    o["bottleneck"] = s.bottleneck_level;
    o["bottleneck_bytes"] = s.bottleneck_bytes;
    return o;
  }
  o["bytes_per_rank"] = s.bytes_per_rank;
  o["latency_s"] = s.latency_s;
  o["bandwidth_s"] = s.bandwidth_s;
  o["algbw_GBps"] = s.algbw_gbps;
  o["bottleneck"] = s.bottleneck ? link_json(*s.bottleneck) : nlohmann::json(nullptr);
  o["links"] = nlohmann::json::array();
  for (const auto& l : s.links) o["links"].push_back(link_json(l));
  return o;
}

StepRecord step_record_from_json(const engine::json_read::At& at, SimModel m) {
  engine::json_read::Object o(at);
  StepRecord s;
  s.collective = engine::json_read::collective(o["collective"]);
  s.groups = o["groups"].int32();
  s.group_size = o["group_size"].int32();
  s.algo = algorithm_from_json(o["algo"]);
  s.time_s = o["time_s"].number();
  s.busbw_gbps = o.renamed("busbw_GBps", "busbw_gbps").number();
  auto proto = [](const engine::json_read::At& a) {
    const auto v = a.string();
    if (v != "LL" && v != "LL128" && v != "Simple") a.fail("expected LL, LL128 or Simple, got \"" + v + "\"");
    return parse_protocol(v);
  };
  if (const auto v = o.optional("proto")) s.proto = proto(*v);
  if (const auto v = o.optional("nccl_proto")) s.nccl_proto = proto(*v);
  if (const auto v = o.optional("nodes")) s.nodes = v->int32();
  if (m == SimModel::Graph)
    s.nccl_pick = algorithm_from_json(o["nccl_pick"]);
  else if (const auto v = o.optional("nccl_pick"))
    s.nccl_pick = algorithm_from_json(*v);
  if (m == SimModel::Levels) {
    s.bottleneck_level = o["bottleneck"].string();
    s.bottleneck_bytes = o["bottleneck_bytes"].number();
  } else {
    s.bytes_per_rank = o["bytes_per_rank"].number();
    s.latency_s = o["latency_s"].number();
    s.bandwidth_s = o["bandwidth_s"].number();
    s.algbw_gbps = o.renamed("algbw_GBps", "algbw_gbps").number();
    if (const auto b = o["bottleneck"]; !b.is_null()) s.bottleneck = link_from_json(b);
    o["links"].each([&](const engine::json_read::At& l) { s.links.push_back(link_from_json(l)); });
  }
  o.finish();
  return s;
}

std::string format_bytes(double b) {
  const double a = std::fabs(b);
  if (a >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (a >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

double parse_bytes(const std::string& s) { return parse_size(s, "--bytes"); }

std::string steps_table(const std::vector<StepRecord>& steps, const std::string& indent) {
  std::string out = fmt::format("{}{:>4}  {:<13} {:>9}  {:<30} {:>11} {:>9}  {}\n", indent, "step", "collective",
                                "groups", "algo/proto (nccl)", "time", "busbw", "bottleneck link (bytes)");
  int i = 0;
  for (const auto& s : steps) {
    out += fmt::format("{}{:>4}  {:<13} {:>9}  {:<30} {:>11} {:>9}  {}\n", indent, i++, to_string(s.collective),
                       fmt::format("{}x{}", s.groups, s.group_size),
                       fmt::format("{}/{}({}/{})", to_string(s.algo), to_string(s.proto), to_string(s.nccl_pick),
                                   to_string(s.nccl_proto)),
                       format_seconds(s.time_s), fmt::format("{:.1f}GB/s", s.busbw_gbps),
                       s.bottleneck ? fmt::format("{} ({})", s.bottleneck->link, format_bytes(s.bottleneck->bytes))
                                    : std::string("-"));
  }
  return out;
}

}  // namespace p2v::sim
