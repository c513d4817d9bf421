// The finite parts of docs/shape.md §3.4 and §3.5 compare a tuple model's graph on an instance with
// its graph on the smallest instance: the same instructions on both, then the product of the two
// graphs from the initial pair. Shared by test_shape_depth2 (model M) and test_shape_depth3 (M3).
#pragma once
#include <doctest/doctest.h>

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "p2v/engine/instruction.hpp"

namespace shape_test {

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
