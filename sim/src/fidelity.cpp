#include "p2v/sim/fidelity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "p2v/engine/error.hpp"
#include "p2v/sim/levels.hpp"

namespace p2v::sim {

extern const char* const kFidelityJson;  // fidelity_data.cpp, generated from sim/data/fidelity.json

namespace {

constexpr const auto& kRegimes = kSizeRegimes;

// Strict field access: the keys a row or the file may have, each of its type.
struct Fields {
  const nlohmann::json& j;
  std::string_view origin, where;

  const nlohmann::json& at(const char* key) const {
    const auto it = j.find(key);
    if (it == j.end()) throw Error(fmt::format("{}: {}: \"{}\" missing", origin, where, key));
    return *it;
  }
  void only(std::initializer_list<const char*> keys) const {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      if (std::none_of(keys.begin(), keys.end(), [&k](const char* x) { return k == x; }))
        throw Error(fmt::format("{}: {}: unknown field \"{}\"", origin, where, k));
    }
  }
  int count(const char* key, int min) const {
    const auto& v = at(key);
    if (!v.is_number_integer() || v.get<long long>() < min || v.get<long long>() > 1000000000)
      throw Error(fmt::format("{}: {}: \"{}\" must be an integer of at least {}", origin, where, key, min));
    return v.get<int>();
  }
  double number(const char* key) const {
    const auto& v = at(key);
    if (!v.is_number()) throw Error(fmt::format("{}: {}: \"{}\" must be a number", origin, where, key));
    return v.get<double>();
  }
  double share(const char* key) const {
    const double v = number(key);
    if (!(v >= 0 && v <= 1))
      throw Error(fmt::format("{}: {}: \"{}\" {} is not a share in [0, 1]", origin, where, key, v));
    return v;
  }
  std::string text(const char* key) const {
    const auto& v = at(key);
    if (!v.is_string()) throw Error(fmt::format("{}: {}: \"{}\" must be a string", origin, where, key));
    return v.get<std::string>();
  }
};

}  // namespace

const char* size_regime(double bytes) {
  constexpr double kMiB = 1048576.0;
  return bytes <= kMiB ? kRegimes[0] : bytes < 128 * kMiB ? kRegimes[1] : kRegimes[2];
}

PublishedAccuracy parse_accuracy(std::string_view json_text, std::string_view origin) {
  PublishedAccuracy a;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not a p2v-fidelity/1 file: {}", origin, e.what()));
  }
  if (!j.is_object()) throw Error(fmt::format("{}: not a p2v-fidelity/1 file: not a JSON object", origin));
  const Fields top{j, origin, "file"};
  top.only({"format", "what", "points", "logs", "rows"});
  if (top.text("format") != "p2v-fidelity/1")
    throw Error(fmt::format("{}: format \"{}\" is not p2v-fidelity/1", origin, top.text("format")));
  (void)top.text("what");
  a.points = top.count("points", 1);
  a.logs = top.count("logs", 1);
  const auto& rows = top.at("rows");
  if (!rows.is_array()) throw Error(fmt::format("{}: \"rows\" must be an array", origin));
  std::set<std::tuple<std::string, bool, std::string>> seen;
  int points = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string where = fmt::format("rows[{}]", i);
    if (!rows[i].is_object()) throw Error(fmt::format("{}: {}: not an object", origin, where));
    const Fields f{rows[i], origin, where};
    f.only({"preset", "scope", "regime", "points", "logs", "nodes", "median", "within_1_25", "within_2", "min", "max"});
    AccuracyRow x;
    x.preset = f.text("preset");
    try {
      if (find_preset(x.preset).name != x.preset) throw Error("an alias");
    } catch (const Error&) {
      throw Error(fmt::format("{}: {}: \"{}\" is not a preset's name", origin, where, x.preset));
    }
    const auto scope = f.text("scope");
    if (scope != "one node" && scope != "several nodes")
      throw Error(fmt::format("{}: {}: scope '{}' is neither 'one node' nor 'several nodes'", origin, where, scope));
    x.multi_node = scope == "several nodes";
    x.regime = f.text("regime");
    if (std::find(std::begin(kRegimes), std::end(kRegimes), x.regime) == std::end(kRegimes))
      throw Error(fmt::format("{}: {}: unknown size regime '{}'", origin, where, x.regime));
    x.points = f.count("points", 1);
    x.logs = f.count("logs", 1);
    const auto& nodes = f.at("nodes");
    if (!nodes.is_array() || nodes.empty())
      throw Error(fmt::format("{}: {}: \"nodes\" must be a non-empty array", origin, where));
    for (const auto& n : nodes) {
      if (!n.is_number_integer() || n.get<long long>() < 1 || n.get<long long>() > 1000000000 ||
          (n.get<long long>() > 1) != x.multi_node)
        throw Error(fmt::format("{}: {}: node count {} does not fit scope '{}'", origin, where, n.dump(), scope));
      x.nodes.push_back(n.get<int>());
    }
    x.median = f.number("median");
    x.within_1_25 = f.share("within_1_25");
    x.within_2 = f.share("within_2");
    x.min = f.number("min");
    x.max = f.number("max");
    if (x.logs > x.points || !(x.min > 0) || !(x.min <= x.median && x.median <= x.max) || x.within_1_25 > x.within_2)
      throw Error(fmt::format("{}: {} ({} / {} / {}) is inconsistent", origin, where, x.preset, scope, x.regime));
    if (!seen.insert({x.preset, x.multi_node, x.regime}).second)
      throw Error(fmt::format("{}: {}: a second row for {} / {} / {}", origin, where, x.preset, scope, x.regime));
    points += x.points;
    a.rows.push_back(std::move(x));
  }
  if (points != a.points)
    throw Error(fmt::format("{}: the rows hold {} points, \"points\" says {}", origin, points, a.points));
  return a;
}

