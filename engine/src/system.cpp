#include "p2v/engine/system.hpp"

#include <fmt/core.h>

#include <sys/stat.h>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "p2v/engine/dtype.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_reader.hpp"
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

LinkKind parse_kind(const std::string& s) {
  if (s == "switch") return LinkKind::Switch;
  if (s == "ring") return LinkKind::Ring;
  if (s == "pcie") return LinkKind::Pcie;
  if (s == "nic") return LinkKind::Nic;
  throw Error(fmt::format("unknown interconnect kind '{}' (expected switch, ring, pcie or nic)", s));
}

// A number read strictly (json_read) that must be positive, or non-negative.
double number_at(const json_read::At& at, bool positive) {
  const double d = at.number();
  if (positive ? d <= 0 : d < 0)
    at.fail(fmt::format("must be {} number, got {}", positive ? "a positive" : "a non-negative", json_brief(at.raw())));
  return d;
}

Device parse_device(const json_read::At& at) {
  json_read::Object o(at);
  Device d;
  if (auto v = o.optional("name")) d.name = v->string();
  if (auto v = o.optional("peak_tflops")) d.peak_tflops = number_at(*v, true);
  if (auto v = o.optional("peak_tflops_by_dtype")) {
    json_read::Object t(*v);
    for (auto it = v->raw().begin(); it != v->raw().end(); ++it) {
      const std::string key = it.key();
      Dtype dt = Dtype::F32;
      try {
        dt = parse_dtype(key, "dtype");
      } catch (const Error& e) {
        v->fail(e.what());
      }
      d.peak_tflops_by_dtype[dtype_info(dt).name] = number_at(t[key.c_str()], true);
    }
    t.finish();
  }
  if (auto v = o.optional("efficiency")) {
    d.efficiency = number_at(*v, true);
    if (d.efficiency > 1) v->fail(fmt::format("must be in (0, 1], got {}", d.efficiency));
  }
  if (auto v = o.optional("memory_gb")) d.memory_gb = number_at(*v, true);
  if (auto v = o.optional("source")) d.source = v->string();
  o.finish();
  return d;
}

Interconnect parse_interconnect(const json_read::At& at) {
  json_read::Object o(at);
  Interconnect x;
  x.kind = json_read::parsed(o["kind"], [&](const std::string& k) { return parse_kind(k); });
  // "bandwidth_gbps" / "flow_bandwidth_gbps": the deprecated names (same unit, GB/s).
  x.bandwidth_gbps = number_at(o.renamed("bandwidth_GBps", "bandwidth_gbps"), true);
  x.latency_us = number_at(o["latency_us"], false);
  if (const auto f = o.optional_renamed("flow_bandwidth_GBps", "flow_bandwidth_gbps"))
    x.flow_bandwidth_gbps = number_at(*f, true);
  o.finish();
  return x;
}

Level parse_level(const json_read::At& at) {
  json_read::Object o(at);
  Level l;
  l.name = o["name"].string();
  const auto c = o["cardinality"];
  const auto cv = c.integer();
  if (cv < 1 || cv > kMaxSystemDevices) c.fail(fmt::format("must be between 1 and {}, got {}", kMaxSystemDevices, cv));
  l.cardinality = static_cast<int>(cv);
  if (auto ic = o.optional("interconnect")) l.interconnect = parse_interconnect(*ic);
  o.finish();
  return l;
}

}  // namespace

System parse_system_json(const std::string& text, const std::string& origin) {
  return system_from_json(parse_json_object(text, origin), origin);
}

System system_from_json(const json& j, const std::string& origin) {
  // Strict reading (json_read): every field known, every value of its type; errors name the path.
  json_read::Object o(json_read::At(j, origin, ""));
  System s;
  if (auto v = o.optional("name")) s.name = v->string();
  if (auto v = o.optional("description")) (void)v->string();
  o["levels"].each([&](const json_read::At& at) { s.levels.push_back(parse_level(at)); });
  check_levels(s.levels, origin);
  if (auto v = o.optional("topology")) s.topology = v->raw();
  if (auto v = o.optional("nccl")) {
    v->expect(v->raw().is_object(), "an object");
    s.nccl = v->raw();
  }
  if (auto v = o.optional("device")) s.device = parse_device(*v);
  o.finish();
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
  throw Error(
      fmt::format("--system '{}': no such file, and not an inline hierarchy like node=4,gpu=8 (or give --preset NAME "
                  "alone: one node of a preset)",
                  arg));
}

namespace {

// Fields of the sections kept as read (topology links, NCCL levels) written under the names that say
// their unit when the file used the deprecated ones (docs/formats.md): a system is always written
// in the current vocabulary.
void rename_deprecated(json& o, const char* old, const char* now) {
  if (!o.is_object() || !o.contains(old) || o.contains(now)) return;
  o[now] = std::move(o[old]);
  o.erase(old);
}

json current_topology(json t) {
  if (t.is_object() && t.contains("links") && t["links"].is_array())
    for (auto& l : t["links"]) rename_deprecated(l, "bandwidth_gbps", "bandwidth_GBps");
  return t;
}

json current_nccl(json n) {
  if (n.is_object() && n.contains("levels") && n["levels"].is_object())
    for (auto& l : n["levels"]) {
      rename_deprecated(l, "bus_bw_gbps", "bus_bw_GBps");
      rename_deprecated(l, "nic_gbps", "nic_GBps");
    }
  return n;
}

}  // namespace

json system_json(const System& s) {
  json j;
  j["name"] = s.name;
  j["levels"] = json::array();
  for (const auto& l : s.levels) {
    json o{{"name", l.name}, {"cardinality", l.cardinality}};
    if (l.interconnect)
      o["interconnect"] = {{"kind", to_string(l.interconnect->kind)},
                           {"bandwidth_GBps", l.interconnect->bandwidth_gbps},
                           {"latency_us", l.interconnect->latency_us}};
    if (l.interconnect && l.interconnect->flow_bandwidth_gbps > 0)
      o["interconnect"]["flow_bandwidth_GBps"] = l.interconnect->flow_bandwidth_gbps;
    j["levels"].push_back(o);
  }
  if (s.has_topology()) j["topology"] = current_topology(s.topology);
  if (!s.nccl.is_null()) j["nccl"] = current_nccl(s.nccl);
  if (s.device) {
    json d;
    if (!s.device->name.empty()) d["name"] = s.device->name;
    if (s.device->peak_tflops > 0) d["peak_tflops"] = s.device->peak_tflops;
    if (s.device->efficiency > 0) d["efficiency"] = s.device->efficiency;
    if (!s.device->peak_tflops_by_dtype.empty()) d["peak_tflops_by_dtype"] = s.device->peak_tflops_by_dtype;
    if (s.device->memory_gb > 0) d["memory_gb"] = s.device->memory_gb;
    if (!s.device->source.empty()) d["source"] = s.device->source;
    j["device"] = d;
  }
  return j;
}

std::string system_to_json(const System& s) { return system_json(s).dump(2); }

}  // namespace p2v::engine
