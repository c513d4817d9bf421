#include "p2v/engine/system.hpp"

#include <fmt/core.h>

#include <sys/stat.h>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/text_util.hpp"

namespace p2v::engine {

using nlohmann::json;

const char* to_string(LinkKind k) {
  switch (k) {
    case LinkKind::Switch:
      return "switch";
    case LinkKind::Ring:
      return "ring";
    case LinkKind::Pcie:
      return "pcie";
    case LinkKind::Nic:
      return "nic";
  }
  return "?";
}

std::vector<std::string> System::level_names() const {
  std::vector<std::string> n;
  for (const auto& l : levels) n.push_back(l.name);
  return n;
}

std::vector<int> System::cardinalities() const {
  std::vector<int> c;
  for (const auto& l : levels) c.push_back(l.cardinality);
  return c;
}

std::int64_t System::num_devices() const {
  std::int64_t n = 1;
  for (const auto& l : levels) n *= l.cardinality;
  return n;
}

bool System::root_implied() const { return levels.empty() || levels[0].cardinality != 1; }

std::vector<std::string> System::hierarchy_names() const {
  std::vector<std::string> n = level_names();
  if (root_implied()) n.insert(n.begin(), "root");
  return n;
}

std::vector<int> System::hierarchy_cardinalities() const {
  std::vector<int> c;
  if (root_implied()) c.push_back(1);
  for (const auto& l : levels) c.push_back(l.cardinality);
  return c;
}

namespace {

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

void check_levels(const std::vector<Level>& levels, const std::string& origin) {
  if (levels.empty()) throw Error(fmt::format("{}: levels: a system needs at least one level", origin));
  std::set<std::string> seen;
  std::int64_t n = 1;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const auto& l = levels[i];
    if (!valid_name(l.name))
      throw Error(
          fmt::format("{}: levels[{}].name: '{}' is not a valid level name (letters, digits, "
                      "'_' or '-', at most 64 characters)",
                      origin, i, l.name));
    if (l.name == "root" && !(i == 0 && l.cardinality == 1))
      throw Error(fmt::format("{}: levels[{}].name: 'root' is reserved for the implicit outermost level", origin, i));
    if (!seen.insert(l.name).second)
      throw Error(fmt::format("{}: levels[{}].name: duplicate level name '{}'", origin, i, l.name));
    if (l.cardinality < 1)
      throw Error(
          fmt::format("{}: levels[{}].cardinality: must be a positive integer, got {}", origin, i, l.cardinality));
    n *= l.cardinality;
    if (n > kMaxSystemDevices)
      throw Error(fmt::format("{}: levels: the system has more than {} devices; p2v does not handle systems that large",
                              origin, kMaxSystemDevices));
  }
}

LinkKind parse_kind(const std::string& s, const std::string& where) {
  if (s == "switch") return LinkKind::Switch;
  if (s == "ring") return LinkKind::Ring;
  if (s == "pcie") return LinkKind::Pcie;
  if (s == "nic") return LinkKind::Nic;
  throw Error(fmt::format("{}: unknown interconnect kind '{}' (expected switch, ring, pcie or nic)", where, s));
}

double get_number(const json& o, const char* key, const std::string& where, bool positive) {
  if (!o.contains(key)) throw Error(fmt::format("{}.{}: missing", where, key));
  const auto& v = o.at(key);
  if (!v.is_number()) throw Error(fmt::format("{}.{}: must be a number, got {}", where, key, json_brief(v)));
  double d = v.get<double>();
  if (!std::isfinite(d) || (positive ? d <= 0 : d < 0))
    throw Error(fmt::format("{}.{}: must be {} number, got {}", where, key, positive ? "a positive" : "a non-negative",
                            json_brief(v)));
  return d;
}

Device parse_device(const json& o, const std::string& where) {
  if (!o.is_object()) throw Error(where + ": must be an object {name, peak_tflops, efficiency, memory_gb}");
  for (auto it = o.begin(); it != o.end(); ++it)
    if (it.key() != "name" && it.key() != "peak_tflops" && it.key() != "efficiency" && it.key() != "memory_gb")
      throw Error(
          fmt::format("{}: unknown field '{}' (expected name, peak_tflops, efficiency, memory_gb)", where, it.key()));
  Device d;
  if (o.contains("name")) {
    if (!o["name"].is_string()) throw Error(where + ".name: must be a string");
    d.name = o["name"].get<std::string>();
  }
  if (o.contains("peak_tflops")) d.peak_tflops = get_number(o, "peak_tflops", where, true);
  if (o.contains("efficiency")) {
    d.efficiency = get_number(o, "efficiency", where, true);
    if (d.efficiency > 1) throw Error(fmt::format("{}.efficiency: must be in (0, 1], got {}", where, d.efficiency));
  }
  if (o.contains("memory_gb")) d.memory_gb = get_number(o, "memory_gb", where, true);
  return d;
}

}  // namespace

