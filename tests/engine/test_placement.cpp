#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "p2v/engine/error.hpp"
#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/placement.hpp"

using namespace p2v::engine;

namespace {
bool contains(const std::vector<ParallelismMatrix>& v, const ParallelismMatrix& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Brute force: every matrix with entries in 1..max that satisfies the products.
std::vector<ParallelismMatrix> brute(const std::vector<int>& H, const std::vector<int>& P) {
  std::vector<ParallelismMatrix> out;
  const std::size_t m = P.size(), n = H.size();
  ParallelismMatrix x(m, std::vector<int>(n, 1));
  int mx = *std::max_element(H.begin(), H.end());
  std::function<void(std::size_t)> rec = [&](std::size_t cell) {
    if (cell == m * n) {
      for (std::size_t i = 0; i < m; ++i) {
        long p = 1;
        for (int v : x[i]) p *= v;
        if (p != P[i]) return;
      }
      for (std::size_t j = 0; j < n; ++j) {
        long p = 1;
        for (std::size_t i = 0; i < m; ++i) p *= x[i][j];
        if (p != H[j]) return;
      }
      out.push_back(x);
      return;
    }
    for (int v = 1; v <= mx; ++v) {
      x[cell / n][cell % n] = v;
      rec(cell + 1);
    }
  };
  rec(0);
  return out;
}
}  // namespace

TEST_CASE("Example 2.1: Fig. 2 matrices") {
  auto all = enumerate_matrices({1, 2, 2, 4}, {4, 4});
  CHECK(contains(all, {{1, 2, 2, 1}, {1, 1, 1, 4}}));
  CHECK(contains(all, {{1, 2, 1, 2}, {1, 1, 2, 2}}));
  CHECK(contains(all, {{1, 1, 2, 2}, {1, 2, 1, 2}}));
}

TEST_CASE("Example 2.2: [4 16] over [4 16] has exactly three matrices") {
  auto all = enumerate_matrices({4, 16}, {4, 16});
  CHECK(all == std::vector<ParallelismMatrix>{{{1, 4}, {4, 4}}, {{2, 2}, {2, 8}}, {{4, 1}, {1, 16}}});
}

TEST_CASE("matrix enumeration equals brute force") {
  for (auto [H, P] : std::vector<std::pair<std::vector<int>, std::vector<int>>>{
           {{1, 2, 2, 4}, {4, 4}}, {{4, 16}, {16, 2, 2}}, {{4, 8}, {2, 2, 8}}, {{6, 4}, {2, 3, 4}}, {{2, 2, 2}, {8}}}) {
    auto a = enumerate_matrices(H, P), b = brute(H, P);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK(a == b);
    CHECK(!a.empty());
  }
}

TEST_CASE("bad axes, reductions and matrices are rejected with the reason") {
  CHECK_THROWS_WITH_AS(check_axes({4, 16}, {4, 8}), doctest::Contains("product is 32 but the system has 64"),
                       p2v::Error);
  CHECK_THROWS_WITH_AS(check_reduce({2}, 2), doctest::Contains("out of range"), p2v::Error);
  CHECK_THROWS_WITH_AS(check_reduce({0, 0}, 2), doctest::Contains("given twice"), p2v::Error);
  CHECK_THROWS_WITH_AS(parse_matrix("1 x;4 4"), doctest::Contains("not a positive integer"), p2v::Error);
  CHECK_THROWS_WITH_AS(parse_matrix("1 4;4"), doctest::Contains("different lengths"), p2v::Error);
  CHECK_THROWS_WITH_AS(check_matrix({{1, 4}, {2, 4}}, {4, 16}, {4, 16}), doctest::Contains("row 1 multiplies to 8"),
                       p2v::Error);
  CHECK(parse_matrix("1 4;4 4") == ParallelismMatrix{{1, 4}, {4, 4}});
  CHECK(parse_matrix("[[1 4] [4 4]]") == ParallelismMatrix{{1, 4}, {4, 4}});
  CHECK(parse_int_list("4,16", "--axes") == std::vector<int>{4, 16});
  CHECK_THROWS_AS(parse_int_list("4,,16", "--axes"), p2v::Error);
  CHECK_THROWS_AS(parse_int_list("-4", "--axes"), p2v::Error);
}

TEST_CASE("device coordinates: Fig. 2d") {
  // [[1 1 2 2],[1 2 1 2]] on Fig. 2a: A0 and A1 share the data index, differ in shard index.
  Placement p({1, 2, 2, 4}, {4, 4}, {{1, 1, 2, 2}, {1, 2, 1, 2}}, {1});
  CHECK(p.axis_coord(0, 0) == p.axis_coord(1, 0));
  CHECK(p.axis_coord(0, 1) != p.axis_coord(1, 1));
  const auto& g = p.reduction_groups()[p.reduction_group_of(0)];
  CHECK(std::find(g.begin(), g.end(), 1) != g.end());
  CHECK(p.reduction_groups().size() == 4);
  for (const auto& grp : p.reduction_groups()) CHECK(grp.size() == 4);
  // Every device's coordinates are a bijection onto the axes' index space.
  std::set<std::pair<int, int>> seen;
  for (int d = 0; d < 16; ++d) seen.insert({p.axis_coord(d, 0), p.axis_coord(d, 1)});
  CHECK(seen.size() == 16);
}

TEST_CASE("synthesis hierarchies (a)-(d) of Fig. 2d and Example 3.1") {
  Placement p({1, 2, 2, 4}, {4, 4}, {{1, 1, 2, 2}, {1, 2, 1, 2}}, {1});
  std::vector<std::string> names{"rack", "server", "cpu", "gpu"};
  CHECK(make_hierarchy(p, names, HierarchyKind::System).cards == std::vector<int>{1, 2, 2, 4});
  CHECK(make_hierarchy(p, names, HierarchyKind::ColumnBased).cards == std::vector<int>{1, 1, 1, 2, 2, 1, 2, 2});
  CHECK(make_hierarchy(p, names, HierarchyKind::RowBased).cards == std::vector<int>{1, 1, 2, 2, 1, 2, 1, 2});
  auto d = make_hierarchy(p, names, HierarchyKind::ReductionAxes);
  CHECK(d.cards == std::vector<int>{1, 2, 1, 2});
  CHECK(d.num_local() == 4);
  CHECK(d.to_system.size() == 4);
  // Example 3.1: X = [[1 2 3],[4 5 6],[7 8 9]], R = {0, 2}.
  ParallelismMatrix x{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  std::vector<std::string> n3{"x", "y", "z"};
  CHECK(hierarchy_shape(x, {0, 2}, n3, HierarchyKind::ReductionAxes).first == std::vector<int>{1, 7, 16, 27});
  CHECK(hierarchy_shape(x, {0, 2}, n3, HierarchyKind::ReductionUncollapsed).first ==
        std::vector<int>{1, 2, 3, 7, 8, 9});
}
