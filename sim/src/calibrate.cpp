#include "p2v/sim/calibrate.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/run_format.hpp"
#include "p2v/engine/text_util.hpp"
#include "p2v/engine/units.hpp"

namespace p2v::sim {

using namespace engine;

using text::lower;
using text::split_csv;
using text::trim;

namespace {

long parse_int(const std::string& s, const std::string& where) {
  std::size_t pos = 0;
  long v = -1;
  try {
    v = std::stol(s, &pos);
  } catch (...) {
    pos = 0;
  }
  if (s.empty() || pos != s.size()) throw Error(where + ": '" + s + "' is not a device number");
  return v;
}

Groups parse_groups(const std::string& text, const std::string& where, int nd) {
  Groups gs;
  std::string t = text;
  for (auto& c : t)
    if (c == ';') c = '|';
  std::stringstream ss(t);
  std::string g;
  std::vector<int> seen(static_cast<std::size_t>(nd), 0);
  while (std::getline(ss, g, '|')) {
    std::vector<int> grp;
    std::string tok;
    std::stringstream gs2(g);
    while (gs2 >> tok) {
      for (auto& c : tok)
        if (c == ',') c = ' ';
      std::stringstream ts(tok);
      std::string item;
      while (ts >> item) {
        auto dash = item.find('-', 1);
        long lo, hi;
        if (dash != std::string::npos) {
          lo = parse_int(item.substr(0, dash), where);
          hi = parse_int(item.substr(dash + 1), where);
        } else {
          lo = hi = parse_int(item, where);
        }
        if (lo < 0 || hi >= nd || lo > hi)
          throw Error(fmt::format("{}: device range '{}' is outside 0..{}", where, item, nd - 1));
        for (long d = lo; d <= hi; ++d) {
          if (seen[static_cast<std::size_t>(d)]++) throw Error(fmt::format("{}: device {} appears twice", where, d));
          grp.push_back(static_cast<int>(d));
        }
      }
    }
    if (grp.empty()) continue;
    std::sort(grp.begin(), grp.end());
    gs.push_back(std::move(grp));
  }
  if (gs.empty()) throw Error(where + ": no device groups");
  std::sort(gs.begin(), gs.end());
  return gs;
}

// Solves A x = b (n×n, dense) by Gaussian elimination with partial pivoting.
std::vector<double> solve(std::vector<std::vector<double>> A, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::fabs(A[r][c]) > std::fabs(A[piv][c])) piv = r;
    std::swap(A[c], A[piv]);
    std::swap(b[c], b[piv]);
    if (std::fabs(A[c][c]) < 1e-300) continue;
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = A[r][c] / A[c][c];
      if (f == 0) continue;
      for (std::size_t k = c; k < n; ++k) A[r][k] -= f * A[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n, 1.0);
  for (std::size_t i = 0; i < n; ++i)
    if (std::fabs(A[i][i]) >= 1e-300) x[i] = b[i] / A[i][i];
  return x;
}

}  // namespace

namespace {

// `p2v run --json` output (p2v-run/1, engine/run_format.hpp): every step and baseline timing of
// the programs that passed, at its median, as the CSV's rows would hold it.
std::vector<Measurement> from_run_file(const std::string& text, const std::string& origin, int num_devices) {
  const auto f = engine::parse_run_file(text, origin);
  if (f.ranks != num_devices)
    throw Error(
        fmt::format("{}: measured on {} ranks, but the system has {} devices: these measurements do not fit "
                    "it; calibrate the system they were taken on (a system of {} devices)",
                    origin, f.ranks, num_devices, f.ranks));
  std::vector<Measurement> ms;
  for (std::size_t i = 0; i < f.programs.size(); ++i) {
    const auto& p = f.programs[i];
    std::vector<std::pair<std::string, const engine::RunTiming*>> ts;
    for (std::size_t s = 0; s < p.steps.size(); ++s)
      ts.emplace_back(fmt::format("programs[{}].steps[{}]", i, s), &p.steps[s]);
    if (p.baseline) ts.emplace_back(fmt::format("programs[{}].baseline", i), &*p.baseline);
    for (const auto& [path, t] : ts) {
      const std::string where = origin + ": " + path;
      if (t->group_list.empty())
        throw Error(where + ": no group_list (written by an earlier p2v run); rerun, or give its --csv file");
      Measurement m;
      m.line = static_cast<int>(ms.size()) + 1;
      m.step.collective = parse_collective(t->what);
      m.groups_text = t->group_list;
      m.step.groups = parse_groups(m.groups_text, where, num_devices);
      m.bytes = static_cast<double>(t->bytes);
      m.seconds = t->median_s;
      if (!(m.bytes > 0) || !(m.seconds > 0)) throw Error(where + ": bytes and median_s must be positive");
      ms.push_back(std::move(m));
    }
  }
  if (ms.empty()) throw Error(origin + ": no measured steps (no program of the run passed its check)");
  return ms;
}

}  // namespace