System parse_system_json(const std::string& text, const std::string& origin) {
  return system_from_json(parse_json_object(text, origin), origin);
}

System system_from_json(const json& j, const std::string& origin) {
  if (!j.is_object()) throw Error(fmt::format("{}: a system must be a JSON object", origin));
  static const std::set<std::string> known{"name", "description", "levels", "topology", "device", "nccl"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key()))
      throw Error(fmt::format("{}: unknown field '{}' (expected name, description, levels, topology, device, nccl)",
                              origin, it.key()));
  System s;
  if (j.contains("name")) {
    if (!j["name"].is_string()) throw Error(fmt::format("{}: name: must be a string", origin));
    s.name = j["name"].get<std::string>();
  }
  if (!j.contains("levels"))
    throw Error(fmt::format("{}: levels: missing (a list of {{name, cardinality, interconnect}})", origin));
  const auto& lv = j["levels"];
  if (!lv.is_array()) throw Error(fmt::format("{}: levels: must be a list", origin));
  for (std::size_t i = 0; i < lv.size(); ++i) {
    const std::string where = fmt::format("{}: levels[{}]", origin, i);
    const auto& o = lv[i];
    if (!o.is_object()) throw Error(where + ": must be an object {name, cardinality, interconnect}");
    for (auto it = o.begin(); it != o.end(); ++it)
      if (it.key() != "name" && it.key() != "cardinality" && it.key() != "interconnect")
        throw Error(fmt::format("{}: unknown field '{}'", where, it.key()));
    Level l;
    if (!o.contains("name") || !o["name"].is_string()) throw Error(where + ".name: missing or not a string");
    l.name = o["name"].get<std::string>();
    if (!o.contains("cardinality")) throw Error(where + ".cardinality: missing");
    const auto& c = o["cardinality"];
    if (!c.is_number_integer())
      throw Error(fmt::format("{}.cardinality: must be an integer, got {}", where, json_brief(c)));
    auto cv = c.get<long long>();
    if (cv < 1 || cv > kMaxSystemDevices)
      throw Error(fmt::format("{}.cardinality: must be between 1 and {}, got {}", where, kMaxSystemDevices, cv));
    l.cardinality = static_cast<int>(cv);
    if (o.contains("interconnect")) {
      const auto& ic = o["interconnect"];
      const std::string w = where + ".interconnect";
      if (!ic.is_object()) throw Error(w + ": must be an object {kind, bandwidth_gbps, latency_us}");
      for (auto it = ic.begin(); it != ic.end(); ++it)
        if (it.key() != "kind" && it.key() != "bandwidth_gbps" && it.key() != "latency_us" &&
            it.key() != "flow_bandwidth_gbps")
          throw Error(
              fmt::format("{}: unknown field '{}' (expected kind, bandwidth_gbps, latency_us, "
                          "flow_bandwidth_gbps)",
                          w, it.key()));
      Interconnect x;
      if (!ic.contains("kind") || !ic["kind"].is_string()) throw Error(w + ".kind: missing or not a string");
      x.kind = parse_kind(ic["kind"].get<std::string>(), w + ".kind");
      x.bandwidth_gbps = get_number(ic, "bandwidth_gbps", w, true);
      x.latency_us = get_number(ic, "latency_us", w, false);
      if (ic.contains("flow_bandwidth_gbps")) x.flow_bandwidth_gbps = get_number(ic, "flow_bandwidth_gbps", w, true);
      l.interconnect = x;
    }
    s.levels.push_back(std::move(l));
  }
  check_levels(s.levels, origin);
  if (j.contains("topology")) s.topology = j["topology"];
  if (j.contains("nccl")) {
    if (!j["nccl"].is_object()) throw Error(fmt::format("{}: nccl: must be an object", origin));
    s.nccl = j["nccl"];
  }
  if (j.contains("device")) s.device = parse_device(j["device"], origin + ": device");
  if (s.name.empty()) s.name = origin;
  return s;
}

