// The finite parts of docs/shape.md §3.4 and §3.5 compare a tuple model's graph on an instance with
// its graph on the smallest instance: the same instructions on both, then the product of the two
// graphs from the initial pair. Shared by test_shape_depth2 (model M) and test_shape_depth3 (M3).
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "p2v/engine/instruction.hpp"

namespace shape_test {

// The levels instruction `in`'s groups vary (bit l: coordinate l of `co[x]`, one entry per device)
// and its Master flag. A tuple model knows an instruction only by these two, so its groups must
// follow from them and the coordinates alone: members agree outside V (Master: the one group of
// devices that are 0 outside V). Required to be the engine's groups.
template <class Coords>
std::pair<unsigned, bool> level_pattern(const p2v::engine::Instruction& in, const std::vector<Coords>& co) {
  const int d = co.empty() ? 0 : static_cast<int>(co[0].size());
  unsigned v = 0;
  for (const auto& g : in.grouping.groups)
    for (int x : g)
      for (int l = 0; l < d; ++l) v |= co[x][l] != co[g[0]][l] ? 1u << l : 0u;
  const bool m = in.grouping.form == p2v::engine::FormKind::Master;
  std::map<Coords, std::vector<int>> by;
  for (int x = 0; x < static_cast<int>(co.size()); ++x) {
    auto o = co[x];
    bool zero = true;
    for (int l = 0; l < d; ++l)
      if ((v >> l) & 1u)
        o[l] = -1;
      else
        zero = zero && o[l] == 0;
    if (m && !zero) continue;
    by[o].push_back(x);
  }
  p2v::engine::Groups gs;
  for (auto& [o, mem] : by) gs.push_back(mem);
  p2v::engine::Groups want = in.grouping.groups;
  std::sort(gs.begin(), gs.end());
  std::sort(want.begin(), want.end());
  REQUIRE(gs == want);
  return {v, m};
}

// An instance's instructions as (collective, varied levels V, Master) triples, which must be distinct:
// a tuple model knows an instruction only by its triple.
template <class Inst>
std::set<std::tuple<int, unsigned, int>> instruction_triples(const Inst& I) {
  std::set<std::tuple<int, unsigned, int>> t;
  for (std::size_t i = 0; i < I.ins.size(); ++i) t.emplace(static_cast<int>(I.ins[i].collective), I.V[i], I.master[i]);
  CHECK(t.size() == I.ins.size());
  return t;
}

// Both instances list the same instructions: names, varied levels V and Master flags.
template <class Inst>
void require_same_instructions(const Inst& I, const Inst& I2) {
  REQUIRE(I.ins.size() == I2.ins.size());
  for (std::size_t t = 0; t < I.ins.size(); ++t) {
    REQUIRE(p2v::engine::instruction_name(I.h, I.ins[t]) == p2v::engine::instruction_name(I2.h, I2.ins[t]));
    REQUIRE(I.V[t] == I2.V[t]);
    REQUIRE(I.master[t] == I2.master[t]);
  }
}

struct ProductWalk {
  std::size_t pairs = 0;
  int mismatches = 0;  // pairs whose goal flags, per-pair check or valid instructions differ
};

// The product of graphs G and G2 (succ[state][instruction] >= 0 for a successor) from the pair (0, 0),
// following the instructions valid on both sides. `differ(x, y)` counts what else a pair must share.
template <class Graph, class Differ>
ProductWalk product_walk(const Graph& G, const Graph& G2, std::size_t instructions, Differ differ) {
  std::vector<std::pair<int, int>> queue{{0, 0}};
  std::map<std::pair<int, int>, int> seen{{{0, 0}, 0}};
  int mismatches = 0;
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const auto [x, y] = queue[q];
    mismatches += (x == G.goal) != (y == G2.goal);
    mismatches += differ(x, y);
    for (std::size_t t = 0; t < instructions; ++t) {
      const int nx = G.succ[x][t], ny = G2.succ[y][t];
      if ((nx >= 0) != (ny >= 0)) ++mismatches;
      if (nx < 0 || ny < 0) continue;
      if (seen.emplace(std::pair{nx, ny}, static_cast<int>(queue.size())).second) queue.emplace_back(nx, ny);
    }
  }
  return {queue.size(), mismatches};
}

}  // namespace shape_test
