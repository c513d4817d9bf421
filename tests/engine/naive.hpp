#pragma once
// A deliberately naive, independent implementation of docs/model.md §4 (sets of sets, no bitsets), used to
// replay synthesized programs and to brute-force program sets.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "p2v/engine/instruction.hpp"

namespace naive {

using Dev = std::map<int, std::set<int>>;  // row -> columns (only non-empty rows)
using State = std::vector<Dev>;
using p2v::engine::Collective;

inline State initial(int k) {
  State s(k);
  for (int d = 0; d < k; ++d)
    for (int r = 0; r < k; ++r) s[d][r] = {d};
  return s;
}

inline State goal(int k, const std::vector<std::vector<int>>& groups) {
  State s(k);
  for (const auto& g : groups)
    for (int d : g)
      for (int r = 0; r < k; ++r) s[d][r] = std::set<int>(g.begin(), g.end());
  return s;
}

inline std::set<int> rows(const Dev& d) {
  std::set<int> r;
  for (const auto& [row, cols] : d) r.insert(row);
  return r;
}

inline bool leq(const Dev& a, const Dev& b) {  // a <= b bitwise
  for (const auto& [r, cols] : a) {
    auto it = b.find(r);
    if (it == b.end()) return false;
    for (int c : cols)
      if (!it->second.count(c)) return false;
  }
  return true;
}

// Returns false if the precondition fails for some group.
inline bool step(State& s, Collective c, const std::vector<std::vector<int>>& groups) {
  State out = s;
  for (const auto& g : groups) {
    std::vector<Dev> m;
    for (int d : g) m.push_back(s[d]);
    const std::size_t n = m.size();
    auto same_rows_disjoint = [&] {
      auto r0 = rows(m[0]);
      if (r0.empty()) return false;
      for (const auto& x : m)
        if (rows(x) != r0) return false;
      for (int r : r0)
        for (std::size_t a = 0; a < n; ++a)
          for (std::size_t b = a + 1; b < n; ++b)
            for (int col : m[a].at(r))
              if (m[b].at(r).count(col)) return false;
      return true;
    };
    auto sum = [&] {
      Dev S;
      for (const auto& x : m)
        for (const auto& [r, cols] : x) S[r].insert(cols.begin(), cols.end());
      return S;
    };
    switch (c) {
      case Collective::AllReduce: {
        if (!same_rows_disjoint()) return false;
        Dev S = sum();
        for (int d : g) out[d] = S;
        break;
      }
      case Collective::Reduce: {
        if (!same_rows_disjoint()) return false;
        Dev S = sum();
        for (std::size_t a = 0; a < n; ++a) out[g[a]] = a == 0 ? S : Dev{};
        break;
      }
      case Collective::ReduceScatter: {
        if (!same_rows_disjoint()) return false;
        Dev S = sum();
        std::vector<int> rs;
        for (const auto& [r, cols] : S) rs.push_back(r);
        if (rs.size() % n != 0) return false;
        const std::size_t block = rs.size() / n;
        for (std::size_t a = 0; a < n; ++a) {
          Dev mine;
          for (std::size_t i = a * block; i < (a + 1) * block; ++i) mine[rs[i]] = S[rs[i]];
          out[g[a]] = mine;
        }
        break;
      }
      case Collective::AllGather: {
        const std::size_t cnt = m[0].size();
        if (cnt == 0) return false;
        std::set<int> seen;
        for (const auto& x : m) {
          if (x.size() != cnt) return false;
          for (const auto& [r, cols] : x)
            if (!seen.insert(r).second) return false;
        }
        Dev U;
        for (const auto& x : m)
          for (const auto& [r, cols] : x) U[r] = cols;
        for (int d : g) out[d] = U;
        break;
      }
      case Collective::Broadcast: {
        bool strict = false;
        for (std::size_t a = 1; a < n; ++a) {
          if (!leq(m[a], m[0])) return false;
          if (m[a] != m[0]) strict = true;
        }
        if (!strict) return false;
        for (int d : g) out[d] = m[0];
        break;
      }
    }
  }
  s = std::move(out);
  return true;
}

}  // namespace naive
