#include "p2v/engine/state.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "p2v/engine/error.hpp"
#include "state_kernel.hpp"

namespace p2v::engine {

StateSet::StateSet(int k) : k_(k), w_((k + 63) / 64), stride_(static_cast<std::size_t>(w_) * (k + 1)) {
  if (k < 1 || k > kMaxStateDevices)
    throw Error(
        fmt::format("a state over {} devices is more than the bitset engine handles ({}); reduce the "
                    "problem (fewer devices per reduction group)",
                    k, kMaxStateDevices));
  bits_.assign(stride_ * k, 0);
}

StateSet StateSet::initial(int k) {
  StateSet s(k);
  for (int d = 0; d < k; ++d) {
    std::uint64_t* p = s.dev(d);
    for (int r = 0; r < k; ++r) {
      p[r >> 6] |= std::uint64_t{1} << (r & 63);
      p[s.w_ + static_cast<std::size_t>(r) * s.w_ + (d >> 6)] |= std::uint64_t{1} << (d & 63);
    }
  }
  return s;
}

void kernel::check_goal_groups(int k, const Groups& groups) {
  for (const auto& g : groups)
    for (int j : g)
      if (j < 0 || j >= k) throw Error(fmt::format("goal: device {} outside 0..{}", j, k - 1));
}

StateSet StateSet::goal(int k, const Groups& groups) {
  kernel::check_goal_groups(k, groups);
  StateSet s(k);
  std::vector<std::uint64_t> cols(s.w_);
  for (const auto& g : groups) {
    std::fill(cols.begin(), cols.end(), 0);
    for (int j : g) cols[j >> 6] |= std::uint64_t{1} << (j & 63);
    for (int d : g) {
      std::uint64_t* p = s.dev(d);
      for (int r = 0; r < k; ++r) {
        p[r >> 6] |= std::uint64_t{1} << (r & 63);
        std::copy(cols.begin(), cols.end(), p + s.w_ + static_cast<std::size_t>(r) * s.w_);
      }
    }
  }
  return s;
}

bool StateSet::get(int device, int row, int col) const {
  const auto* p = dev(device) + w_ + static_cast<std::size_t>(row) * w_;
  return (p[col >> 6] >> (col & 63)) & 1u;
}

void StateSet::set(int device, int row, int col, bool v) {
  auto* base = dev(device);
  auto* p = base + w_ + static_cast<std::size_t>(row) * w_;
  const std::uint64_t bit = std::uint64_t{1} << (col & 63);
  if (v) {
    p[col >> 6] |= bit;
    base[row >> 6] |= std::uint64_t{1} << (row & 63);
  } else {
    p[col >> 6] &= ~bit;
    bool any = false;
    for (int i = 0; i < w_; ++i) any |= p[i] != 0;
    if (!any) base[row >> 6] &= ~(std::uint64_t{1} << (row & 63));
  }
}

bool StateSet::has_row(int device, int row) const { return (dev(device)[row >> 6] >> (row & 63)) & 1u; }

std::vector<int> StateSet::columns(int device, int row) const {
  std::vector<int> c;
  for (int j = 0; j < k_; ++j)
    if (get(device, row, j)) c.push_back(j);
  return c;
}

std::vector<int> StateSet::rows(int device) const {
  std::vector<int> r;
  for (int i = 0; i < k_; ++i)
    if (has_row(device, i)) r.push_back(i);
  return r;
}

bool StateSet::same_device(int d, const StateSet& o, int od) const {
  return k_ == o.k_ && std::memcmp(dev(d), o.dev(od), stride_ * sizeof(std::uint64_t)) == 0;
}

namespace kernel {

std::string set_text(const std::vector<int>& v) {
  // Compress runs: {0-3,8,10-11}
  std::string s = "{";
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (i) s += ",";
    s += j > i ? fmt::format("{}-{}", v[i], v[j]) : std::to_string(v[i]);
    i = j + 1;
  }
  return s + "}";
}

}  // namespace kernel

using kernel::set_text;

namespace {
kernel::Layout layout_of(const StateSet& s) {
  return {s.k(), s.words(), static_cast<std::size_t>(s.words()) * (s.k() + 1)};
}
}  // namespace

std::string StateSet::describe_device(int d) const {
  // Group rows with equal column sets.
  std::string out;
  std::vector<int> rs = rows(d);
  std::vector<bool> done(rs.size(), false);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    if (done[i]) continue;
    std::vector<int> same{rs[i]};
    const auto ci = columns(d, rs[i]);
    for (std::size_t j = i + 1; j < rs.size(); ++j)
      if (!done[j] && columns(d, rs[j]) == ci) {
        same.push_back(rs[j]);
        done[j] = true;
      }
    if (!out.empty()) out += " ";
    out += set_text(same) + "->" + set_text(ci);
  }
  return out.empty() ? "empty" : out;
}

bool StateSet::check_group(Collective c, const int* m, int g, std::string* why) const {
  thread_local std::vector<const std::uint64_t*> P;
  P.resize(g);
  for (int a = 0; a < g; ++a) P[a] = dev(m[a]);
  return kernel::group_check(c, P.data(), m, g, layout_of(*this), why);
}

void StateSet::apply_group(Collective c, const int* m, int g, StateSet& out) const {
  thread_local std::vector<const std::uint64_t*> P;
  thread_local std::vector<std::uint64_t*> O;
  P.resize(g);
  O.resize(g);
  for (int a = 0; a < g; ++a) {
    P[a] = dev(m[a]);
    O[a] = out.dev(m[a]);
  }
  kernel::group_apply(c, P.data(), O.data(), g, layout_of(*this));
}

bool StateSet::check(Collective c, const Groups& groups, std::string* why) const {
  for (const auto& grp : groups) {
    for (int d : grp)
      if (d < 0 || d >= k_) {
        if (why) *why = fmt::format("device {} is outside 0..{}", d, k_ - 1);
        return false;
      }
    if (grp.empty()) continue;
    if (!check_group(c, grp.data(), static_cast<int>(grp.size()), why)) return false;
  }
  return true;
}

bool StateSet::apply(Collective c, const Groups& groups, StateSet& out, std::string* why) const {
  if (!check(c, groups, why)) return false;
  if (out.k_ != k_) out = StateSet(k_);
  // Devices outside every group keep their state. Partitions (the common case) overwrite all.
  std::size_t covered = 0;
  for (const auto& grp : groups) covered += grp.size();
  if (covered != static_cast<std::size_t>(k_)) out.bits_ = bits_;
  for (const auto& grp : groups)
    if (!grp.empty()) apply_group(c, grp.data(), static_cast<int>(grp.size()), out);
  return true;
}

}  // namespace p2v::engine