std::vector<Measurement> parse_measurements(const std::string& text, const std::string& origin, int num_devices) {
  if (const auto first = text.find_first_not_of(" \t\r\n"); first != std::string::npos && text[first] == '{')
    return from_run_file(text, origin, num_devices);
  std::vector<Measurement> ms;
  std::stringstream ss(text);
  std::string line;
  int ln = 0;
  int ccol = 0, gcol = 1, bcol = 2, scol = 3;
  int rcol = -1;  // "ranks" (p2v run --csv writes it): the run's size, which must be the system's
  bool header_seen = false;
  while (std::getline(ss, line)) {
    ++ln;
    const auto t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    auto f = split_csv(t, fmt::format("{}:{}", origin, ln));
    if (!header_seen) {
      header_seen = true;
      if (lower(f[0]) == "collective" || std::any_of(f.begin(), f.end(), [](const std::string& x) {
            return lower(x) == "seconds" || lower(x) == "bytes";
          })) {
        ccol = gcol = bcol = scol = -1;
        for (int i = 0; i < static_cast<int>(f.size()); ++i) {
          const auto h = lower(f[static_cast<std::size_t>(i)]);
          if (h == "collective")
            ccol = i;
          else if (h == "groups" || h == "group")
            gcol = i;
          else if (h == "bytes")
            bcol = i;
          else if (h == "seconds" || h == "time_s")
            scol = i;
          else if (h == "ranks")
            rcol = i;
        }
        for (auto [c, nm] : {std::pair{ccol, "collective"}, {gcol, "groups"}, {bcol, "bytes"}, {scol, "seconds"}})
          if (c < 0)
            throw Error(
                fmt::format("{}:{}: header has no column '{}' (need collective,groups,bytes,seconds)", origin, ln, nm));
        continue;
      }
    }
    const auto where = fmt::format("{}:{}", origin, ln);
    const int need = std::max({ccol, gcol, bcol, scol}) + 1;
    if (static_cast<int>(f.size()) < need)
      throw Error(
          fmt::format("{}: {} columns, expected at least {} (collective,groups,bytes,seconds)", where, f.size(), need));
    Measurement m;
    m.line = ln;
    m.step.collective = parse_collective(f[static_cast<std::size_t>(ccol)]);
    m.groups_text = f[static_cast<std::size_t>(gcol)];
    m.step.groups = parse_groups(m.groups_text, where, num_devices);
    m.bytes = engine::parse_double(f[static_cast<std::size_t>(bcol)], where + " bytes", engine::Sign::Positive);
    m.seconds = engine::parse_double(f[static_cast<std::size_t>(scol)], where + " seconds", engine::Sign::Positive);
    if (rcol >= 0 && static_cast<std::size_t>(rcol) < f.size() && !f[static_cast<std::size_t>(rcol)].empty()) {
      const auto r = engine::parse_double(f[static_cast<std::size_t>(rcol)], where + " ranks", engine::Sign::Positive);
      if (r != num_devices)
        throw Error(fmt::format(
            "{}: measured on {} ranks, but the system has {} devices: these measurements do not fit it; calibrate "
            "the system they were taken on (a system of {} devices)",
            where, r, num_devices, r));
    }
    ms.push_back(std::move(m));
  }
  if (ms.empty()) throw Error(origin + ": no measurements (expected rows collective,groups,bytes,seconds)");
  return ms;
}

