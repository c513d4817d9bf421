#include "p2v/sim/fidelity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "p2v/engine/error.hpp"
#include "p2v/sim/levels.hpp"

namespace p2v::sim {

extern const char* const kFidelityJson;  // fidelity_data.cpp, generated from sim/data/fidelity.json

namespace {

constexpr const char* kRegimes[] = {"<= 1 MiB", "1-64 MiB", ">= 128 MiB"};

double share(const nlohmann::json& r, const char* key, std::string_view origin) {
  const double v = r.at(key).get<double>();
  if (!(v >= 0 && v <= 1)) throw Error(fmt::format("{}: \"{}\" {} is not a share in [0, 1]", origin, key, v));
  return v;
}

}  // namespace

PublishedAccuracy parse_accuracy(std::string_view json_text, std::string_view origin) {
  PublishedAccuracy a;
  try {
    const auto j = nlohmann::json::parse(json_text);
    if (j.at("format") != "p2v-fidelity/1")
      throw Error(fmt::format("{}: format {} is not p2v-fidelity/1", origin, j.at("format").dump()));
    a.points = j.at("points").get<int>();
    a.logs = j.at("logs").get<int>();
    for (const auto& r : j.at("rows")) {
      AccuracyRow x;
      x.preset = r.at("preset").get<std::string>();
      const auto scope = r.at("scope").get<std::string>();
      if (scope != "one node" && scope != "several nodes")
        throw Error(fmt::format("{}: scope '{}' is neither 'one node' nor 'several nodes'", origin, scope));
      x.multi_node = scope == "several nodes";
      x.regime = r.at("regime").get<std::string>();
      if (std::find(std::begin(kRegimes), std::end(kRegimes), x.regime) == std::end(kRegimes))
        throw Error(fmt::format("{}: unknown size regime '{}'", origin, x.regime));
      x.points = r.at("points").get<int>();
      x.logs = r.at("logs").get<int>();
      x.nodes = r.at("nodes").get<std::vector<int>>();
      x.median = r.at("median").get<double>();
      x.within_1_25 = share(r, "within_1_25", origin);
      x.within_2 = share(r, "within_2", origin);
      x.min = r.at("min").get<double>();
      x.max = r.at("max").get<double>();
      if (x.points < 1 || x.logs < 1 || x.logs > x.points || x.nodes.empty() || !(x.min > 0) ||
          !(x.min <= x.median && x.median <= x.max) || x.within_1_25 > x.within_2)
        throw Error(fmt::format("{}: row {} / {} / {} is inconsistent", origin, x.preset, scope, x.regime));
      a.rows.push_back(std::move(x));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not a p2v-fidelity/1 file: {}", origin, e.what()));
  }
  return a;
}

const PublishedAccuracy& published_accuracy() {
  static const PublishedAccuracy a = parse_accuracy(kFidelityJson, "built-in sim/data/fidelity.json");
  return a;
}

std::vector<AccuracyRow> accuracy_rows(const PublishedAccuracy& a, std::string_view preset, bool multi_node) {
  const std::string name = find_preset(std::string(preset)).name;
  std::vector<AccuracyRow> out;
  for (const char* regime : kRegimes)
    for (const auto& r : a.rows)
      if (r.preset == name && r.multi_node == multi_node && r.regime == regime) out.push_back(r);
  return out;
}

std::string accuracy_note(const PublishedAccuracy& a, std::string_view preset, int nodes) {
  const std::string name = find_preset(std::string(preset)).name;
  const bool multi = nodes > 1;
  const char* scope = multi ? "several nodes" : "one node";
  const auto rows = accuracy_rows(a, name, multi);
  if (rows.empty())
    return fmt::format(
        "accuracy: no published measurement in p2v's fidelity suite checks preset {} on {}: its times are the "
        "model's alone; calibrate on your cluster's nccl-tests logs (p2v calibrate --nccl-tests)",
        name, scope);
  std::string parts;
  int points = 0;
  std::vector<int> ns;
  for (const auto& r : rows) {
    parts += fmt::format("{}{} {:.0f}%{} (median {:.2f}, range {:.2f}-{:.2f})", parts.empty() ? "" : ", ", r.regime,
                         100 * r.within_1_25, parts.empty() ? " within 1.25x" : "", r.median, r.min, r.max);
    points += r.points;
    ns.insert(ns.end(), r.nodes.begin(), r.nodes.end());
  }
  std::sort(ns.begin(), ns.end());
  ns.erase(std::unique(ns.begin(), ns.end()), ns.end());
  std::string span;
  for (const int n : ns) span += fmt::format("{}{}", span.empty() ? "" : ",", n);
  return fmt::format(
      "accuracy: preset {} uncalibrated against {} published nccl-tests points ({} node{}; one collective over every "
      "GPU), predicted/measured: {}; p2v calibrate --nccl-tests fits it to a cluster (docs/simulator.md §6)",
      name, points, span, ns.size() == 1 && ns.front() == 1 ? "" : "s", parts);
}

}  // namespace p2v::sim
