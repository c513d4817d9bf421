// AWS's tuner plugin for p5/p5e (aws-ofi-nccl's region tuner; sim/nccl_model.hpp, aws_ofi_p5_pick).
//
// Facts carried over, with their source: github.com/aws/aws-ofi-nccl tag v1.16.3 (2025-08),
// src/tuner/nccl_ofi_regions.cpp (region_init_internal_p5_p5e: the regions' vertices, their order,
// extend_region; region_get_coll_info_internal_v3: no regions on two nodes or fewer, the first region
// in order that holds the call wins, a region whose algorithm/protocol NCCL does not offer is
// skipped, an edge counts as inside) and include/tuner/nccl_ofi_tuner_region.h (TUNER_MAX_SIZE
// 100 GiB, TUNER_MAX_RANKS 1 Mi). RELEASENOTES.md: the tuner is on by default on AWS platforms from
// v1.16.0 (2025-06); from v1.14 two-node communicators fall back to NCCL's own tuning. The code
// below is this model's own: a polygon-membership test over (bytes, ranks) points.
#include <algorithm>
#include <cmath>
#include <vector>

#include "p2v/sim/cost.hpp"
#include "p2v/sim/nccl_model.hpp"

namespace p2v::sim {
namespace {

struct Point {
  double x, y;  // x: the call's bytes (NCCL's nBytes), y: the communicator's ranks
};

struct Region {
  Algorithm algo;
  Protocol proto;
  std::vector<Point> vertices;
};

constexpr double kMaxSize = 100.0 * 1024 * 1024 * 1024;  // TUNER_MAX_SIZE
constexpr double kMaxRanks = 1024.0 * 1024;              // TUNER_MAX_RANKS
constexpr Point kCorner{kMaxSize, kMaxRanks};

// The point of the line through a and b that leaves the box [0, z.x] x [0, z.y] (extend_region).
Point extend(Point a, Point b, Point z) {
  if (a.x == b.x) return {a.x, z.y};
  if (a.y == b.y) return {z.x, a.y};
  const double m = (a.y - b.y) / (a.x - b.x), c = b.y - m * b.x;
  const double y = m * z.x + c;
  return y < z.y ? Point{z.x, y} : Point{(z.y - c) / m, z.y};
}

// Whether p lies on the segment a-b: exactly (the regions' vertices and a call's bytes and ranks are
// whole numbers; long double holds their cross products, up to ~1e17, exactly).
bool on_segment(Point p, Point a, Point b) {
  const long double cross = (static_cast<long double>(b.x) - a.x) * (static_cast<long double>(p.y) - a.y) -
                            (static_cast<long double>(b.y) - a.y) * (static_cast<long double>(p.x) - a.x);
  if (cross != 0) return false;
  return p.x >= std::min(a.x, b.x) && p.x <= std::max(a.x, b.x) && p.y >= std::min(a.y, b.y) &&
         p.y <= std::max(a.y, b.y);
}

// Inside or on the edge of the polygon (even-odd rule, a horizontal ray to +x).
bool holds(const std::vector<Point>& v, Point p) {
  const std::size_t n = v.size();
  for (std::size_t i = 0; i < n; ++i)
    if (on_segment(p, v[i], v[(i + 1) % n])) return true;
  bool inside = false;
  for (std::size_t i = 0, j = n - 1; i < n; j = i++) {
    const Point a = v[i], b = v[j];
    if ((a.y > p.y) != (b.y > p.y)) {
      const double x = a.x + (p.y - a.y) * (b.x - a.x) / (b.y - a.y);
      if (p.x < x) inside = !inside;
    }
  }
  return inside;
}

// region_init_internal_p5_p5e, AllReduce, by GPUs per node (8, 2, 1), in the plugin's order.
const std::vector<Region>& regions_8() {
  static const std::vector<Region> r = [] {
    const Point tree_ll128 = extend({402653184, 2048}, {402653184, 4096}, kCorner);
    const Point nvlstree_1 = extend({8053063680, 160}, {9663676416, 192}, kCorner);
    const Point nvlstree_2 = extend({402653184, 2048}, {402653184, 4096}, kCorner);
    const Point ring_simple = extend({8053063680, 160}, {9663676416, 192}, kCorner);
    return std::vector<Region>{
        {Algorithm::Tree,
         Protocol::LL128,
         {{0, 16},
          {31457280, 16},
          {37748736, 32},
          {117440512, 64},
          {301989888, 128},
          {301989888, 256},
          {335544320, 512},
          {536870912, 1024},
          {402653184, 2048},
          {402653184, 4096},
          tree_ll128,
          {0, tree_ll128.y}}},
        {Algorithm::NvlsTree, Protocol::Simple, {{31457281, 16}, {kMaxSize, 16}, {31457281, 16}}},
        {Algorithm::Ring,
         Protocol::LL128,
         {{31457280, 17},
          {1073741824, 17},
          {2147483648, 64},
          {2147483648, 128},
          {1342177280, 160},
          {2147483648, 256},
          {1074790400, 256},
          {444596224, 160},
          {301989888, 128},
          {117440512, 64},
          {37748736, 32}}},
        {Algorithm::NvlsTree,
         Protocol::Simple,
         {{2147483648, 128},
          {6442450944, 128},
          {8053063680, 160},
          {9663676416, 192},
          nvlstree_1,
          nvlstree_2,
          {402653184, 4096},
          {402653184, 2048},
          {536870912, 1024},
          {335544320, 512},
          {301989888, 256},
          {310378496, 160},
          {444596224, 160},
          {1074790400, 256},
          {2684354560, 256},
          {2147483648, 224},
          {1342177280, 160}}},
        {Algorithm::Ring,
         Protocol::Simple,
         {{1073741824, 17},
          {ring_simple.x, 17},
          ring_simple,
          {9663676416, 192},
          {8053063680, 160},
          {2684354560, 64},
          {1610612736, 32}}}};
  }();
  return r;
}

const std::vector<Region>& regions_2() {
  static const std::vector<Region> r = [] {
    const Point tree_ll128 = extend({88160256, 128}, {178163712, 256}, kCorner);
    const Point tree_simple_1 = extend({787480576, 128}, {1073741824, 256}, kCorner);
    const Point tree_simple_2 = extend({257114112, 128}, {269484032, 256}, kCorner);
    const Point nvlstree_simple = extend({787480576, 128}, {1073741824, 256}, kCorner);
    return std::vector<Region>{
        {Algorithm::Tree,
         Protocol::LL128,
         {{0, 4},
          {1314816, 4},
          {1051648, 8},
          {1051648, 12},
          {2367488, 16},
          {5525504, 32},
          {9473024, 64},
          {88160256, 128},
          {178163712, 256},
          tree_ll128,
          {0, tree_ll128.y}}},
        {Algorithm::Ring,
         Protocol::LL128,
         {{1314816, 4},
          {19736576, 4},
          {41842688, 8},
          {296747008, 64},
          {257114112, 128},
          {269484032, 256},
          {178163712, 256},
          {88160256, 128},
          {9473024, 64},
          {5525504, 32},
          {2367488, 16},
          {1051648, 12},
          {1051648, 8},
          {1314816, 4}}},
        {Algorithm::NvlsTree,
         Protocol::Simple,
         {{19736576, 4}, {81844224, 4}, {275775488, 8}, {275775488, 48}, {296747008, 64}, {41842688, 8}}},
        {Algorithm::Tree, Protocol::LL128, {{81844224, 4}, {269484032, 4}, {81844224, 4}}},
        {Algorithm::Tree, Protocol::Simple, {{269484032, 4}, {kMaxSize, 4}, {269484032, 4}}},
        {Algorithm::Ring,
         Protocol::Simple,
         {{81844224, 5},
          {kMaxSize, 5},
          {kMaxSize, 32},
          {1073741824, 40},
          {1073741824, 128},
          {787480576, 128},
          {296747008, 64},
          {275775488, 48},
          {275775488, 8},
          {81844224, 5}}},
        {Algorithm::Tree,
         Protocol::Simple,
         {{296747008, 64},
          {787480576, 128},
          {1073741824, 256},
          tree_simple_1,
          tree_simple_2,
          {269484032, 256},
          {257114112, 128}}},
        {Algorithm::NvlsTree,
         Protocol::Simple,
         {nvlstree_simple, {1073741824, 256}, {787480576, 128}, {1073741824, 128}, {1073741824, 40}, {kMaxSize, 32}}}};
  }();
  return r;
}

const std::vector<Region>& regions_1() {
  static const std::vector<Region> r = [] {
    const Point tree_ll128 = extend({9999360, 64}, {119477248, 128}, kCorner);
    const Point ring_ll128 = extend({4736000, 2}, {269484032, 128}, kCorner);
    return std::vector<Region>{
        {Algorithm::Tree, Protocol::LL128, {{0, 16}, {2367488, 16}, {9999360, 64}, {119477248, 128}, tree_ll128}},
        {Algorithm::Ring,
         Protocol::LL128,
         {{0, 2},
          {4736000, 2},
          {269484032, 128},
          ring_ll128,
          tree_ll128,
          {119477248, 128},
          {9999360, 64},
          {2367488, 16},
          {0, 16}}},
        {Algorithm::Ring, Protocol::Simple, {{4736000, 2}, {kMaxSize, 2}, ring_ll128, {269484032, 128}}}};
  }();
  return r;
}

}  // namespace

std::vector<std::pair<Algorithm, Protocol>> aws_ofi_p5_regions(const CallShape& c, int nccl_version) {
  std::vector<std::pair<Algorithm, Protocol>> out;
  if (nccl_version < 21900) return out;  // NCCL loads tuner plugins from v2.19 (NCCL_TUNER_PLUGIN)
  const int nodes = std::max(1, c.nodes);
  if (c.coll != engine::Collective::AllReduce || nodes <= 2 || c.ranks % nodes != 0) return out;
  const int ppn = c.ranks / nodes;
  const std::vector<Region>* rs = ppn == 8 ? &regions_8() : ppn == 2 ? &regions_2() : ppn == 1 ? &regions_1() : nullptr;
  if (!rs) return out;
  const Point p{c.bytes, static_cast<double>(c.ranks)};
  for (const auto& r : *rs)
    if (holds(r.vertices, p)) out.emplace_back(r.algo, r.proto);
  return out;
}

}  // namespace p2v::sim