std::vector<Measurement> load_measurements(const std::string& path, int num_devices) {
  return parse_measurements(engine::read_text_file(path, "measurements file"), path, num_devices);
}

std::vector<Prediction> predict(const Simulator& sim, const std::vector<Measurement>& ms, Algorithm algo) {
  std::vector<Prediction> ps;
  for (const auto& m : ms) {
    Prediction p;
    p.measured_s = m.seconds;
    p.predicted_s = sim.collective(m.step, m.bytes, algo).time_s;
    p.rel_error = (p.predicted_s - p.measured_s) / p.measured_s;
    ps.push_back(p);
  }
  return ps;
}

double mean_abs_rel_error(const std::vector<Prediction>& ps) {
  if (ps.empty()) return 0.0;
  double s = 0;
  for (const auto& p : ps) s += std::fabs(p.rel_error);
  return s / static_cast<double>(ps.size());
}

Calibration calibrate(Simulator& sim, const std::vector<Measurement>& ms, Algorithm algo) {
  Calibration cal;
  auto& topo = sim.topology();
  const auto classes = topo.classes();
  const std::size_t C = classes.size();
  // Parameters: alpha_c (s per path), beta_c (s per byte); unknowns are scale factors
  // relative to the starting point, which keeps the system well conditioned.
  std::vector<double> alpha0(C), beta0(C);
  for (std::size_t c = 0; c < C; ++c) {
    auto [bw, lat] = topo.class_params(classes[c]);
    alpha0[c] = std::max(lat, 1e-7);
    beta0[c] = 1.0 / bw;
    cal.classes.push_back({classes[c], bw, bw, lat, lat, 0, 0});
  }
  cal.error_before = mean_abs_rel_error(predict(sim, ms, algo));
  std::vector<double> alpha = alpha0, beta = beta0;
  // The per-step overhead is fitted additively, in units of o_ref.
  const double o_ref = 1e-5;
  double overhead = topo.step_overhead();
  cal.overhead_before = overhead;
  auto apply = [&](Topology& t, const std::vector<double>& al, const std::vector<double>& be) {
    for (std::size_t c = 0; c < C; ++c) t.set_class(classes[c], 1.0 / be[c], al[c]);
  };
  apply(topo, alpha, beta);
  const double lambda = 1e-3;  // ridge towards the current values for weakly constrained classes
  double best_err = mean_abs_rel_error(predict(sim, ms, algo));
  auto best_alpha = alpha, best_beta = beta;
  double best_overhead = overhead;
  for (int it = 0; it < 20; ++it) {
    ++cal.iterations;
    // Linearize: t_i = sum_c a_ic alpha_c + b_ic beta_c exactly (the model is piecewise linear and
    // homogeneous in (alpha, beta)); the derivatives come from small perturbations.
    const std::size_t N = ms.size(), P = 2 * C + 1;  // last: the step overhead
    std::vector<std::vector<double>> J(N, std::vector<double>(P, 0.0));
    std::vector<double> t0(N);
    for (std::size_t i = 0; i < N; ++i) t0[i] = sim.collective(ms[i].step, ms[i].bytes, algo).time_s;
    for (std::size_t i = 0; i < N; ++i)
      J[i][P - 1] = sim.collective(ms[i].step, ms[i].bytes, algo).num_groups > 0 ? o_ref : 0.0;
    for (std::size_t k = 0; k + 1 < P; ++k) {
      Simulator s2 = sim;
      auto al = alpha, be = beta;
      const double eps = 1e-4;
      if (k < C)
        al[k] *= 1 + eps;
      else
        be[k - C] *= 1 + eps;
      apply(s2.topology(), al, be);
      for (std::size_t i = 0; i < N; ++i) {
        const double t1 = s2.collective(ms[i].step, ms[i].bytes, algo).time_s;
        // d t / d(scale_k) where param = scale * current
        J[i][k] = (t1 - t0[i]) / eps;
      }
    }
    // Least squares on relative residuals: sum_i ((J_i · s) / m_i - 1)^2 + lambda |s - 1|^2.
    std::vector<std::vector<double>> A(P, std::vector<double>(P, 0.0));
    std::vector<double> b(P, 0.0);
    for (std::size_t i = 0; i < N; ++i) {
      const double w = 1.0 / ms[i].seconds;
      for (std::size_t k = 0; k < P; ++k) {
        const double jk = J[i][k] * w;
        if (jk == 0) continue;
        if (k < C)
          cal.classes[k].alpha_weight += jk;
        else if (k < 2 * C)
          cal.classes[k - C].beta_weight += jk;
        b[k] += jk * 1.0;
        for (std::size_t l = 0; l < P; ++l) A[k][l] += jk * J[i][l] * w;
      }
    }
    for (std::size_t k = 0; k + 1 < P; ++k) {
      A[k][k] += lambda;
      b[k] += lambda;
    }
    // Overhead unknown u = overhead / o_ref, ridge towards its current value.
    A[P - 1][P - 1] += lambda;
    b[P - 1] += lambda * overhead / o_ref;
    auto s = solve(A, b);
    double change = 0;
    for (std::size_t c = 0; c < C; ++c) {
      const double sa = std::clamp(s[c], 1e-3, 1e3), sb = std::clamp(s[C + c], 1e-3, 1e3);
      change = std::max({change, std::fabs(sa - 1), std::fabs(sb - 1)});
      alpha[c] *= sa;
      beta[c] *= sb;
    }
    const double new_overhead = std::max(0.0, s[P - 1] * o_ref);
    change = std::max(change, std::fabs(new_overhead - overhead) / o_ref);
    overhead = new_overhead;
    apply(topo, alpha, beta);
    topo.set_step_overhead(overhead);
    const double err = mean_abs_rel_error(predict(sim, ms, algo));
    if (err < best_err) {
      best_err = err;
      best_alpha = alpha;
      best_beta = beta;
      best_overhead = overhead;
    }
    if (change < 1e-6) break;
  }
  apply(topo, best_alpha, best_beta);
  topo.set_step_overhead(best_overhead);
  cal.overhead_after = best_overhead;
  for (std::size_t c = 0; c < C; ++c) {
    auto [bw, lat] = topo.class_params(classes[c]);
    cal.classes[c].bandwidth_after = bw;
    cal.classes[c].latency_after = lat;
    if (cal.classes[c].alpha_weight == 0) cal.classes[c].latency_after = cal.classes[c].latency_before;
  }
  // Unconstrained classes: restore the original latency exactly (alpha0 was floored).
  for (std::size_t c = 0; c < C; ++c)
    if (cal.classes[c].alpha_weight == 0 && cal.classes[c].beta_weight == 0)
      topo.set_class(classes[c], cal.classes[c].bandwidth_before, cal.classes[c].latency_before);
  cal.error_after = mean_abs_rel_error(predict(sim, ms, algo));
  return cal;
}