const PublishedAccuracy& published_accuracy() {
  // A build whose built-in file is unreadable (CTest sim and fidelity_accuracy catch it) still runs:
  // the note then says so instead of failing every command on a preset.
  static const PublishedAccuracy a = [] {
    try {
      return parse_accuracy(kFidelityJson, "built-in sim/data/fidelity.json");
    } catch (const Error& e) {
      PublishedAccuracy none;
      none.error = e.what();
      return none;
    }
  }();
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

namespace {

// The line of accuracy_note from the summary accuracy_json holds (regimes and node counts).
std::string note_of(const nlohmann::json& j) {
  const std::string name = j.at("preset").get<std::string>(), scope = j.at("scope").get<std::string>();
  if (j.at("points").get<int>() == 0)
    return fmt::format(
        "accuracy: no published measurement in p2v's fidelity suite checks preset {} on {}: its times are the "
        "model's alone; calibrate on your cluster's nccl-tests logs (p2v calibrate --nccl-tests)",
        name, scope);
  std::string parts;
  for (const auto& r : j.at("regimes")) {
    if (!parts.empty()) parts += ", ";
    const std::string regime = r.at("regime").get<std::string>();
    if (r.at("points").get<int>() == 0)
      parts += fmt::format("{} unchecked (no point)", regime);
    else
      parts += fmt::format("{} {:.0f}% of {} within 1.25x (median {:.2f}, range {:.2f}-{:.2f})", regime,
                           100 * r.at("within_1_25").get<double>(), r.at("points").get<int>(),
                           r.at("median").get<double>(), r.at("min").get<double>(), r.at("max").get<double>());
  }
  std::string span;
  const auto ns = j.at("nodes").get<std::vector<int>>();
  for (const int n : ns) span += fmt::format("{}{}", span.empty() ? "" : ",", n);
  return fmt::format(
      "accuracy: preset {} uncalibrated against {} published nccl-tests points ({} node{}; one collective over every "
      "GPU), predicted/measured: {}; p2v calibrate --nccl-tests fits it to a cluster (docs/simulator.md §6)",
      name, j.at("points").get<int>(), span, ns.size() == 1 && ns.front() == 1 ? "" : "s", parts);
}

}  // namespace

nlohmann::json accuracy_json(const PublishedAccuracy& a, std::string_view preset, int nodes) {
  const std::string name = find_preset(std::string(preset)).name;
  const bool multi = nodes > 1;
  nlohmann::json j{{"preset", name}, {"scope", multi ? "several nodes" : "one node"}};
  if (!a.error.empty()) {
    j["error"] = a.error;
    j["note"] = fmt::format("accuracy: not available ({})", a.error);
    return j;
  }
  const auto rows = accuracy_rows(a, name, multi);
  nlohmann::json regimes = nlohmann::json::array();
  int points = 0;
  std::vector<int> ns;
  for (const char* regime : kRegimes) {
    const auto r = std::find_if(rows.begin(), rows.end(), [&](const AccuracyRow& x) { return x.regime == regime; });
    if (r == rows.end()) {
      regimes.push_back({{"regime", regime}, {"points", 0}});
      continue;
    }
    regimes.push_back({{"regime", regime},
                       {"points", r->points},
                       {"logs", r->logs},
                       {"nodes", r->nodes},
                       {"median", r->median},
                       {"within_1_25", r->within_1_25},
                       {"within_2", r->within_2},
                       {"min", r->min},
                       {"max", r->max}});
    points += r->points;
    ns.insert(ns.end(), r->nodes.begin(), r->nodes.end());
  }
  std::sort(ns.begin(), ns.end());
  ns.erase(std::unique(ns.begin(), ns.end()), ns.end());
  j["points"] = points;
  j["nodes"] = ns;
  j["regimes"] = regimes;
  j["note"] = note_of(j);
  return j;
}

std::string accuracy_note(const PublishedAccuracy& a, std::string_view preset, int nodes) {
  return accuracy_json(a, preset, nodes).at("note").get<std::string>();
}

}  // namespace p2v::sim
