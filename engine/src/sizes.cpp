#include "p2v/engine/sizes.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "p2v/engine/error.hpp"
#include "p2v/engine/units.hpp"

namespace p2v::engine {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t b = 0;
  for (;;) {
    const auto e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return out;
    b = e + 1;
  }
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

double one_size(const std::string& text, const std::string& what, double max, bool whole) {
  const double v = parse_size(text, what, max);
  if (whole && v != std::floor(v)) throw Error(fmt::format("{} '{}': not a whole number of bytes", what, text));
  return v;
}

}  // namespace

std::vector<double> size_range(double min, double max, double factor, double step, const std::string& what,
                               bool whole) {
  if (!(min > 0) || !(max >= min))
    throw Error(fmt::format("{}: the range's end ({:g} bytes) is below its start ({:g} bytes)", what, max, min));
  if (!(step > 0) && !(factor > 1 && std::isfinite(factor)))
    throw Error(fmt::format("{}: the factor must be a number above 1 (got {:g})", what, factor));
  std::vector<double> out;
  for (double v = min; v <= max * (1 + 1e-12);) {
    if (out.size() == kMaxSweepSizes)
      throw Error(
          fmt::format("{}: the range has more than {} sizes; use a larger factor or step", what, kMaxSweepSizes));
    out.push_back(whole ? std::floor(v) : v);
    const double next = step > 0 ? v + step : v * factor;
    if (!(next > v)) break;
    v = next;
  }
  return out;
}

std::vector<double> parse_sizes(const std::string& text, const std::string& what, double max, bool whole) {
  if (trim(text).empty()) throw Error(fmt::format("{}: give a size, a list (1K,1M,1G) or a range (1K:8G:x2)", what));
  std::vector<double> out;
  for (const auto& raw : split(text, ',')) {
    const std::string item = trim(raw);
    if (item.empty()) throw Error(fmt::format("{} '{}': an empty item in the list", what, text));
    const auto parts = split(item, ':');
    if (parts.size() == 1) {
      out.push_back(one_size(item, what, max, whole));
    } else if (parts.size() <= 3) {
      const std::string w = fmt::format("{} '{}'", what, item);
      const double lo = one_size(trim(parts[0]), what, max, whole);
      const double hi = one_size(trim(parts[1]), what, max, whole);
      double factor = 2, step = 0;
      if (parts.size() == 3) {
        const std::string f = trim(parts[2]);
        if (f.size() > 1 && (f[0] == 'x' || f[0] == '*')) {
          std::size_t pos = 0;
          try {
            factor = std::stod(f.substr(1), &pos);
          } catch (...) {
            pos = 0;
          }
          if (pos != f.size() - 1 || !(factor > 1) || !std::isfinite(factor))
            throw Error(fmt::format("{}: factor '{}': expected x followed by a number above 1, e.g. x2", w, f));
        } else if (f.size() > 1 && f[0] == '+') {
          step = one_size(f.substr(1), w + " step", max, whole);
        } else {
          throw Error(fmt::format("{}: '{}' is neither a factor (x2) nor a step (+1M)", w, f));
        }
      }
      if (hi < lo) throw Error(fmt::format("{}: the end is below the start", w));
      for (double v : size_range(lo, hi, factor, step, w, whole)) out.push_back(v);
    } else {
      throw Error(fmt::format("{} '{}': expected MIN:MAX[:xFACTOR|:+STEP]", what, item));
    }
    if (out.size() > kMaxSweepSizes)
      throw Error(fmt::format("{} '{}': more than {} sizes", what, text, kMaxSweepSizes));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<SizeRange> crossover(const std::vector<double>& sizes, const std::vector<std::string>& winners) {
  if (sizes.size() != winners.size())
    throw Error(fmt::format("crossover: {} sizes but {} winners", sizes.size(), winners.size()));
  std::vector<SizeRange> out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (!out.empty() && out.back().winner == winners[i]) {
      out.back().to = sizes[i];
      out.back().last = i;
    } else {
      out.push_back({sizes[i], sizes[i], i, i, winners[i]});
    }
  }
  return out;
}

std::string format_size(double b) {
  static const char* bin[] = {"", "K", "M", "G", "T", "P"};
  static const char* dec[] = {"", "KB", "MB", "GB", "TB", "PB"};
  if (!(b > 0) || b != std::floor(b) || b >= 1e18) return fmt::format("{:g}", b);
  for (int u = 5; u >= 0; --u) {  // exact in a binary unit, below 1024 of it
    const double m = std::pow(1024.0, u);
    if (std::fmod(b, m) == 0 && (b / m < 1024 || u == 5)) return fmt::format("{:.0f}{}", b / m, bin[u]);
  }
  for (int u = 5; u >= 1; --u) {  // exact in a decimal unit
    const double m = std::pow(1000.0, u);
    if (std::fmod(b, m) == 0 && (b / m < 1000 || u == 5)) return fmt::format("{:.0f}{}", b / m, dec[u]);
  }
  int u = 0;
  double v = b;
  while (u < 5 && v >= 1024) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.4g}{}", v, bin[u]);
}

}  // namespace p2v::engine
