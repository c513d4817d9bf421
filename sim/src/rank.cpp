#include "p2v/sim/rank.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/text_util.hpp"
#include "p2v/engine/units.hpp"

namespace p2v::sim {

using namespace engine;

using text::split_csv;
using text::trim;

MatrixRanking rank_placement(const Simulator& sim, ProgramSource& programs, const Placement& p,
                             const CostOptions& cost) {
  MatrixRanking mr;
  mr.matrix = p.matrix();
  mr.reduce = p.reduce();
  mr.allreduce_s = sim.time(single_allreduce(p.reduction_groups()), cost);
  const PlacementPrograms pp = programs.programs_for(p.matrix(), p.reduce());
  const auto& r = *pp.result;
  mr.truncated = r.truncated;
  mr.programs.reserve(r.programs.size());
  for (std::size_t i = 0; i < r.programs.size(); ++i) {
    RankedProgram rp;
    rp.name = program_name(r, r.programs[i]);
    rp.synth_index = static_cast<int>(i);
    rp.lowered = pp.lower(r.programs[i]);
    rp.time_s = sim.time(rp.lowered, cost);
    mr.programs.push_back(std::move(rp));
  }
  // Times equal up to a picosecond (floating-point noise between equivalent programs) tie, and
  // ties keep synthesis order: fewer steps first.
  auto key = [](double t) { return std::round(t * 1e12); };
  std::stable_sort(mr.programs.begin(), mr.programs.end(),
                   [&](const RankedProgram& a, const RankedProgram& b) { return key(a.time_s) < key(b.time_s); });
  return mr;
}

namespace {

std::vector<double> ranks_of(const std::vector<double>& v) {
  std::vector<std::size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < idx.size();) {  // average ranks over ties
    std::size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) r[idx[k]] = (static_cast<double>(i + j) / 2.0) + 1.0;
    i = j + 1;
  }
  return r;
}

}  // namespace

std::vector<ProgramMeasurement> parse_program_measurements(const std::string& text, const std::string& origin) {
  std::stringstream ss(text);
  std::string line;
  int ln = 0, pcol = -1, scol = -1, mcol = -1;
  bool header = false;
  std::vector<ProgramMeasurement> out;
  while (std::getline(ss, line)) {
    ++ln;
    const auto t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    auto f = split_csv(t, fmt::format("{}:{}", origin, ln));
    if (!header) {
      header = true;
      for (int i = 0; i < static_cast<int>(f.size()); ++i) {
        const std::string h = text::lower(f[static_cast<std::size_t>(i)]);
        if (h == "program")
          pcol = i;
        else if (h == "seconds" || h == "time_s")
          scol = i;
        else if (h == "matrix")
          mcol = i;
      }
      if (pcol < 0 || scol < 0)
        throw Error(
            fmt::format("{}:{}: the header must name the columns program and seconds (and optionally "
                        "matrix)",
                        origin, ln));
      continue;
    }
    const int need = std::max({pcol, scol, mcol}) + 1;
    if (static_cast<int>(f.size()) < need)
      throw Error(fmt::format("{}:{}: {} columns, expected {} (quote the program: it contains commas)", origin, ln,
                              f.size(), need));
    ProgramMeasurement m;
    m.line = ln;
    m.program = f[static_cast<std::size_t>(pcol)];
    const auto& sv = f[static_cast<std::size_t>(scol)];
    m.seconds = parse_double(sv, fmt::format("{}:{}: seconds", origin, ln), Sign::Positive);
    if (mcol >= 0 && !f[static_cast<std::size_t>(mcol)].empty())
      m.matrix = parse_matrix(f[static_cast<std::size_t>(mcol)]);
    out.push_back(std::move(m));
  }
  if (out.empty()) throw Error(origin + ": no program measurements (header program,seconds[,matrix])");
  return out;
}

std::vector<ProgramMeasurement> load_program_measurements(const std::string& path) {
  return parse_program_measurements(engine::read_text_file(path, "program measurements file"), path);
}

RankAccuracy rank_accuracy(const MatrixRanking& r, const std::vector<ProgramMeasurement>& ms) {
  RankAccuracy acc;
  acc.measured_s.assign(r.programs.size(), -1.0);
  std::map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < r.programs.size(); ++i) by_name.emplace(r.programs[i].name, i);
  for (const auto& m : ms) {
    if (!m.matrix.empty() && m.matrix != r.matrix) continue;
    auto it = by_name.find(m.program);
    if (it == by_name.end()) {
      ++acc.unmatched;
      continue;
    }
    auto& slot = acc.measured_s[it->second];
    slot = slot < 0 ? m.seconds : std::min(slot, m.seconds);  // repeated rows: keep the best
  }
  std::vector<double> pred, meas;
  std::size_t best = 0;
  double best_t = -1;
  for (std::size_t i = 0; i < r.programs.size(); ++i)
    if (acc.measured_s[i] > 0) {
      pred.push_back(r.programs[i].time_s);
      meas.push_back(acc.measured_s[i]);
      acc.mean_abs_rel_error += std::fabs(r.programs[i].time_s - acc.measured_s[i]) / acc.measured_s[i];
      if (best_t < 0 || acc.measured_s[i] < best_t) {
        best_t = acc.measured_s[i];
        best = i;
      }
    }
  acc.measured = static_cast<int>(pred.size());
  if (acc.measured == 0) return acc;
  acc.mean_abs_rel_error /= acc.measured;
  acc.best_measured = r.programs[best].name;
  // Its position in the predicted order (ties broken by synthesis order, as displayed).
  acc.predicted_rank_of_best = static_cast<int>(best) + 1;
  if (acc.measured > 1) {
    auto rp = ranks_of(pred), rm = ranks_of(meas);
    const double n = static_cast<double>(rp.size());
    const double mean = (n + 1) / 2;
    double sxy = 0, sxx = 0, syy = 0;
    for (std::size_t i = 0; i < rp.size(); ++i) {
      sxy += (rp[i] - mean) * (rm[i] - mean);
      sxx += (rp[i] - mean) * (rp[i] - mean);
      syy += (rm[i] - mean) * (rm[i] - mean);
    }
    acc.spearman = (sxx > 0 && syy > 0) ? sxy / std::sqrt(sxx * syy) : 0.0;
  }
  return acc;
}

}  // namespace p2v::sim
