#include "p2v/engine/counting.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

CountState::CountState(int k)
    : k_(k), own_(static_cast<std::size_t>(k) * k, 1), m_(static_cast<std::size_t>(k) * k * k, 0) {
  reset_multiplicities();
}

std::vector<int> CountState::rows(int d) const {
  std::vector<int> v;
  for (int r = 0; r < k_; ++r)
    if (owns(d, r)) v.push_back(r);
  return v;
}

CountPlan CountState::plan(const LoweredStep& s) const {
  CountPlan p;
  std::vector<char> seen(k_, 0);
  for (const auto& grp : s.groups) {
    if (grp.empty()) throw Error("a collective's group is empty");
    for (int d : grp) {
      if (d < 0 || d >= k_) throw Error(fmt::format("device {} is outside 0..{}", d, k_ - 1));
      if (seen[d]) throw Error(fmt::format("device {} is in two groups of one step", d));
      seen[d] = 1;
    }
    const int g = static_cast<int>(grp.size());
    const std::vector<int> H = rows(grp[0]);
    switch (s.collective) {
      case Collective::AllReduce:
        for (int d : grp) {
          p.updates.push_back({d, CountUpdate::Sum, grp, H});
          p.owns.emplace_back(d, H);
        }
        break;
      case Collective::Reduce:
        p.updates.push_back({grp[0], CountUpdate::Sum, grp, H});
        p.owns.emplace_back(grp[0], H);
        for (int i = 1; i < g; ++i) p.owns.emplace_back(grp[i], std::vector<int>{});
        break;
      case Collective::Broadcast:
        for (int i = 0; i < g; ++i) {
          if (i > 0) p.updates.push_back({grp[i], CountUpdate::Copy, {grp[0]}, H});
          p.owns.emplace_back(grp[i], H);
        }
        break;
      case Collective::ReduceScatter: {
        const std::size_t n = H.size();
        for (int i = 0; i < g; ++i) {
          std::vector<int> block(H.begin() + static_cast<std::ptrdiff_t>(i * n / g),
                                 H.begin() + static_cast<std::ptrdiff_t>((i + 1) * n / g));
          p.updates.push_back({grp[i], CountUpdate::Sum, grp, block});
          p.owns.emplace_back(grp[i], std::move(block));
        }
        break;
      }
      case Collective::AllGather: {
        // The first member owning a row is its source.
        std::vector<int> src(k_, -1);
        for (int d : grp)
          for (int r : rows(d))
            if (src[r] < 0) src[r] = d;
        std::vector<int> U;
        for (int r = 0; r < k_; ++r)
          if (src[r] >= 0) U.push_back(r);
        for (int d : grp) {
          for (int s2 : grp) {
            if (s2 == d) continue;
            std::vector<int> rs;
            for (int r : U)
              if (src[r] == s2) rs.push_back(r);
            if (!rs.empty()) p.updates.push_back({d, CountUpdate::Copy, {s2}, std::move(rs)});
          }
          p.owns.emplace_back(d, U);
        }
        break;
      }
    }
  }
  return p;
}

void CountState::apply(const CountPlan& p) {
  const std::vector<std::int64_t> before = m_;
  const auto k = static_cast<std::size_t>(k_);
  const CountUpdate* prev = nullptr;
  for (const auto& u : p.updates) {
    // An AllReduce's members get the same sum: copy the previous member's result (same sources and
    // rows, written just now from `before`) instead of summing again (g times less work).
    const bool same_sum = prev && u.kind == CountUpdate::Sum && prev->kind == CountUpdate::Sum &&
                          prev->device != u.device && prev->sources == u.sources && prev->rows == u.rows;
    for (int r : u.rows) {
      std::int64_t* out = &m_[idx(u.device, r) * k];
      if (same_sum) {
        std::copy_n(&m_[idx(prev->device, r) * k], k, out);
      } else if (u.kind == CountUpdate::Copy) {
        std::copy_n(&before[idx(u.sources[0], r) * k], k, out);
      } else {
        std::fill_n(out, k, 0);
        for (int s : u.sources) {
          const std::int64_t* in = &before[idx(s, r) * k];
          for (std::size_t j = 0; j < k; ++j) out[j] += in[j];
        }
      }
    }
    prev = &u;
  }
  for (const auto& [d, rs] : p.owns) {
    std::fill_n(&own_[idx(d, 0)], k, 0);
    for (int r : rs) own_[idx(d, r)] = 1;
  }
}

void CountState::apply(const LoweredStep& s) { apply(plan(s)); }

void CountState::reset_multiplicities() {
  std::fill(m_.begin(), m_.end(), 0);
  for (int d = 0; d < k_; ++d)
    for (int r = 0; r < k_; ++r) m_[idx(d, r) * k_ + d] = 1;
}

CountState run_counting(int k, const LoweredProgram& p) {
  CountState s(k);
  for (const auto& st : p) s.apply(st);
  return s;
}

std::string CountDifference::describe() const {
  auto v = [](const std::optional<std::int64_t>& x) { return x ? fmt::format("{}", *x) : std::string("not owned"); };
  return fmt::format("device {}, chunk {}, source {}: {} vs {}", device, row, source, v(lhs), v(rhs));
}

std::optional<CountDifference> first_difference(const CountState& a, const CountState& b) {
  if (a.k() != b.k()) throw Error(fmt::format("cannot compare states of {} and {} devices", a.k(), b.k()));
  const int k = a.k();
  for (int d = 0; d < k; ++d)
    for (int r = 0; r < k; ++r) {
      const bool oa = a.owns(d, r), ob = b.owns(d, r);
      if (!oa && !ob) continue;
      for (int j = 0; j < k; ++j) {
        if (oa && ob && a.mult(d, r, j) == b.mult(d, r, j)) continue;
        CountDifference x{d, r, j, {}, {}};
        if (oa) x.lhs = a.mult(d, r, j);
        if (ob) x.rhs = b.mult(d, r, j);
        return x;
      }
    }
  return std::nullopt;
}

std::int64_t multiplicity_bound(const LoweredProgram& p) {
  std::int64_t b = 1;
  for (const auto& s : p) {
    if (s.collective == Collective::AllGather || s.collective == Collective::Broadcast) continue;
    std::size_t g = 1;
    for (const auto& grp : s.groups) g = std::max(g, grp.size());
    b *= static_cast<std::int64_t>(g);
    if (b > (std::int64_t{1} << 40)) return b;
  }
  return b;
}

}  // namespace p2v::engine
