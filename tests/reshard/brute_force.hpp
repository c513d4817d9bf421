#pragma once
// The exact optimum of a redistribution by brute force (tests and bench/reshard), written apart
// from the search in reshard/src/search.cpp: every well-formed type over the prime axes is listed
// up front, and a plain Dijkstra runs over (type, dirty) with
//   - allgather / alltoall of the m minor-most axes of a dimension, dynslice of one unused axis
//     (paper costs: output localsize, input localsize, 0);
//   - relabelling: any type with the same local type, free, makes the state dirty (the device map
//     is no longer the identity);
//   - allpermute: from any state to any clean type with the same local type, cost the localsize,
//     any number of times;
// within the memory limit, from (τ1, clean) to (τ2, clean). Returns -1 when the problem has more
// than `max_types` types (too big to brute-force) or τ2 is unreachable.
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <vector>

#include "p2v/reshard/type.hpp"

namespace p2v::reshard::testing {

inline std::int64_t brute_force_optimum(const Mesh& mesh, const Type& from, const Type& to, std::int64_t limit,
                                        std::size_t max_types = 20000) {
  using Axes = std::vector<std::vector<int>>;  // per dimension, minor first
  const std::size_t nd = from.dims.size(), np = mesh.primes.size();
  auto size_of = [&](const std::vector<int>& ax) {
    std::int64_t k = 1;
    for (int a : ax) k *= mesh.primes[static_cast<std::size_t>(a)].size;
    return k;
  };
  auto local = [&](const Axes& t) {
    std::vector<std::int64_t> c;
    for (std::size_t i = 0; i < nd; ++i) c.push_back(from.dims[i].global / size_of(t[i]));
    return c;
  };
  auto localsize = [&](const Axes& t) {
    std::int64_t s = 1;
    for (auto v : local(t)) s *= v;
    return s;
  };
  // Every ordered assignment: axis a unused, or inserted at any position of any dimension.
  std::vector<Axes> types;
  Axes cur(nd);
  bool too_many = false;
  std::function<void(std::size_t)> rec = [&](std::size_t a) {
    if (too_many) return;
    if (a == np) {
      for (std::size_t i = 0; i < nd; ++i)
        if (from.dims[i].global % size_of(cur[i]) != 0) return;
      if (localsize(cur) <= limit) types.push_back(cur);
      too_many = types.size() > max_types;
      return;
    }
    rec(a + 1);
    for (std::size_t i = 0; i < nd; ++i)
      for (std::size_t pos = 0; pos <= cur[i].size(); ++pos) {
        cur[i].insert(cur[i].begin() + static_cast<std::ptrdiff_t>(pos), static_cast<int>(a));
        rec(a + 1);
        cur[i].erase(cur[i].begin() + static_cast<std::ptrdiff_t>(pos));
      }
  };
  rec(0);
  if (too_many) return -1;
  std::map<Axes, int> id;
  for (std::size_t k = 0; k < types.size(); ++k) id[types[k]] = static_cast<int>(k);
  std::map<std::vector<std::int64_t>, std::vector<int>> same_local;
  for (std::size_t k = 0; k < types.size(); ++k) same_local[local(types[k])].push_back(static_cast<int>(k));
  auto as_axes = [&](const Type& t) {
    Axes a(nd);
    for (std::size_t i = 0; i < nd; ++i) a[i] = t.dims[i].axes;
    return a;
  };
  const auto src = id.find(as_axes(from)), dst = id.find(as_axes(to));
  if (src == id.end() || dst == id.end()) return -1;
  const int n = static_cast<int>(types.size());
  std::vector<std::int64_t> dist(static_cast<std::size_t>(2 * n), INT64_MAX);  // state = type + n·dirty
  using E = std::pair<std::int64_t, int>;
  std::priority_queue<E, std::vector<E>, std::greater<>> pq;
  auto push = [&](int state, std::int64_t d) {
    if (d < dist[static_cast<std::size_t>(state)]) {
      dist[static_cast<std::size_t>(state)] = d;
      pq.push({d, state});
    }
  };
  push(src->second, 0);
  while (!pq.empty()) {
    const auto [d, state] = pq.top();
    pq.pop();
    if (d > dist[static_cast<std::size_t>(state)]) continue;
    const int k = state % n, dirty = state / n;
    if (k == dst->second && !dirty) return d;
    const Axes& t = types[static_cast<std::size_t>(k)];
    const auto c = local(t);
    const std::int64_t here = localsize(t);
    auto go = [&](const Axes& r, std::int64_t w) {
      auto it = id.find(r);
      if (it != id.end()) push(it->second + n * dirty, d + w);
    };
    std::vector<bool> used(np, false);
    for (const auto& ax : t)
      for (int a : ax) used[static_cast<std::size_t>(a)] = true;
    for (std::size_t i = 0; i < nd; ++i) {
      for (std::size_t m = 1; m <= t[i].size(); ++m) {
        const std::vector<int> moved(t[i].begin(), t[i].begin() + static_cast<std::ptrdiff_t>(m));
        Axes r = t;
        r[i].erase(r[i].begin(), r[i].begin() + static_cast<std::ptrdiff_t>(m));
        go(r, here * size_of(moved));  // allgather: the output's localsize
        for (std::size_t j = 0; j < nd; ++j)
          if (j != i && c[j] % size_of(moved) == 0) {
            Axes q = r;
            q[j].insert(q[j].begin(), moved.begin(), moved.end());
            go(q, here);  // alltoall: the input's localsize
          }
      }
      for (std::size_t a = 0; a < np; ++a)
        if (!used[a]) {
          Axes r = t;
          r[i].insert(r[i].begin(), static_cast<int>(a));
          go(r, 0);  // dynslice
        }
    }
    for (int other : same_local[c]) {
      push(other + n, d);     // relabelling
      push(other, d + here);  // allpermute
    }
  }
  return -1;
}

}  // namespace p2v::reshard::testing
