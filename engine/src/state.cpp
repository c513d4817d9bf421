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
    throw Error(fmt::format("a state over {} devices is more than the bitset engine handles ({}); reduce the "
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

StateSet StateSet::goal(int k, const Groups& groups) {
  StateSet s(k);
  std::vector<std::uint64_t> cols(s.w_);
  for (const auto& g : groups) {
    std::fill(cols.begin(), cols.end(), 0);
    for (int j : g) {
      if (j < 0 || j >= k) throw Error(fmt::format("goal: device {} outside 0..{}", j, k - 1));
      cols[j >> 6] |= std::uint64_t{1} << (j & 63);
    }
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

std::uint64_t StateSet::hash() const {
  // Four independent lanes so the multiplies overlap; mixed at the end.
  std::uint64_t h[4] = {0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(k_), 0xC2B2AE3D27D4EB4Full,
                        0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull};
  const std::size_t n = bits_.size();
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; ++l) h[l] = (h[l] ^ bits_[i + l]) * 0xff51afd7ed558ccdull;
  for (; i < n; ++i) h[0] = (h[0] ^ bits_[i]) * 0xff51afd7ed558ccdull;
  std::uint64_t r = h[0] ^ (h[1] >> 17) ^ (h[2] << 13) ^ (h[3] >> 29);
  r = (r ^ (r >> 33)) * 0xc4ceb9fe1a85ec53ull;
  return r ^ (r >> 33);
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

using kernel::popcount_words;
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

namespace p2v::engine {

bool StateSet::finishes(Collective c, const Groups& groups, const StateSet& goal) const {
  // Devices outside every group keep their state, so they must be at the goal already.
  std::size_t covered = 0;
  for (const auto& grp : groups) covered += grp.size();
  const std::size_t n = stride_;
  if (covered != static_cast<std::size_t>(k_)) {
    std::vector<char> in(k_, 0);
    for (const auto& grp : groups)
      for (int d : grp) in[d] = 1;
    for (int d = 0; d < k_; ++d)
      if (!in[d] && std::memcmp(dev(d), goal.dev(d), n * sizeof(std::uint64_t)) != 0) return false;
  }
  const int w = w_;
  for (const auto& grp : groups) {
    const int g = static_cast<int>(grp.size());
    const int* m = grp.data();
    if (g < 2) {
      if (g == 1 && std::memcmp(dev(m[0]), goal.dev(m[0]), n * sizeof(std::uint64_t)) != 0) return false;
      continue;
    }
    switch (c) {
      case Collective::ReduceScatter:
      case Collective::Reduce:
        return false;  // with two or more members, some member ends without every row
      case Collective::Broadcast:
        // Every member ends with the root's state, which must be each member's goal.
        for (int a = 0; a < g; ++a)
          if (std::memcmp(dev(m[0]), goal.dev(m[a]), n * sizeof(std::uint64_t)) != 0) return false;
        if (!check_group(c, m, g, nullptr)) return false;
        break;
      case Collective::AllReduce: {
        // Every member must hold every row already (AllReduce keeps the row set), and the
        // disjoint union of each row's column sets must be the goal's.
        const std::uint64_t* gl = goal.dev(m[0]);
        for (int a = 0; a < g; ++a)
          if (std::memcmp(dev(m[a]), gl, w * sizeof(std::uint64_t)) != 0) return false;
        if (!check_group(c, m, g, nullptr)) return false;
        for (int r = 0; r < k_; ++r)
          for (int i = 0; i < w; ++i) {
            std::uint64_t u = 0;
            for (int a = 0; a < g; ++a) u |= dev(m[a])[w + static_cast<std::size_t>(r) * w + i];
            for (int a = 0; a < g; ++a)
              if (u != goal.dev(m[a])[w + static_cast<std::size_t>(r) * w + i]) return false;
          }
        break;
      }
      case Collective::AllGather: {
        if (!check_group(c, m, g, nullptr)) return false;
        // Union of disjoint rows; each row keeps its owner's column set.
        for (int a = 0; a < g; ++a) {
          const std::uint64_t* da = dev(m[a]);
          for (int b = 0; b < g; ++b) {
            const std::uint64_t* gb = goal.dev(m[b]);
            for (int wi = 0; wi < w; ++wi) {
              std::uint64_t mask = da[wi];
              while (mask) {
                const int r = wi * 64 + std::countr_zero(mask);
                mask &= mask - 1;
                if (std::memcmp(da + w + static_cast<std::size_t>(r) * w, gb + w + static_cast<std::size_t>(r) * w,
                                w * sizeof(std::uint64_t)) != 0)
                  return false;
              }
            }
          }
        }
        // Row count: the union must hold every row of the goal.
        int total = 0;
        for (int a = 0; a < g; ++a) total += popcount_words(dev(m[a]), w);
        for (int a = 0; a < g; ++a)
          if (popcount_words(goal.dev(m[a]), w) != total) return false;
        break;
      }
    }
  }
  return true;
}

}  // namespace p2v::engine
