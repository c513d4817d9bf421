#include "p2v/engine/units.hpp"

#include <fmt/core.h>

#include <cctype>
#include <cmath>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

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
