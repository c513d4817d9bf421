#include "p2v/engine/units.hpp"

#include <fmt/core.h>

#include <cctype>
#include <cmath>
#include <limits>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

long long parse_integer(const std::string& text, const std::string& what, long long lo, long long hi) {
  const auto bad = [&] {
    return Error(fmt::format("{}: expected an integer from {} to {}, got '{}'", what, lo, hi, text));
  };
  std::size_t i = 0;
  const bool neg = !text.empty() && (text[0] == '-' || text[0] == '+') ? (++i, text[0] == '-') : false;
  if (i == text.size()) throw bad();
  // Accumulate as a negative number: its range holds every long long.
  long long v = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') throw bad();
    if (v < (std::numeric_limits<long long>::min() + (c - '0')) / 10) throw bad();
    v = v * 10 - (c - '0');
  }
  if (!neg) {
    if (v == std::numeric_limits<long long>::min()) throw bad();
    v = -v;
  }
  if (v < lo || v > hi) throw bad();
  return v;
}

double parse_double(const std::string& text, const std::string& what, Sign sign) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    pos = 0;  // no number, or beyond the range of a double
  }
  const bool ok = !text.empty() && pos == text.size() && std::isfinite(v) &&
                  (sign == Sign::Any || (sign == Sign::NonNegative ? v >= 0 : v > 0));
  if (!ok)
    throw Error(fmt::format("{}: '{}' is not a {}number", what, text,
                            sign == Sign::Any        ? ""
                            : sign == Sign::Positive ? "positive "
                                                     : "non-negative "));
  return v;
}

double parse_size(const std::string& text, const std::string& what, double max) {
  const std::string forms = "a size such as 1048576, 1e9, 64K, 1M, 512MiB, 8GB or 8GiB";
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    throw Error(fmt::format("{} '{}': expected {}", what, text, forms));
  }
  std::string unit = text.substr(pos);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front()))) unit.erase(0, 1);
  double m = 0;
  if (unit.empty() || unit == "B")
    m = 1;
  else if (unit == "K" || unit == "k" || unit == "KiB")
    m = 1024.0;
  else if (unit == "M" || unit == "MiB")
    m = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    m = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TiB")
    m = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "KB" || unit == "kB")
    m = 1e3;
  else if (unit == "MB")
    m = 1e6;
  else if (unit == "GB")
    m = 1e9;
  else if (unit == "TB")
    m = 1e12;
  else
    throw Error(
        fmt::format("{} '{}': unknown unit '{}' (K, M, G, T and KiB, MiB, GiB, TiB are powers of 1024; KB, MB, "
                    "GB, TB powers of 1000; B or none: bytes)",
                    what, text, unit));
  v *= m;
  if (!std::isfinite(v) || v <= 0 || v > max)
    throw Error(fmt::format("{} '{}': must be positive and at most {:g} bytes", what, text, max));
  return v;
}

}  // namespace p2v::engine