System load_system_file(const std::string& path) {
  return parse_system_json(read_text_file(path, "system file"), path);
}

System parse_system_inline(const std::string& spec) {
  System s;
  s.name = spec;
  std::stringstream ss(spec);
  std::string item;
  std::size_t i = 0;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos)
      throw Error(fmt::format("--system '{}': entry {} '{}' is not name=cardinality", spec, i, item));
    Level l;
    l.name = item.substr(0, eq);
    std::string c = item.substr(eq + 1);
    std::size_t pos = 0;
    long long v = 0;
    try {
      v = std::stoll(c, &pos);
    } catch (...) {
      pos = 0;
    }
    if (c.empty() || pos != c.size())
      throw Error(fmt::format("--system '{}': cardinality of '{}' is not an integer: '{}'", spec, l.name, c));
    if (v < 1 || v > kMaxSystemDevices)
      throw Error(fmt::format("--system '{}': cardinality of '{}' must be between 1 and {}, got {}", spec, l.name,
                              kMaxSystemDevices, v));
    l.cardinality = static_cast<int>(v);
    s.levels.push_back(std::move(l));
    ++i;
  }
  check_levels(s.levels, "--system '" + spec + "'");
  return s;
}

System parse_system_arg(const std::string& arg) {
  struct stat st {};
  if (::stat(arg.c_str(), &st) == 0) return load_system_file(arg);
  if (arg.find('=') != std::string::npos) return parse_system_inline(arg);
  throw Error(fmt::format("--system '{}': no such file, and not an inline hierarchy like node=4,gpu=16", arg));
}

json system_json(const System& s) {
  json j;
  j["name"] = s.name;
  j["levels"] = json::array();
  for (const auto& l : s.levels) {
    json o{{"name", l.name}, {"cardinality", l.cardinality}};
    if (l.interconnect)
      o["interconnect"] = {{"kind", to_string(l.interconnect->kind)},
                           {"bandwidth_gbps", l.interconnect->bandwidth_gbps},
                           {"latency_us", l.interconnect->latency_us}};
    if (l.interconnect && l.interconnect->flow_bandwidth_gbps > 0)
      o["interconnect"]["flow_bandwidth_gbps"] = l.interconnect->flow_bandwidth_gbps;
    j["levels"].push_back(o);
  }
  if (s.has_topology()) j["topology"] = s.topology;
  if (!s.nccl.is_null()) j["nccl"] = s.nccl;
  if (s.device) {
    json d;
    if (!s.device->name.empty()) d["name"] = s.device->name;
    if (s.device->peak_tflops > 0) d["peak_tflops"] = s.device->peak_tflops;
    if (s.device->efficiency > 0) d["efficiency"] = s.device->efficiency;
    if (s.device->memory_gb > 0) d["memory_gb"] = s.device->memory_gb;
    j["device"] = d;
  }
  return j;
}

std::string system_to_json(const System& s) { return system_json(s).dump(2); }

}  // namespace p2v::engine
