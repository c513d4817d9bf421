#pragma once
// The five Hoare rules on one group, over raw device states (private to the engine). A device state
// is `stride` words: a row mask (w words) then k column sets (w words each). Shared by StateSet and
// the synthesizer's interned states, so there is one implementation of the rules.
#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"

namespace p2v::engine::kernel {

struct Layout {
  int k = 0, w = 0;
  std::size_t stride = 0;
};

inline int popcount_words(const std::uint64_t* p, int w) {
  int n = 0;
  for (int i = 0; i < w; ++i) n += std::popcount(p[i]);
  return n;
}

std::string set_text(const std::vector<int>& v);

// Throws p2v::Error unless every member of every goal group is a device 0..k-1.
void check_goal_groups(int k, const Groups& groups);

// w words of scratch, on the stack for states of up to 512 devices.
class Words {
 public:
  explicit Words(int w) {
    if (w > 8) big_.resize(w);
  }
  std::uint64_t* data() { return big_.empty() ? small_ : big_.data(); }

 private:
  std::uint64_t small_[8] = {};
  std::vector<std::uint64_t> big_;
};

// Precondition of `c` on members P[0..g) (device numbers m, for messages).
inline bool group_check(Collective c, const std::uint64_t* const* P, const int* m, int g, const Layout& L,
                        std::string* why) {
  const int w = L.w;
  auto fail = [&](const std::string& msg) {
    if (why) {
      std::vector<int> mem(m, m + g);
      *why = fmt::format("{} precondition fails on group {}: {}", to_string(c), set_text(mem), msg);
    }
    return false;
  };
  const std::uint64_t* d0 = P[0];
  switch (c) {
    case Collective::AllReduce:
    case Collective::ReduceScatter:
    case Collective::Reduce: {
      bool nonempty = false;
      for (int i = 0; i < w; ++i) nonempty |= d0[i] != 0;
      if (!nonempty) return why ? fail(fmt::format("device {} holds no rows", m[0])) : false;
      for (int a = 1; a < g; ++a)
        if (std::memcmp(d0, P[a], w * sizeof(std::uint64_t)) != 0)
          return why ? fail(fmt::format("devices {} and {} hold different rows", m[0], m[a])) : false;
      if (c == Collective::ReduceScatter && popcount_words(d0, w) % g != 0)
        return why ? fail(fmt::format("{} rows are not divisible among {} members", popcount_words(d0, w), g)) : false;
      // Pairwise-disjoint column sets, row by row.
      if (w == 1) {
        std::uint64_t mask = d0[0];
        while (mask) {
          const int r = std::countr_zero(mask);
          mask &= mask - 1;
          std::uint64_t u = 0;
          for (int a = 0; a < g; ++a) {
            const std::uint64_t cs = P[a][1 + r];
            if (u & cs)
              return why ? fail(fmt::format("row {}: column sets of the members overlap (device {})", r, m[a])) : false;
            u |= cs;
          }
        }
        return true;
      }
      Words acc(w);
      std::uint64_t* u = acc.data();
      for (int wi = 0; wi < w; ++wi) {
        std::uint64_t mask = d0[wi];
        while (mask) {
          const int r = wi * 64 + std::countr_zero(mask);
          mask &= mask - 1;
          std::fill(u, u + w, 0);
          for (int a = 0; a < g; ++a) {
            const std::uint64_t* cs = P[a] + w + static_cast<std::size_t>(r) * w;
            for (int i = 0; i < w; ++i) {
              if (u[i] & cs[i])
                return why ? fail(fmt::format("row {}: column sets of the members overlap (device {})", r, m[a]))
                           : false;
              u[i] |= cs[i];
            }
          }
        }
      }
      return true;
    }
    case Collective::AllGather: {
      const int n0 = popcount_words(d0, w);
      if (n0 == 0) return why ? fail(fmt::format("device {} holds no rows", m[0])) : false;
      Words acc(w);
      std::uint64_t* u = acc.data();
      std::fill(u, u + w, 0);
      for (int a = 0; a < g; ++a) {
        const std::uint64_t* da = P[a];
        if (popcount_words(da, w) != n0)
          return why ? fail(fmt::format("devices {} and {} hold different numbers of rows", m[0], m[a])) : false;
        for (int i = 0; i < w; ++i) {
          if (u[i] & da[i]) return why ? fail(fmt::format("device {} holds a row another member holds", m[a])) : false;
          u[i] |= da[i];
        }
      }
      return true;
    }
    case Collective::Broadcast: {
      const std::size_t n = L.stride;
      // Strictness first: it is what fails most often (e.g. after an AllReduce of the group).
      bool strict = false;
      for (int a = 1; a < g && !strict; ++a) strict = std::memcmp(P[a], d0, n * sizeof(std::uint64_t)) != 0;
      if (!strict) return why ? fail("every member already equals the root") : false;
      for (int a = 1; a < g; ++a) {
        const std::uint64_t* da = P[a];
        for (std::size_t i = 0; i < n; ++i)
          if (da[i] & ~d0[i])
            return why ? fail(fmt::format("device {} holds data the root {} lacks", m[a], m[0])) : false;
      }
      return true;
    }
  }
  return false;
}

// Postcondition: writes member a's new state to O[a] (O must not alias P). Members whose results
// are equal by construction (all of AllReduce, AllGather, Broadcast; the non-roots of Reduce) may
// share one output buffer.
inline void group_apply(Collective c, const std::uint64_t* const* P, std::uint64_t* const* O, int g, const Layout& L) {
  const int w = L.w;
  const std::size_t n = L.stride;
  switch (c) {
    case Collective::AllReduce:
    case Collective::Reduce: {
      std::uint64_t* o = O[0];
      std::memcpy(o, P[0], n * sizeof(std::uint64_t));
      for (int a = 1; a < g; ++a) {
        const std::uint64_t* da = P[a];
        for (std::size_t i = w; i < n; ++i) o[i] |= da[i];
      }
      for (int a = 1; a < g; ++a) {
        if (O[a] == O[a - 1] && a > 1) continue;  // outputs may share a buffer (see the synthesizer)
        if (c == Collective::AllReduce) {
          if (O[a] != o) std::memcpy(O[a], o, n * sizeof(std::uint64_t));
        } else {
          std::memset(O[a], 0, n * sizeof(std::uint64_t));
        }
      }
      return;
    }
    case Collective::ReduceScatter: {
      // S = union; member i gets the i-th block of rows(S).
      const std::uint64_t* d0 = P[0];
      const int total = popcount_words(d0, w);
      const int block = total / g;
      for (int a = 0; a < g; ++a) std::memset(O[a], 0, n * sizeof(std::uint64_t));
      int idx = 0;
      for (int wi = 0; wi < w; ++wi) {
        std::uint64_t mask = d0[wi];
        while (mask) {
          const int r = wi * 64 + std::countr_zero(mask);
          mask &= mask - 1;
          std::uint64_t* o = O[idx / block];
          ++idx;
          o[r >> 6] |= std::uint64_t{1} << (r & 63);
          std::uint64_t* oc = o + w + static_cast<std::size_t>(r) * w;
          for (int a = 0; a < g; ++a) {
            const std::uint64_t* cs = P[a] + w + static_cast<std::size_t>(r) * w;
            for (int i = 0; i < w; ++i) oc[i] |= cs[i];
          }
        }
      }
      return;
    }
    case Collective::AllGather: {
      std::uint64_t* o = O[0];
      std::memcpy(o, P[0], n * sizeof(std::uint64_t));
      for (int a = 1; a < g; ++a) {
        const std::uint64_t* da = P[a];
        // Rows are disjoint, so OR-ing masks and column sets unions them.
        for (std::size_t i = 0; i < n; ++i) o[i] |= da[i];
      }
      for (int a = 1; a < g; ++a)
        if (O[a] != o) std::memcpy(O[a], o, n * sizeof(std::uint64_t));
      return;
    }
    case Collective::Broadcast: {
      const std::uint64_t* d0 = P[0];
      for (int a = 0; a < g; ++a)
        if (a == 0 || O[a] != O[a - 1]) std::memcpy(O[a], d0, n * sizeof(std::uint64_t));
      return;
    }
  }
}

}  // namespace p2v::engine::kernel
