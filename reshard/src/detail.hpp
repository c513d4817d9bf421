#pragma once
// Helpers shared by the reshard sources (private).
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "p2v/engine/error.hpp"
#include "p2v/reshard/rules.hpp"

namespace p2v::reshard::detail {

inline bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

inline std::int64_t parse_positive(const std::string& s, const std::string& what) {
  if (s.empty() ||
      !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
      s.size() > 15)
    throw Error(fmt::format("{}: expected a positive integer, got '{}'", what, s));
  const std::int64_t v = std::stoll(s);
  if (v < 1) throw Error(fmt::format("{}: must be at least 1, got {}", what, v));
  return v;
}

inline std::vector<int> prime_factors(int n) {
  std::vector<int> f;
  for (int p = 2; static_cast<std::int64_t>(p) * p <= n; ++p)
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  if (n > 1) f.push_back(n);
  return f;
}

inline std::int64_t axes_product(const std::vector<int>& axes, const Mesh& mesh) {
  std::int64_t k = 1;
  for (int a : axes) k *= mesh.primes[a].size;
  return k;
}

inline std::string dim_name(int i) { return fmt::format("dimension {}", i); }

// Where each prime axis is used: dimension index or -1.
inline std::vector<int> axis_owner(const Type& t, const Mesh& mesh) {
  std::vector<int> owner(mesh.primes.size(), -1);
  for (std::size_t i = 0; i < t.dims.size(); ++i)
    for (int a : t.dims[i].axes) owner[a] = static_cast<int>(i);
  return owner;
}

inline void require_dim(const Type& t, int i, Op op) {
  if (i < 0 || i >= static_cast<int>(t.dims.size()))
    throw Error(
        fmt::format("{}: dimension {} does not exist (the type has {} dimensions)", to_string(op), i, t.dims.size()));
}

// The condition shared by allgather and alltoall: `axes` are the minor-most axes of dimension i.
inline void require_minor_most(const Type& t, int i, const std::vector<int>& axes, const Mesh& mesh, Op op) {
  if (axes.empty()) throw Error(fmt::format("{}({}): no axis given", to_string(op), i));
  const auto& d = t.dims[i].axes;
  for (std::size_t k = 0; k < axes.size(); ++k)
    if (k >= d.size() || d[k] != axes[k])
      throw Error(fmt::format("{}({}): axis {} is not the {} minor-most axis of {} (its axes are {{{}}})",
                              to_string(op), i, mesh.primes[axes[k]].name, k == 0 ? "first" : fmt::format("#{}", k + 1),
                              dim_name(i), axes_to_string(d, mesh)));
}

}  // namespace p2v::reshard::detail
