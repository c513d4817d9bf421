#include "p2v/sim/fit.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include "p2v/engine/error.hpp"
#include "p2v/engine/progress.hpp"
#include "p2v/sim/nccl_model.hpp"

namespace p2v::sim {

using engine::System;
using json = nlohmann::json;

int system_devices(const System& s) {
  int n = 1;
  for (const auto& l : s.levels) n *= l.cardinality;
  return n;
}

int system_nodes(const System& s) {
  int n = 1;
  for (std::size_t i = 0; i + 1 < s.levels.size(); ++i) n *= s.levels[i].cardinality;
  return n;
}

std::vector<FitPoint> fit_points(const NcclTestsLog& log, const System& s) {
  const int nd = system_devices(s), nn = system_nodes(s);
  if (log.ranks != nd)
    throw Error(fmt::format("{}: the log has {} ranks, system '{}' has {} devices (give --system with as many)",
                            log.origin, log.ranks, s.name, nd));
  if (log.nodes > 0 && log.nodes != nn)
    throw Error(fmt::format("{}: the log's ranks run on {} hosts, system '{}' has {} nodes", log.origin, log.nodes,
                            s.name, nn));
  std::vector<FitPoint> ps;
  // What NCCL ran per size, where the log says (NCCL_DEBUG_SUBSYS=TUNING): from v2.24 NCCL's bytes are
  // the call's count x type size, a rank's input for AllGather and output for ReduceScatter; v2.23's
  // are the call's whole (`total`).
  const bool per_rank =
      log.collective == engine::Collective::AllGather || log.collective == engine::Collective::ReduceScatter;
  for (const auto& r : log.rows) {
    ps.push_back({log.origin, r.line, log.collective, log.ranks, log.nodes > 0 ? log.nodes : nn, r.bytes,
                  r.time_us * 1e-6, std::max(1, log.ngpus)});
    const auto pk = std::find_if(log.picks.begin(), log.picks.end(), [&](const auto& x) {
      const double row_bytes = per_rank && !x.total ? x.bytes * std::max(1, log.ranks) : x.bytes;
      return x.func == engine::to_string(log.collective) && row_bytes == r.bytes;
    });
    if (pk == log.picks.end()) continue;
    const auto a = nccl_algorithm(pk->algo);
    const auto pr = nccl_protocol(pk->proto);
    if (a && pr) std::tie(ps.back().algo, ps.back().proto) = std::pair(*a, *pr);
  }
  return ps;
}

std::optional<Algorithm> nccl_algorithm(const std::string& name) {
  if (name == "TREE") return Algorithm::Tree;
  if (name == "RING") return Algorithm::Ring;
  if (name == "NVLS" || name == "NVLS_TREE") return Algorithm::Nvls;  // as --algo nvls: NVLS tree across nodes
  if (name == "COLLNET_DIRECT" || name == "COLLNET_CHAIN") return Algorithm::CollNet;
  return std::nullopt;  // PAT, or a name of another version
}

std::optional<Protocol> nccl_protocol(const std::string& name) {
  if (name == "LL") return Protocol::LL;
  if (name == "LL128") return Protocol::LL128;
  if (name == "SIMPLE") return Protocol::Simple;
  return std::nullopt;
}

namespace {

engine::LoweredStep whole_group(engine::Collective c, int ranks) {
  engine::LoweredStep st;
  st.collective = c;
  std::vector<int> g(static_cast<std::size_t>(ranks));
  std::iota(g.begin(), g.end(), 0);
  st.groups = {g};
  return st;
}

// A knob's value in the system JSON, or `dflt` when absent.
double value_at(const json& j, const std::string& ptr, double dflt) {
  const json::json_pointer p(ptr);
  if (!j.contains(p)) return dflt;
  const auto& v = j.at(p);
  return v.is_number() ? v.get<double>() : dflt;
}

}  // namespace

std::vector<PointPrediction> predict_points(const System& s, const std::vector<FitPoint>& ps, Algorithm algo) {
  std::map<std::string, Simulator> sims;  // by the point's environment (its JSON text; "" the system's own)
  auto sim_of = [&](const FitPoint& p) -> Simulator& {
    const bool own = p.nccl_env.is_null() || p.nccl_env.empty();
    const std::string key = own ? std::string() : p.nccl_env.dump();
    auto it = sims.find(key);
    if (it == sims.end()) {
      System v = s;
      if (!own) {
        if (!v.nccl.is_object()) v.nccl = json::object();
        for (const auto& [k, val] : p.nccl_env.items()) v.nccl[k] = val;
      }
      it = sims.emplace(key, Simulator(v)).first;
    }
    return it->second;
  };
  std::vector<PointPrediction> out;
  out.reserve(ps.size());
  for (const auto& p : ps) {
    auto& sim = sim_of(p);
    const auto c = sim.collective(whole_group(p.collective, p.ranks), p.bytes,
                                  p.algo != Algorithm::Auto ? p.algo : algo, false, p.proto);
    out.push_back({p, c.time_s + group_launch_s(sim.nccl(), p.gpus_per_thread), to_string(c.algo), to_string(c.proto)});
  }
  return out;
}

std::vector<FitKnob> system_knobs(const System& s) {
  std::vector<FitKnob> ks;
  const json j = engine::system_json(s);
  if (!s.nccl.is_null()) {
    const auto np = nccl_params(s);
    ks.push_back({"/nccl/launch_us", np.effective_launch_us(), 0, false, kLaunchPriorScale, true});
    ks.push_back({"/nccl/fill_stage", np.effective_fill_stage(), 0, false, 1.0, true});
    for (const auto& l : s.levels) {
      if (l.cardinality <= 1 || !l.interconnect) continue;
      const auto* lp = np.level(l.name);
      const std::string base = "/nccl/levels/" + l.name;
      ks.push_back({base + "/bus_bw_GBps", lp && lp->bus_bw_gbps > 0 ? lp->bus_bw_gbps : l.interconnect->bandwidth_gbps,
                    0, false, 1.0, true});
      // Per protocol a factor on the level's hop latencies (NCCL's hwLat of every algorithm, or the
      // level's hop_latency_us): fitting a factor keeps NCCL's per-algorithm table, so the fit starts
      // from exactly the system's predictions. (An absolute latency as the knob replaced the table by
      // one number for every algorithm: the tree's, NVLS's and the ring's network hops alike.)
      for (int pr = 0; pr < kNumProtocols; ++pr)
        ks.push_back({base + "/hop_latency_scale/" + kProtocolKeys[pr],
                      lp ? lp->hop_latency_scale[static_cast<std::size_t>(pr)] : 1.0, 0, false, 1.0, true});
    }
  }
  {
    for (std::size_t i = 0; i < s.levels.size(); ++i) {
      const auto& l = s.levels[i];
      if (l.cardinality <= 1 || !l.interconnect) continue;
      const std::string base = fmt::format("/levels/{}/interconnect", i);
      ks.push_back({base + "/bandwidth_GBps", l.interconnect->bandwidth_gbps, 0, false});
      // NCCL adds a network level's own latency to every network hop (graph->latencyInter, e.g. the
      // EFA plugin's 75 us): with an "nccl" section it is fitted with that model's knobs, where given.
      const bool latency_inter =
          !s.nccl.is_null() && l.interconnect->latency_us > 0 && hw_class_of(l.interconnect->kind) == HwClass::Net;
      ks.push_back({base + "/latency_us", std::max(l.interconnect->latency_us, 1e-3), 0, false, 1.0, latency_inter});
    }
    ks.push_back(
        {"/topology/step_overhead_us", std::max(value_at(j, "/topology/step_overhead_us", 0.0), 1.0), 0, false});
  }
  for (auto& k : ks) k.after = k.before;
  return ks;
}

namespace {

// The points as the fit prices them: points predicted alike (the same call and conditions: repeated
// runs of one setting, a log given again) make one, measured at their geometric mean and weighted by
// their number. The sum of squared log errors is the same up to a constant, sum (ln m_i - mean)^2,
// so the optimum is too; `spread` is that constant (the rms both ways includes it).
struct MergedPoints {
  std::vector<FitPoint> points;
  std::vector<double> weight;
  double spread = 0;
  double total = 0;  // points before merging
};

MergedPoints merge_points(const std::vector<FitPoint>& ps) {
  MergedPoints m;
  std::map<std::string, std::size_t> at;  // the point's call and conditions -> index
  std::vector<std::vector<double>> logs;
  for (const auto& p : ps) {
    const auto key =
        fmt::format("{}|{}|{}|{:.17g}|{}|{}|{}|{}", static_cast<int>(p.collective), p.ranks, p.nodes, p.bytes,
                    p.gpus_per_thread, p.nccl_env.dump(), static_cast<int>(p.algo), static_cast<int>(p.proto));
    const auto [it, fresh] = at.try_emplace(key, m.points.size());
    if (fresh) {
      m.points.push_back(p);
      logs.emplace_back();
    }
    logs[it->second].push_back(std::log(p.measured_s));
  }
  for (std::size_t i = 0; i < m.points.size(); ++i) {
    double mean = 0;
    for (const double l : logs[i]) mean += l;
    mean /= static_cast<double>(logs[i].size());
    for (const double l : logs[i]) m.spread += (l - mean) * (l - mean);
    m.points[i].measured_s = std::exp(mean);
    m.weight.push_back(static_cast<double>(logs[i].size()));
  }
  m.total = static_cast<double>(ps.size());
  return m;
}

double merged_log_error(const std::vector<PointPrediction>& pr, const MergedPoints& m) {
  double s = m.spread;
  for (std::size_t i = 0; i < pr.size(); ++i) {
    const double l = std::log(pr[i].predicted_s / pr[i].point.measured_s);
    s += m.weight[i] * l * l;
  }
  return std::sqrt(s / m.total);
}

}  // namespace

SystemFit fit_system(const System& s, const std::vector<FitPoint>& ps, Algorithm algo,
                     const std::vector<std::string>& only, int max_evaluations, double prior_weight,
                     engine::Progress* progress) {
  if (ps.empty()) throw Error("calibrate: no measured points to fit");
  SystemFit fit;
  fit.knobs = system_knobs(s);
  for (const auto& o : only)
    if (std::none_of(fit.knobs.begin(), fit.knobs.end(), [&](const FitKnob& k) { return k.name == o; }))
      throw Error(fmt::format("calibrate: '{}' is not a knob of system '{}'", o, s.name));
  const MergedPoints merged = merge_points(ps);
  fit.points_fitted = static_cast<int>(merged.points.size());
  fit.rms_log_before = merged_log_error(predict_points(s, merged.points, algo), merged);
  // Written in the current names (a deprecated "bus_bw_gbps" becomes "bus_bw_GBps"), the knobs' names.
  const json base = engine::system_json(s);
  // Only the knob being probed or fitted is written: the others keep the system's own values (a
  // latency of 0 stays 0, though its knob starts from a floor when it is fitted).
  std::vector<char> written(fit.knobs.size(), 0);
  auto with = [&](const std::vector<double>& x) {
    json j = base;
    for (std::size_t k = 0; k < fit.knobs.size(); ++k)
      if (written[k]) j[json::json_pointer(fit.knobs[k].name)] = x[k];
    return j;
  };
  auto objective = [&](const std::vector<double>& x) {
    ++fit.evaluations;
    if (progress) progress->add();
    try {
      const auto sys = engine::system_from_json(with(x), "fit");
      return merged_log_error(predict_points(sys, merged.points, algo), merged);
    } catch (const p2v::Error&) {
      return 1e30;  // a value the model refuses (e.g. a bandwidth of 0): never the optimum
    }
  };
  std::vector<double> x0;
  for (const auto& k : fit.knobs) x0.push_back(k.before);
  const double f0 = objective(x0);
  // Which knobs matter: x2 and /2 both leave every prediction unchanged -> unconstrained.
  std::vector<std::size_t> free;
  for (std::size_t k = 0; k < x0.size(); ++k) {
    if (!only.empty() && std::find(only.begin(), only.end(), fit.knobs[k].name) == only.end()) continue;
    auto up = x0, dn = x0;
    up[k] *= 2;
    dn[k] /= 2;
    written[k] = 1;
    if (std::fabs(objective(up) - f0) > 1e-12 * (1 + f0) || std::fabs(objective(dn) - f0) > 1e-12 * (1 + f0)) {
      free.push_back(k);
      fit.knobs[k].constrained = true;
    } else {
      written[k] = 0;
    }
  }
  // With an NCCL section the knobs the NCCL model reads are fitted (FitKnob::nccl); the interconnects'
  // others only when no "nccl" knob changes any prediction (a model not reading the section).
  const bool nccl_used =
      std::any_of(free.begin(), free.end(), [&](std::size_t k) { return fit.knobs[k].name.rfind("/nccl/", 0) == 0; });
  if (nccl_used) {
    std::vector<std::size_t> keep;
    for (const auto k : free)
      if (fit.knobs[k].nccl)
        keep.push_back(k);
      else
        fit.knobs[k].constrained = false;
    free = keep;
  }
  std::fill(written.begin(), written.end(), 0);
  for (const auto k : free) written[k] = 1;
  // Nelder-Mead over u = ln(x) of the free knobs, restarted from the best vertex, on the data's
  // mean squared log error plus the prior's pull towards the starting values (fit.hpp).
  const std::size_t n = free.size();
  std::vector<double> u_prior(n), w_prior(n);
  for (std::size_t i = 0; i < n; ++i) {
    u_prior[i] = std::log(x0[free[i]]);
    w_prior[i] = fit.knobs[free[i]].prior_scale;
  }
  auto penalised = [&](const std::vector<double>& u, const std::vector<double>& x) {
    const double e = objective(x);
    double p = 0;
    for (std::size_t i = 0; i < n; ++i) p += w_prior[i] * (u[i] - u_prior[i]) * (u[i] - u_prior[i]);
    return e * e + prior_weight * p;
  };
  std::vector<double> best = x0;
  double fbest = f0 * f0;
  auto to_x = [&](const std::vector<double>& u) {
    auto x = x0;
    for (std::size_t i = 0; i < n; ++i) x[free[i]] = std::exp(std::clamp(u[i], -30.0, 30.0));
    return x;
  };
  if (n > 0) {
    std::vector<double> u0(n);
    for (std::size_t i = 0; i < n; ++i) u0[i] = std::log(x0[free[i]]);
    for (int restart = 0; restart < 4 && fit.evaluations < max_evaluations; ++restart) {
      std::vector<std::vector<double>> v(n + 1, u0);
      const double step = restart % 2 == 0 ? (restart == 0 ? 1.0 : 0.3) : -0.7;  // both directions
      for (std::size_t i = 0; i < n; ++i) v[i + 1][i] += step;
      std::vector<double> f(n + 1);
      for (std::size_t i = 0; i <= n; ++i) f[i] = penalised(v[i], to_x(v[i]));
      for (int it = 0; it < 2000 && fit.evaluations < max_evaluations; ++it) {
        std::vector<std::size_t> order(n + 1);
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return f[a] < f[b]; });
        const auto lo = order.front(), hi = order.back(), second = order[n - 1];
        double diameter = 0;
        for (std::size_t i = 0; i <= n; ++i)
          for (std::size_t d = 0; d < n; ++d) diameter = std::max(diameter, std::fabs(v[i][d] - v[lo][d]));
        // Flat: stop only once the simplex is small too (a step into a flat region is no optimum).
        if (std::fabs(f[hi] - f[lo]) < 1e-10 * (1 + std::fabs(f[lo])) && diameter < 1e-3) break;
        std::vector<double> c(n, 0.0);
        for (std::size_t i = 0; i <= n; ++i)
          if (i != hi)
            for (std::size_t d = 0; d < n; ++d) c[d] += v[i][d] / static_cast<double>(n);
        auto along = [&](double t) {
          std::vector<double> p(n);
          for (std::size_t d = 0; d < n; ++d) p[d] = c[d] + t * (v[hi][d] - c[d]);
          return p;
        };
        const auto r = along(-1.0);
        const double fr = penalised(r, to_x(r));
        if (fr < f[lo]) {
          const auto e = along(-2.0);
          const double fe = penalised(e, to_x(e));
          if (fe < fr) {
            v[hi] = e;
            f[hi] = fe;
          } else {
            v[hi] = r;
            f[hi] = fr;
          }
        } else if (fr < f[second]) {
          v[hi] = r;
          f[hi] = fr;
        } else {
          const auto k = fr < f[hi] ? along(-0.5) : along(0.5);
          const double fk = penalised(k, to_x(k));
          if (fk < std::min(fr, f[hi])) {
            v[hi] = k;
            f[hi] = fk;
          } else {
            for (std::size_t i = 0; i <= n; ++i) {
              if (i == lo) continue;
              for (std::size_t d = 0; d < n; ++d) v[i][d] = v[lo][d] + 0.5 * (v[i][d] - v[lo][d]);
              f[i] = penalised(v[i], to_x(v[i]));
            }
          }
        }
      }
      const auto lo = static_cast<std::size_t>(std::min_element(f.begin(), f.end()) - f.begin());
      if (f[lo] < fbest) {
        fbest = f[lo];
        best = to_x(v[lo]);
      }
      u0 = v[lo];
    }
  }
  // Keep the starting point when nothing improved on it (e.g. the original system without the
  // knobs written out, which can differ from x0 only by NCCL defaults made explicit).
  for (std::size_t k = 0; k < fit.knobs.size(); ++k) fit.knobs[k].after = best[k];
  json out = base;
  for (const auto& k : fit.knobs)
    if (k.constrained) out[json::json_pointer(k.name)] = k.after;
  fit.system = out;
  fit.rms_log_after =
      merged_log_error(predict_points(engine::system_from_json(out, "fit"), merged.points, algo), merged);
  if (progress) progress->finish();
  return fit;
}

}  // namespace p2v::sim
