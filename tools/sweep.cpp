// Size sweeps and progress options of the commands (docs/sweeps.md).
#include "sweep.hpp"

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "p2v/engine/error.hpp"
#include "p2v/engine/progress.hpp"
#include "p2v/engine/units.hpp"

namespace p2v::tools {

void add_sweep_options(CLI::App& sub, SweepArgs& a) {
  sub.add_option("-b,--minbytes", a.min, "nccl-tests style sweep: smallest size (with -e, -f or -i)");
  sub.add_option("-e,--maxbytes", a.max, "nccl-tests style sweep: largest size");
  sub.add_option("-f,--stepfactor", a.factor, "nccl-tests style sweep: multiply the size by this (default 2)");
  sub.add_option("-i,--stepbytes", a.step, "nccl-tests style sweep: add this to the size instead of -f");
}

std::vector<double> sweep_sizes(const std::string& bytes, const SweepArgs& a, double max, bool whole) {
  if (!a.given()) return bytes.empty() ? std::vector<double>{} : engine::parse_sizes(bytes, "--bytes", max, whole);
  if (!bytes.empty()) throw Error("give --bytes or -b/-e/-f/-i, not both");
  if (a.min.empty()) throw Error("-e/-f/-i need -b (the smallest size)");
  if (!a.factor.empty() && !a.step.empty()) throw Error("give -f (a factor) or -i (a step), not both");
  const auto size = [&](const std::string& s, const char* what) {
    const double v = engine::parse_size(s, what, max);
    if (whole && v != std::floor(v)) throw Error(fmt::format("{} '{}': not a whole number of bytes", what, s));
    return v;
  };
  const double lo = size(a.min, "-b");
  const double hi = a.max.empty() ? lo : size(a.max, "-e");
  if (hi < lo) throw Error(fmt::format("-e {}: below -b {}", a.max, a.min));
  double factor = 2, step = 0;
  if (!a.factor.empty()) {
    std::size_t pos = 0;
    try {
      factor = std::stod(a.factor, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos != a.factor.size() || !(factor > 1) || !std::isfinite(factor))
      throw Error(fmt::format("-f '{}': expected a number above 1", a.factor));
  }
  if (!a.step.empty()) step = size(a.step, "-i");
  return engine::size_range(lo, hi, factor, step, "-b/-e", whole);
}

bool ProgressArgs::wanted() const { return engine::progress_wanted(quiet, progress); }

void add_progress_options(CLI::App& sub, ProgressArgs& a) {
  sub.add_flag("--progress", a.progress,
               "progress on stderr (done/total, rate, ETA) even when stderr is not a terminal");
  sub.add_flag("--quiet", a.quiet, "no progress on stderr (default when stderr is not a terminal)");
}

namespace {
std::string speedups(double lo, double hi) {
  return std::fabs(hi - lo) < 0.005 ? fmt::format("{:.2f}x", lo) : fmt::format("{:.2f}-{:.2f}x", lo, hi);
}
}  // namespace

std::string crossover_table(const std::vector<SweepPoint>& points, const std::string& what, const std::string& versus) {
  std::vector<double> sizes;
  std::vector<std::string> winners;
  for (const auto& p : points) {
    sizes.push_back(p.bytes);
    winners.push_back(p.winner);
  }
  const auto ranges = engine::crossover(sizes, winners);
  std::string out = fmt::format("crossover: the best {} per size range ({} change{})\n", what, ranges.size() - 1,
                                ranges.size() == 2 ? "" : "s");
  const std::size_t w = std::max<std::size_t>(13, versus.size() + 3);
  out += fmt::format("  {:>8}  {:>8}  {:>{}}  {}\n", "from", "to", "vs " + versus, w, what);
  for (const auto& r : ranges) {
    double lo = points[r.first].speedup, hi = lo;
    for (std::size_t i = r.first; i <= r.last; ++i) {
      lo = std::min(lo, points[i].speedup);
      hi = std::max(hi, points[i].speedup);
    }
    out += fmt::format("  {:>8}  {:>8}  {:>{}}  {}\n", engine::format_size(r.from), engine::format_size(r.to),
                       speedups(lo, hi), w, r.winner.empty() ? "-" : r.winner);
  }
  return out;
}

nlohmann::json crossover_json(const std::vector<SweepPoint>& points) {
  std::vector<double> sizes;
  std::vector<std::string> winners;
  for (const auto& p : points) {
    sizes.push_back(p.bytes);
    winners.push_back(p.winner);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : engine::crossover(sizes, winners)) {
    double lo = points[r.first].speedup, hi = lo;
    for (std::size_t i = r.first; i <= r.last; ++i) {
      lo = std::min(lo, points[i].speedup);
      hi = std::max(hi, points[i].speedup);
    }
    out.push_back(
        {{"from_bytes", r.from}, {"to_bytes", r.to}, {"best", r.winner}, {"speedup_min", lo}, {"speedup_max", hi}});
  }
  return out;
}

double allreduce_bus_factor(std::int64_t n) { return n <= 1 ? 0.0 : 2.0 * static_cast<double>(n - 1) / n; }

}  // namespace p2v::tools
