// p2v calibrate: fit the model's parameters to measured collective times and write a calibrated
// system file: from a CSV of measurements (per-link α and β, docs/simulator.md §5) or from nccl-tests logs
// (the system file's knobs, sim/fit.hpp); --predict-only prints predicted vs measured.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/progress.hpp"
#include "p2v/engine/text_util.hpp"
#include "p2v/engine/write.hpp"
#include "p2v/sim/calibrate.hpp"
#include "p2v/sim/fidelity.hpp"
#include "p2v/sim/fit.hpp"
#include "p2v/sim/nccl_model.hpp"
#include "p2v/sim/nccl_tests.hpp"
#include "p2v/sim/preset_devices.hpp"
#include "p2v/sim/report.hpp"

namespace p2v::tools {
namespace {

struct CalArgs {
  std::string system, measurements, output, algo, preset, collective, nccl_version, nccl_tuner;
  std::vector<std::string> logs;
  bool json = false, predict_only = false, progress = false, quiet = false;
  double prior_weight = sim::kFitPriorWeight;
};

struct CalResult {
  engine::System system;
  sim::CalibrationReport report;
  std::string text;  // the calibrated system file
};

CalResult run(const CalArgs& a) {
  CalResult r{load_system(a.system, a.preset), {}, {}};
  fill_interconnects(r.system, a.preset);
  sim::Simulator simulator(r.system);
  const auto algo = sim::parse_algorithm(a.algo.empty() ? "ring" : a.algo);
  const auto ms = sim::load_measurements(a.measurements, simulator.topology().num_devices());
  const auto cal = sim::calibrate(simulator, ms, algo);
  nlohmann::json calibrated = sim::calibrated_system_json(
      r.system, simulator.topology(),
      fmt::format("{} calibrated by p2v calibrate from {} ({} measurements; mean |error| {:.1f}% -> {:.1f}%)",
                  r.system.name, a.measurements, ms.size(), 100 * cal.error_before, 100 * cal.error_after));
  r.text = calibrated.dump(2) + "\n";
  if (!a.output.empty()) write_file(a.output, r.text);
  r.report = sim::calibration_report(cal, ms.size(), std::move(calibrated), a.output);
  return r;
}

void print_table(const CalArgs& a, const CalResult& r) {
  const auto& c = r.report;
  fmt::print("calibrated {} from {} measurements ({} iterations)\n", r.system.name, c.measurements, c.iterations);
  fmt::print("  {:<10} {:>12} {:>12} {:>12} {:>12}  {}\n", "class", "GB/s before", "GB/s after", "us before",
             "us after", "");
  for (const auto& k : c.classes)
    fmt::print("  {:<10} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f}  {}\n", k.cls, k.bandwidth_gbps_before,
               k.bandwidth_gbps_after, k.latency_us_before, k.latency_us_after,
               k.constrained ? "" : "(no measurement uses it: unchanged)");
  fmt::print("  {:<10} {:>12} {:>12} {:>12.3f} {:>12.3f}  (per collective call)\n", "step", "", "",
             c.step_overhead_us_before, c.step_overhead_us_after);
  fmt::print("  mean |relative error|: {:.2f}% before, {:.2f}% after\n", 100 * c.error_before, 100 * c.error_after);
  if (a.output.empty())
    fmt::print("\n{}", r.text);
  else
    fmt::print("wrote {}\n", a.output);
}

// --nccl-tests: the logs, each read once, a log per run of a file. --collective names nccl-tests' tests (all_reduce,
// all_gather_perf, ...) or p2v's collectives (AllReduce, ...).
std::vector<sim::NcclTestsLog> load_logs(const CalArgs& a) {
  sim::NcclTestsOptions opt;
  if (!a.collective.empty()) {
    const auto t = a.collective.ends_with("_perf") ? a.collective : a.collective + "_perf";
    auto c = sim::collective_of_test(t);
    // Any case, with or without underscores: allreduce, ALL_REDUCE, AllReduce.
    auto squash = [](std::string x) {
      std::erase(x, '_');
      return engine::text::lower(std::move(x));
    };
    for (const auto k : engine::kAllCollectives)
      if (!c && squash(engine::to_string(k)) == squash(a.collective)) c = k;
    opt.collective = c ? *c : engine::parse_collective(a.collective);
  }
  std::vector<sim::NcclTestsLog> logs;
  std::map<std::string, std::string> seen;  // a file's canonical path -> as given
  for (const auto& path : a.logs) {
    std::error_code ec;
    const auto canon = std::filesystem::weakly_canonical(path, ec);
    const auto key = ec ? path : canon.string();
    if (const auto it = seen.find(key); it != seen.end())
      throw Error(fmt::format("--nccl-tests: '{}' is given twice (also as '{}'); each run once", path, it->second));
    seen[key] = path;
    for (auto& log : sim::load_nccl_tests_runs(path, opt)) logs.push_back(std::move(log));  // a log per run
  }
  return logs;
}

// --nccl-tests without --system: the shape the logs ran on, as an inline system "node=N,gpu=G" for
// --preset. The ranks are what the log says (sim/nccl_tests.hpp); the nodes are its hosts (Rank lines
// or NCCL INFO's nNodes), else the ranks over the preset's GPUs per node. Every log must give the same
// shape (one system is calibrated). Returns the system text and a line saying where it came from.
std::pair<std::string, std::string> shape_from_logs(const std::vector<sim::NcclTestsLog>& logs,
                                                    const std::string& preset) {
  const auto& pr = sim::find_preset(preset);
  const int node_gpus = sim::preset_device(pr).node_devices;
  std::string shape, why, first;
  for (const auto& log : logs) {
    if (log.ranks <= 0)
      throw Error(
          fmt::format("{}: the log does not say how many ranks ran (no complete Rank lines, no NCCL INFO nRanks, and "
                      "its sizes and bandwidths do not tell); give the shape with --system node=N,gpu=G",
                      log.origin));
    int nodes = log.nodes, gpus = 0;
    std::string how;
    if (nodes > 0) {
      if (log.ranks_per_node <= 0)
        throw Error(fmt::format("{}: {} ranks on {} hosts, not as many on each; give the shape with --system",
                                log.origin, log.ranks, nodes));
      gpus = log.ranks_per_node;
      how = fmt::format("{}, {} on each of {} host(s)", log.ranks_said, gpus, nodes);
    } else {
      if (log.ranks % node_gpus != 0 && log.ranks > node_gpus)
        throw Error(
            fmt::format("{}: {} ranks, not a whole number of {}-GPU {} nodes, and the log names no hosts; give the "
                        "shape with --system node=N,gpu=G",
                        log.origin, log.ranks, node_gpus, pr.name));
      nodes = std::max(1, log.ranks / node_gpus);
      gpus = log.ranks / nodes;
      how = fmt::format("{}; {} GPUs per node as in preset {} (the log names no hosts)", log.ranks_said, node_gpus,
                        pr.name);
    }
    const auto s = fmt::format("node={},gpu={}", nodes, gpus);
    if (!shape.empty() && s != shape)
      throw Error(fmt::format("{}:{}: ran on {}, but {} on {}; calibrate one system at a time (or give --system)",
                              log.origin, log.rows.front().line, s, first, shape));
    if (shape.empty()) {
      shape = s;
      first = fmt::format("{}:{}", log.origin, log.rows.front().line);
      why = fmt::format("system {} from {}: {}", s, log.origin, how);
    }
  }
  return {shape, why};
}

// The NCCL version whose tuning constants predict the logs (docs/simulator.md §5.1): --nccl-version, else
// the version the logs print (all must agree), else the system's "nccl" section (or the model's
// default). Written into the system's "nccl" section, so a calibrated system file keeps it.
void apply_nccl_version(const CalArgs& a, const std::vector<sim::NcclTestsLog>& logs, engine::System& s,
                        std::vector<std::string>& notes) {
  std::string text, from;
  if (!a.nccl_version.empty()) {
    text = a.nccl_version;
    from = "--nccl-version";
  } else {
    for (const auto& log : logs) {
      if (log.nccl_version.empty()) continue;
      const std::string where = fmt::format("{}:{}", log.origin, log.nccl_version_line);
      if (!text.empty() && sim::parse_nccl_version(text, from) != sim::parse_nccl_version(log.nccl_version, where))
        throw Error(
            fmt::format("{}: NCCL version {}, but {} says {}: give logs of one NCCL version (or "
                        "--nccl-version)",
                        where, log.nccl_version, from, text));
      if (text.empty()) {
        text = log.nccl_version;
        from = where;
      }
    }
  }
  if (text.empty()) {
    const bool own = !s.nccl.is_null() && s.nccl.contains("version");
    notes.push_back(
        fmt::format("NCCL version: the logs print none; {}",
                    own ? fmt::format("the system's, {}", s.nccl["version"].dump())
                        : fmt::format("the model's default, {}", sim::nccl_version_string(sim::kNcclNewestVersion))));
    return;
  }
  const int v = sim::parse_nccl_version(text, from);
  if (v > sim::kNcclNewestVersion)
    notes.push_back(
        fmt::format("{}: NCCL {} is newer than the newest release p2v's tables come from ({}): its tuning "
                    "constants are taken as that release's",
                    from, text, sim::nccl_version_string(sim::kNcclNewestVersion)));
  if (s.nccl.is_null()) s.nccl = nlohmann::json::object();
  s.nccl["version"] = sim::nccl_version_string(v);
}

// Where one key of the system's "nccl" section goes that some logs (runs) state: `stated[i]` is log i's
// value (null: it states none), `why[i]` the start and the tail of its note. The system's, when the logs
// that state it give one value and every log states it (`silent_agree`: or states nothing); otherwise each
// stating log keeps its value for its own points (`per_log[i]`), but where the system has that value
// already. A line per value says which.
void settle_key(const std::string& key, const std::vector<nlohmann::json>& stated,
                const std::vector<std::pair<std::string, std::string>>& why, bool silent_agree, engine::System& s,
                std::vector<nlohmann::json>& per_log, std::vector<std::string>& notes) {
  std::optional<std::size_t> first;
  bool common = true;
  for (std::size_t i = 0; i < stated.size(); ++i) {
    if (stated[i].is_null())
      common = common && silent_agree;
    else if (!first)
      first = i;
    else
      common = common && stated[i] == stated[*first];
  }
  if (!first) return;
  if (s.nccl.is_null()) s.nccl = nlohmann::json::object();  // one model for every point
  if (common) {
    s.nccl[key] = stated[*first];
    notes.push_back(
        fmt::format("{} (system nccl.{} = {}){}", why[*first].first, key, stated[*first].dump(), why[*first].second));
    return;
  }
  for (std::size_t i = 0; i < stated.size(); ++i) {
    if (stated[i].is_null()) continue;
    const bool system_value = s.nccl.contains(key) && s.nccl.at(key) == stated[i];
    if (!system_value) per_log[i][key] = stated[i];
    notes.push_back(fmt::format(
        "{} (nccl.{} = {}{}){}", why[i].first, key, stated[i].dump(),
        system_value ? ", as the system's" : " for this run's points only: the runs here differ in it", why[i].second));
  }
}

// The collective channels the logs' NCCL_DEBUG=INFO lines print ("N coll channels"): a fact of the
// run, like its NCCL version, so it replaces the system's: "channels" from one-node logs,
// "net_channels" from logs across nodes. When the logs that print it agree, it is the system's, also
// for logs that print none (unlike a run's environment: the count is what NCCL's topology search builds
// on the cluster, which a log without NCCL_DEBUG=INFO ran as well); when they differ (runs of
// NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS), each such log's count holds for its own points (returned per
// log: the "nccl" keys to set for them), and the system keeps its own.
std::vector<nlohmann::json> apply_log_channels(const std::vector<sim::NcclTestsLog>& logs, engine::System& s,
                                               std::vector<std::string>& notes) {
  std::vector<nlohmann::json> per_log(logs.size(), nlohmann::json::object());
  std::vector<std::size_t> stating;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    const auto& log = logs[i];
    if (log.coll_channels <= 0) continue;
    if (log.nodes <= 0) {
      notes.push_back(fmt::format("{}:{}: {} coll channels not used: the log does not say how many nodes it ran on",
                                  log.origin, log.coll_channels_line, log.coll_channels));
      continue;
    }
    stating.push_back(i);
  }
  for (const std::string key : {"net_channels", "channels"}) {
    std::vector<nlohmann::json> stated(logs.size());
    std::vector<std::pair<std::string, std::string>> why(logs.size());
    for (const auto i : stating) {
      if ((logs[i].nodes > 1 ? "net_channels" : "channels") != key) continue;
      stated[i] = logs[i].coll_channels;
      why[i] = {fmt::format("{}:{}: NCCL ran {} coll channels {}", logs[i].origin, logs[i].coll_channels_line,
                            logs[i].coll_channels, logs[i].nodes > 1 ? "across nodes" : "in one node"),
                ""};
    }
    settle_key(key, stated, why, true, s, per_log, notes);
  }
  return per_log;
}

// One run's NCCL environment as the model takes it, from its NCCL_DEBUG=INFO lines ("NCCL_PROTO set by
// environment to Simple"): keys of the system's "nccl" section, each with the note that says where it
// came from, and the algorithm NCCL_ALGO leaves alone ("" when it names several or none).
struct RunEnv {
  nlohmann::json nccl = nlohmann::json::object();
  // key -> {"file:line: NAME set by environment to V", what more the note says}
  std::map<std::string, std::pair<std::string, std::string>> why;
  std::string algo, algo_where;
};

// The variables the model has: NCCL_PROTO (nccl.protocols), NCCL_ALGO (nccl.algorithms, with ring, which
// the model always keeps), NCCL_BUFFSIZE, NCCL_NVLS_ENABLE (0 or 1; 2 is NCCL's own detection),
// NCCL_NVLS_CHUNKSIZE, NCCL_NVLSTREE_MAX_CHUNKSIZE. NCCL's "unset" (-2) is nothing set.
RunEnv run_env(const sim::NcclTestsLog& log, int v, std::vector<std::string>& notes) {
  static const std::vector<std::string> kProtos = {"ll", "ll128", "simple"};
  static const std::vector<std::string> kNcclAlgos = {"ring",         "tree", "collnet",  "collnetdirect",
                                                      "collnetchain", "nvls", "nvlstree", "pat"};
  static const std::vector<std::string> kModelAlgos = {"ring", "tree", "nvls", "nvls-tree", "collnet"};
  static const std::vector<std::string> kApplied = {"NCCL_PROTO",          "NCCL_ALGO",
                                                    "NCCL_BUFFSIZE",       "NCCL_NVLS_ENABLE",
                                                    "NCCL_NVLS_CHUNKSIZE", "NCCL_NVLSTREE_MAX_CHUNKSIZE"};
  RunEnv r;
  for (const auto& name : kApplied) {
    const auto it = std::find_if(log.env.begin(), log.env.end(), [&](const auto& e) { return e.name == name; });
    if (it == log.env.end() || it->value == "-2") continue;
    const auto& e = *it;
    const std::string where = fmt::format("{}:{}", log.origin, e.line);
    auto set = [&](const std::string& key, const nlohmann::json& val, const std::string& more = "") {
      r.nccl[key] = val;
      r.why[key] = {fmt::format("{}: {} set by environment to {}", where, name, e.value), more};
    };
    auto bytes = [&](long long min) {
      const auto& x = e.value;
      if (x.empty() ||
          !std::all_of(x.begin(), x.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        throw Error(fmt::format("{}: {} '{}' is not a byte count", where, name, x));
      const long long b = std::stoll(x);
      if (b < min)
        throw Error(fmt::format("{}: {} {} is below {} bytes, which p2v's model takes", where, name, b, min));
      return b;
    };
    if (name == "NCCL_PROTO") {
      const auto on = sim::nccl_env_list(e.value, log.collective, v, kProtos, where, notes);
      if (!on) continue;
      if (on->empty()) throw Error(fmt::format("{}: NCCL_PROTO {} enables no protocol", where, e.value));
      set("protocols", *on,
          std::find(on->begin(), on->end(), "ll128") != on->end()
              ? "; NCCL then runs LL128 wherever it is built in, the model where NCCL enables it by default"
              : "");
    } else if (name == "NCCL_ALGO") {
      if (v < 21700 && log.collective != engine::Collective::AllReduce)
        continue;  // before v2.17 NCCL_ALGO applies to AllReduce only (src/graph/tuning.cc)
      const auto listed = sim::nccl_env_list(e.value, log.collective, v, kNcclAlgos, where, notes);
      if (!listed) continue;
      std::vector<std::string> on;
      for (const auto& x : *listed) {
        const std::string m = x == "nvlstree" ? "nvls-tree" : x.rfind("collnet", 0) == 0 ? "collnet" : x;
        if (m != "pat" && std::find(on.begin(), on.end(), m) == on.end()) on.push_back(m);
      }
      if (on.size() == 1) {
        r.algo = on.front() == "nvls-tree" ? "nvls" : on.front();
        r.algo_where = where;
      }
      std::string more;
      if (std::find(on.begin(), on.end(), "ring") == on.end()) {
        on.insert(on.begin(), "ring");
        more = "; ring kept, as the model always does";
      }
      std::vector<std::string> ordered;
      for (const auto& x : kModelAlgos)
        if (std::find(on.begin(), on.end(), x) != on.end()) ordered.push_back(x);
      set("algorithms", ordered, more);
    } else if (name == "NCCL_BUFFSIZE") {
      set("buffsize", bytes(65536));
    } else if (name == "NCCL_NVLS_ENABLE") {
      if (e.value == "0" || e.value == "1") set("nvls", e.value == "1");
    } else if (name == "NCCL_NVLS_CHUNKSIZE") {
      set("nvls_chunksize", bytes(16384));
    } else if (name == "NCCL_NVLSTREE_MAX_CHUNKSIZE") {
      set("nvlstree_max_chunksize", bytes(16384));
    }
  }
  return r;
}

// The logs' environments (run_env) on system `s`: a setting every log states with one meaning is the
// system's (written into the calibrated file); one the logs differ in (a file sweeping NCCL_ALGO or
// NCCL_PROTO run by run, or a per-collective list over logs of two collectives) holds for its own run's
// points only (a run that does not state it keeps the system's value). A run whose NCCL_ALGO names one
// algorithm is predicted with it, unless --algo is given.
// Returns per log what holds for its points beyond the system; `forced` is the algorithm every log forces.
std::vector<RunEnv> apply_log_env(const std::vector<sim::NcclTestsLog>& logs, engine::System& s,
                                  const std::string& algo_arg, std::string& forced, std::vector<std::string>& notes) {
  const int v = s.nccl.is_object() && s.nccl.contains("version")
                    ? sim::parse_nccl_version(s.nccl["version"].get<std::string>(), "nccl.version")
                    : sim::parse_nccl_version("2.30.7", "default");
  std::vector<RunEnv> envs;
  for (const auto& log : logs) envs.push_back(run_env(log, v, notes));
  std::vector<std::string> keys;
  for (const auto& e : envs)
    for (const auto& [k, val] : e.nccl.items())
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  // A run that does not state a key keeps the system's value (the cluster's setting, as far as known).
  std::vector<nlohmann::json> per_log(envs.size(), nlohmann::json::object());
  for (const auto& k : keys) {
    std::vector<nlohmann::json> stated(envs.size());
    std::vector<std::pair<std::string, std::string>> why(envs.size());
    for (std::size_t i = 0; i < envs.size(); ++i)
      if (envs[i].nccl.contains(k)) std::tie(stated[i], why[i]) = std::pair(envs[i].nccl.at(k), envs[i].why.at(k));
    settle_key(k, stated, why, false, s, per_log, notes);
  }
  for (std::size_t i = 0; i < envs.size(); ++i) envs[i].nccl = std::move(per_log[i]);
  forced.clear();
  if (!algo_arg.empty()) {
    for (auto& e : envs) e.algo.clear();
    return envs;
  }
  const bool one = std::all_of(envs.begin(), envs.end(),
                               [&](const RunEnv& e) { return !e.algo.empty() && e.algo == envs.front().algo; });
  if (one) {
    forced = envs.front().algo;
    notes.push_back(fmt::format("NCCL_ALGO names one algorithm: predicted with --algo {}", forced));
    for (auto& e : envs) e.algo.clear();
    return envs;
  }
  for (const auto& e : envs)
    if (!e.algo.empty())
      notes.push_back(fmt::format("{}: NCCL_ALGO names one algorithm: this run's points predicted with --algo {}",
                                  e.algo_where, e.algo));
  return envs;
}

// The points of every log on the system: a log that does not say its rank count ran on all the
// system's devices; one that does must have as many. `envs` (apply_log_env), one per log, is what holds
// for a log's points beyond the system: its own NCCL settings and algorithm.
// A row whose size NCCL_DEBUG_SUBSYS=TUNING lines name is predicted with the algorithm and protocol NCCL
// logged for it (sim::fit_points), unless --algo is given (`algo_given`).
std::vector<sim::FitPoint> log_points(const std::vector<sim::NcclTestsLog>& logs, const std::vector<RunEnv>& envs,
                                      const engine::System& s, bool algo_given, std::vector<std::string>& notes) {
  const int nd = sim::system_devices(s);
  std::vector<sim::FitPoint> ps;
  for (std::size_t i = 0; i < logs.size(); ++i) {
    auto log = logs[i];
    notes.insert(notes.end(), log.notes.begin(), log.notes.end());
    sim::expect_ranks(log, nd, fmt::format("the system has {} devices", nd));
    auto p = sim::fit_points(log, s);
    const auto logged = std::count_if(p.begin(), p.end(), [](const auto& x) { return x.proto != sim::Protocol::Auto; });
    if (!log.picks.empty()) {
      const auto unmodelled = std::count_if(log.picks.begin(), log.picks.end(), [](const auto& x) {
        return !sim::nccl_algorithm(x.algo) || !sim::nccl_protocol(x.proto);
      });
      notes.push_back(fmt::format(
          "{}: NCCL logged its algorithm and protocol (NCCL_DEBUG_SUBSYS=TUNING) for {} of the {} rows{}{}", log.origin,
          logged, p.size(), algo_given ? "; not used: --algo is given" : ": predicted with them, not the model's pick",
          unmodelled > 0 ? fmt::format(" ({} of the logged sizes ran an algorithm the model does not have, e.g. PAT: "
                                       "the model's pick there)",
                                       unmodelled)
                         : ""));
    }
    for (auto& x : p) {
      if (algo_given) std::tie(x.algo, x.proto) = std::pair(sim::Algorithm::Auto, sim::Protocol::Auto);
      if (!envs[i].nccl.empty()) x.nccl_env = envs[i].nccl;
      if (!envs[i].algo.empty() && x.algo == sim::Algorithm::Auto) x.algo = sim::parse_algorithm(envs[i].algo);
    }
    ps.insert(ps.end(), p.begin(), p.end());
  }
  return ps;
}

std::string size_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fmt::format("{:g} {}", b, units[u]);
}

nlohmann::json points_json(const std::vector<sim::PointPrediction>& pr) {
  auto arr = nlohmann::json::array();
  for (const auto& p : pr) {
    arr.push_back({{"origin", p.point.origin},
                   {"line", p.point.line},
                   {"collective", engine::to_string(p.point.collective)},
                   {"ranks", p.point.ranks},
                   {"nodes", p.point.nodes},
                   {"bytes", p.point.bytes},
                   {"measured_s", p.point.measured_s},
                   {"predicted_s", p.predicted_s},
                   {"ratio", p.predicted_s / p.point.measured_s},
                   {"algo", p.algo},
                   {"proto", p.proto}});
    // what this run's own environment set beyond the system's (apply_log_env)
    if (!p.point.nccl_env.is_null()) arr.back()["nccl_env"] = p.point.nccl_env;
    if (p.point.algo != sim::Algorithm::Auto) arr.back()["forced_algo"] = sim::to_string(p.point.algo);
    if (p.point.proto != sim::Protocol::Auto) arr.back()["forced_proto"] = sim::to_string(p.point.proto);
  }
  return arr;
}

// Predicted / measured over the points: median, counts within 1.25x and 2x, per size regime of the
// fidelity suite (sim::size_regime) and over all.
nlohmann::json points_summary(const std::vector<sim::PointPrediction>& pr) {
  std::map<std::string, std::vector<double>> by;  // regime (sim/fidelity.hpp, the suite's) -> ratios
  for (const auto& p : pr)
    if (p.point.measured_s > 0) {
      const double x = p.predicted_s / p.point.measured_s;
      by[sim::size_regime(p.point.bytes)].push_back(x);
      by["all"].push_back(x);
    }
  auto rows = nlohmann::json::array();
  std::vector<const char*> regimes(std::begin(sim::kSizeRegimes), std::end(sim::kSizeRegimes));
  regimes.push_back("all");
  for (const char* g : regimes) {
    auto& r = by[g];
    if (r.empty()) continue;
    std::sort(r.begin(), r.end());
    const std::size_t n = r.size();
    const double median = n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    auto within = [&](double f) {
      return std::count_if(r.begin(), r.end(), [&](double x) { return x <= f && x >= 1 / f; });
    };
    rows.push_back({{"regime", g},
                    {"points", n},
                    {"median", median},
                    {"n_within_1_25", within(1.25)},
                    {"n_within_2", within(2)},
                    {"min", r.front()},
                    {"max", r.back()}});
  }
  return rows;
}

void print_summary(const nlohmann::json& rows) {
  fmt::print("predicted / measured:\n");
  for (const auto& r : rows)
    fmt::print(
        "  {:<11} {:>4} points  median {:.2f}  within 1.25x {:>4} ({:.0f}%)  within 2x {:>4}  range {:.2f}-{:.2f}\n",
        r["regime"].get<std::string>(), r["points"].get<std::size_t>(), r["median"].get<double>(),
        r["n_within_1_25"].get<long>(), 100.0 * r["n_within_1_25"].get<double>() / r["points"].get<double>(),
        r["n_within_2"].get<long>(), r["min"].get<double>(), r["max"].get<double>());
}

void print_points(const std::vector<sim::PointPrediction>& pr) {
  fmt::print("  {:<28} {:<13} {:>10} {:>12} {:>12} {:>7}  {}\n", "log:line", "collective", "size", "measured",
             "predicted", "ratio", "algo");
  for (const auto& p : pr) {
    std::string where = fmt::format("{}:{}", p.point.origin, p.point.line);
    if (where.size() > 28) where = "..." + where.substr(where.size() - 25);
    fmt::print("  {:<28} {:<13} {:>10} {:>12} {:>12} {:>7.3f}  {}\n", where, engine::to_string(p.point.collective),
               size_text(p.point.bytes), sim::format_seconds(p.point.measured_s), sim::format_seconds(p.predicted_s),
               p.predicted_s / p.point.measured_s, p.algo);
  }
}

int run_nccl_tests(const CalArgs& in) {
  CalArgs a = in;
  std::vector<std::string> notes;
  const auto logs = load_logs(a);
  // Two runs with the very same table (every size and time): one run copied into two files, most likely.
  for (std::size_t j = 1; j < logs.size(); ++j)
    for (std::size_t i = 0; i < j; ++i) {
      const auto& x = logs[i].rows;
      const auto& y = logs[j].rows;
      if (x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), [](const auto& p, const auto& q) {
            return p.bytes == q.bytes && p.time_us == q.time_us && p.type == q.type;
          })) {
        notes.push_back(
            fmt::format("{}:{}: the same table as {}:{} (every size and time): the same run twice? Both "
                        "count as measurements",
                        logs[j].origin, y.front().line, logs[i].origin, x.front().line));
        break;
      }
    }
  if (a.system.empty() && !a.preset.empty()) {
    auto [shape, why] = shape_from_logs(logs, a.preset);
    a.system = shape;
    notes.push_back(std::move(why));
  }
  auto sys = load_system(a.system, a.preset);
  nlohmann::json accuracy;  // the preset's uncalibrated accuracy, where the system is its own
  if (const auto note = fill_interconnects(sys, a.preset, false, "", a.nccl_tuner, &accuracy); !note.empty())
    notes.push_back(note);
  // GPUs the logs print that are not the system's device (e.g. B200 runs against dgx-h100).
  if (sys.device)
    for (const auto& log : logs)
      if (auto n = sim::gpu_mismatch_note(log.origin, log.devices, *sys.device); !n.empty())
        notes.push_back(std::move(n));
  apply_nccl_version(a, logs, sys, notes);
  const auto channels = apply_log_channels(logs, sys, notes);
  std::string forced;
  auto envs = apply_log_env(logs, sys, a.algo, forced, notes);
  for (std::size_t i = 0; i < envs.size(); ++i) envs[i].nccl.update(channels[i]);
  const auto algo = sim::parse_algorithm(!a.algo.empty() ? a.algo : !forced.empty() ? forced : "auto");
  const auto ps = log_points(logs, envs, sys, !a.algo.empty(), notes);
  auto notes_json = [&] { return nlohmann::json(notes); };
  if (a.predict_only) {
    const auto pr = sim::predict_points(sys, ps, algo);
    if (a.json) {
      nlohmann::json j{
          {"system", sys.name}, {"notes", notes_json()}, {"points", points_json(pr)}, {"summary", points_summary(pr)}};
      add_accuracy(j, accuracy);
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    for (const auto& n : notes) fmt::print("{}\n", n);
    const bool own = std::any_of(ps.begin(), ps.end(), [](const auto& p) { return p.algo != sim::Algorithm::Auto; });
    fmt::print("predicted vs measured ({} points, system {}, --algo {}{}):\n", pr.size(), sys.name,
               sim::to_string(algo),
               own ? "; rows whose run forces an algorithm, or whose pick NCCL logged, with that" : "");
    print_points(pr);
    print_summary(points_summary(pr));
    return 0;
  }
  engine::Progress progress("calibrate: model evaluations", 0, engine::progress_wanted(a.quiet, a.progress));
  const auto fit = sim::fit_system(sys, ps, algo, {}, 4000, a.prior_weight, &progress);
  auto fitted_sys = engine::system_from_json(fit.system, "calibrated");
  nlohmann::json out = fit.system;
  out["description"] = fmt::format(
      "{} calibrated by p2v calibrate from {} nccl-tests point(s) (rms |ln predicted/measured| {:.3f} -> "
      "{:.3f})",
      sys.name, ps.size(), fit.rms_log_before, fit.rms_log_after);
  const std::string text = out.dump(2) + "\n";
  if (!a.output.empty()) write_file(a.output, text);
  const auto pr = sim::predict_points(fitted_sys, ps, algo);
  if (a.json) {
    auto knobs = nlohmann::json::array();
    for (const auto& k : fit.knobs)
      knobs.push_back({{"knob", k.name}, {"before", k.before}, {"after", k.after}, {"constrained", k.constrained}});
    nlohmann::json j{{"notes", notes_json()},
                     {"points", points_json(pr)},
                     {"summary", points_summary(pr)},
                     {"knobs", knobs},
                     {"rms_log_before", fit.rms_log_before},
                     {"rms_log_after", fit.rms_log_after},
                     {"evaluations", fit.evaluations},
                     {"prior_weight", a.prior_weight},
                     {"system", out}};
    if (!a.output.empty()) j["output"] = a.output;
    add_accuracy(j, accuracy);
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  for (const auto& n : notes) fmt::print("{}\n", n);
  fmt::print("calibrated {} from {} nccl-tests point(s) ({} model evaluations)\n", sys.name, ps.size(),
             fit.evaluations);
  fmt::print("  {:<44} {:>12} {:>12}\n", "knob", "before", "after");
  for (const auto& k : fit.knobs)
    fmt::print("  {:<44} {:>12.4g} {:>12.4g}  {}\n", k.name, k.before, k.after,
               k.constrained ? "" : "(no point depends on it: unchanged)");
  fmt::print("  rms |ln(predicted/measured)|: {:.3f} before, {:.3f} after\n", fit.rms_log_before, fit.rms_log_after);
  fmt::print("residuals after the fit:\n");
  print_points(pr);
  print_summary(points_summary(pr));
  if (a.output.empty())
    fmt::print("\n{}", text);
  else
    fmt::print("wrote {}\n", a.output);
  return 0;
}

Registrar reg("calibrate", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<CalArgs>();
  add_system_options(sub, a->system, a->preset);
  auto* m = sub.add_option("--measurements", a->measurements,
                           "CSV with a header naming collective,groups,bytes,seconds (e.g. written by p2v run --csv), "
                           "or p2v run --json output (p2v-run/1: its step and baseline timings)");
  auto* l =
      sub.add_option("--nccl-tests", a->logs,
                     "nccl-tests outputs (all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, "
                     "reduce_perf) of the whole system: one group of all its devices; a file of several runs is read "
                     "run by run (runs of other tests, e.g. alltoall_perf, are left out with a note); - reads standard "
                     "input");
  m->excludes(l);
  sub.add_option("--collective", a->collective,
                 "with --nccl-tests: the collective, for logs that do not name their test, or the runs of a file of "
                 "several to read (AllReduce, AllGather, ...)");
  sub.add_flag("--predict-only", a->predict_only, "with --nccl-tests: print predicted vs measured, fit nothing");
  sub.add_option("--nccl-version", a->nccl_version,
                 "with --nccl-tests: the NCCL version whose tuning constants apply (2.9 or later, e.g. 2.26.2; "
                 "default: the version the logs print, else the system's, else 2.30.7)");
  add_nccl_tuner_option(sub, a->nccl_tuner);
  sub.add_option("--prior-weight", a->prior_weight,
                 "with --nccl-tests: weight of the system's own values as a prior, added to the mean squared log "
                 "error as W * sum (ln(knob/start))^2 (default 0.001; 0: plain least squares)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("-o,--output", a->output, "write the calibrated system file here (default: print it)");
  sub.add_option("--algo", a->algo,
                 "NCCL algorithm: ring, tree, nvls, collnet or auto (default: ring for --measurements, auto, NCCL's "
                 "pick, for --nccl-tests)");
  sub.add_flag("--json", a->json, "machine-readable report (the calibrated system is in \"system\")");
  sub.add_flag("--progress", a->progress,
               "with --nccl-tests: progress of the fit on stderr (model evaluations, rate) even when stderr is not a "
               "terminal");
  sub.add_flag("--quiet", a->quiet, "no progress on stderr (default when stderr is not a terminal)");
  return [a] {
    if (a->predict_only && !a->output.empty())
      throw Error("calibrate: -o goes with a fit, not with --predict-only (which writes no system file)");
    // -o checked before a fit that may take minutes, as the write will take it (write_file).
    if (!a->output.empty()) engine::check_writable(a->output);
    if (!a->logs.empty()) return run_nccl_tests(*a);
    if (a->measurements.empty()) throw Error("calibrate: give --measurements CSV or --nccl-tests LOG...");
    if (a->predict_only) throw Error("calibrate: --predict-only goes with --nccl-tests");
    if (!a->nccl_version.empty()) throw Error("calibrate: --nccl-version goes with --nccl-tests");
    if (!a->nccl_tuner.empty()) throw Error("calibrate: --nccl-tuner goes with --nccl-tests");
    if (a->prior_weight != sim::kFitPriorWeight) throw Error("calibrate: --prior-weight goes with --nccl-tests");
    const auto r = run(*a);
    if (a->json)
      fmt::print("{}\n", sim::to_json(r.report).dump(2));
    else
      print_table(*a, r);
    return 0;
  };
});

}  // namespace
}  // namespace p2v::tools