nlohmann::json calibrated_system_json(const System& s, const Topology& t, const std::string& note) {
  using json = nlohmann::json;
  json j = engine::system_json(s);
  const auto classes = t.classes();
  auto has = [&](const std::string& c) { return std::find(classes.begin(), classes.end(), c) != classes.end(); };
  for (auto& l : j["levels"]) {
    const auto name = l["name"].get<std::string>();
    if (l.contains("interconnect") && has(name)) {
      auto [bw, lat] = t.class_params(name);
      l["interconnect"]["bandwidth_GBps"] = bw / 1e9;
      l["interconnect"]["latency_us"] = lat * 1e6;
    }
  }
  if (j.contains("topology") && j["topology"].contains("links"))
    for (auto& l : j["topology"]["links"]) {
      const auto kind = l.value("kind", std::string("link"));
      if (!has(kind)) continue;
      auto [bw, lat] = t.class_params(kind);
      l.erase("bandwidth_gbps");  // the deprecated name, if the file had it
      l["bandwidth_GBps"] = bw / 1e9;
      l["latency_us"] = lat * 1e6;
    }
  if (t.step_overhead() > 0 || (j.contains("topology") && j["topology"].contains("step_overhead_us"))) {
    if (!j.contains("topology")) j["topology"] = json::object();
    j["topology"]["step_overhead_us"] = t.step_overhead() * 1e6;
  }
  j["description"] = note;
  return j;
}

CalibrationReport calibration_report(const Calibration& cal, std::size_t measurements, nlohmann::json system,
                                     const std::string& output) {
  CalibrationReport r;
  r.measurements = static_cast<std::int64_t>(measurements);
  r.error_before = cal.error_before;
  r.error_after = cal.error_after;
  r.iterations = cal.iterations;
  r.step_overhead_us_before = cal.overhead_before * 1e6;
  r.step_overhead_us_after = cal.overhead_after * 1e6;
  for (const auto& c : cal.classes)
    r.classes.push_back({c.cls, c.bandwidth_before / 1e9, c.bandwidth_after / 1e9, c.latency_before * 1e6,
                         c.latency_after * 1e6, c.alpha_weight > 0 || c.beta_weight > 0});
  r.system = std::move(system);
  if (!output.empty()) r.output = output;
  return r;
}

nlohmann::json to_json(const CalibrationReport& r) {
  nlohmann::json j{{"format", fmt::format("{}/{}", kCalibrateFormat, r.version)},
                   {"measurements", r.measurements},
                   {"error_before", r.error_before},
                   {"error_after", r.error_after},
                   {"iterations", r.iterations},
                   {"step_overhead_us_before", r.step_overhead_us_before},
                   {"step_overhead_us_after", r.step_overhead_us_after},
                   {"classes", nlohmann::json::array()},
                   {"system", r.system}};
  for (const auto& c : r.classes)
    j["classes"].push_back({{"class", c.cls},
                            {"bandwidth_GBps_before", c.bandwidth_gbps_before},
                            {"bandwidth_GBps_after", c.bandwidth_gbps_after},
                            {"latency_us_before", c.latency_us_before},
                            {"latency_us_after", c.latency_us_after},
                            {"constrained", c.constrained}});
  if (r.output) j["output"] = *r.output;
  return j;
}

CalibrationReport calibration_report_from_json(const nlohmann::json& j, const std::string& origin) {
  using engine::json_read::At;
  const At root(j, origin, "");
  engine::json_read::Object o(root);
  engine::json_read::check_format(o, kCalibrateFormat, kCalibrateVersion);
  CalibrationReport r;
  r.measurements = o["measurements"].integer();
  r.error_before = o["error_before"].number();
  r.error_after = o["error_after"].number();
  r.iterations = o["iterations"].int32();
  r.step_overhead_us_before = o["step_overhead_us_before"].number();
  r.step_overhead_us_after = o["step_overhead_us_after"].number();
  o["classes"].each([&](const At& at) {
    engine::json_read::Object c(at);
    // "bandwidth_gbps_*": the deprecated names of the same GB/s fields (docs/formats.md).
    const double before = c.renamed("bandwidth_GBps_before", "bandwidth_gbps_before").number();
    const double after = c.renamed("bandwidth_GBps_after", "bandwidth_gbps_after").number();
    r.classes.push_back({c["class"].string(), before, after, c["latency_us_before"].number(),
                         c["latency_us_after"].number(), c["constrained"].boolean()});
    c.finish();
  });
  const At system = o["system"];
  system.expect(system.raw().is_object(), "a system object");
  r.system = system.raw();
  system_from_json(r.system, origin + ": system");  // a system file, by the engine's reader
  if (const auto out = o.optional("output")) r.output = out->string();
  o.finish();
  return r;
}

CalibrationReport parse_calibration_report(const std::string& text, const std::string& origin) {
  return calibration_report_from_json(parse_json_object(text, origin), origin);
}

}  // namespace p2v::sim
