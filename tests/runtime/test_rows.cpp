// Strided row sets and copies (runtime/rows.hpp) against brute force: the units a box stands for,
// its normal form, slices, and the blocks of pack/unpack copies; and rank plans built on them at
// a million ranks, checked for what they move.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>

#include "p2v/engine/system.hpp"
#include "p2v/runtime/jobs.hpp"
#include "p2v/runtime/rank_plan.hpp"
#include "p2v/runtime/rows.hpp"

using namespace p2v;
using runtime::Dim;
using runtime::Interval;
using runtime::Intervals;
using runtime::RowSet;

namespace {

// The units of box (begin, len, dims) in lexicographic order of the dims' indices.
std::vector<std::int64_t> brute_units(std::int64_t begin, std::int64_t len, const std::vector<Dim>& dims) {
  std::vector<std::int64_t> out{begin};
  for (const Dim& d : dims) {
    std::vector<std::int64_t> next;
    for (std::int64_t b : out)
      for (std::int64_t a = 0; a < d.count; ++a) next.push_back(b + a * d.stride);
    out = next;
  }
  std::vector<std::int64_t> units;
  for (std::int64_t b : out)
    for (std::int64_t t = 0; t < len; ++t) units.push_back(b + t);
  return units;
}

Intervals merged(std::vector<std::int64_t> units) {
  std::sort(units.begin(), units.end());
  Intervals v;
  for (std::int64_t u : units) {
    if (!v.empty() && v.back().end == u)
      ++v.back().end;
    else
      v.push_back({u, u + 1});
  }
  return v;
}

}  // namespace

TEST_CASE("row boxes: normal form, membership and slices agree with the units they stand for") {
  std::mt19937 rng(12);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int boxes = 0, refused = 0, sliced = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const std::int64_t begin = pick(0, 7), len = pick(1, 4);
    std::vector<Dim> dims;
    for (int i = pick(0, 3); i > 0; --i) dims.push_back({pick(1, 4), pick(1, 40)});
    const auto units = brute_units(begin, len, dims);
    const Intervals want = merged(units);
    const auto b = RowSet::box(begin, len, dims);
    if (!b) {
      ++refused;  // overlapping, touching or interleaved runs; boxes built nested are accepted below
      continue;
    }
    ++boxes;
    REQUIRE(b->intervals() == want);
    CHECK(b->runs() == static_cast<std::int64_t>(want.size()));
    CHECK(b->total() == static_cast<std::int64_t>(units.size()));
    CHECK(b->first() == want.front().begin);
    CHECK(b->end() == want.back().end);
    for (std::int64_t u = 0; u < want.back().end + 3; ++u) {
      const bool in =
          std::any_of(want.begin(), want.end(), [&](const Interval& i) { return i.begin <= u && u < i.end; });
      REQUIRE(b->contains(u) == in);
    }
    CHECK(b->gcd(0) == RowSet{want}.gcd(0));
    // Every equal split: part m of g is positions [m*q, (m+1)*q) of the ascending units.
    std::vector<std::int64_t> sorted = units;
    std::sort(sorted.begin(), sorted.end());
    const std::int64_t total = b->total();
    for (std::int64_t g = 2; g <= total; ++g) {
      if (total % g) continue;
      const std::int64_t q = total / g;
      for (std::int64_t m = 0; m < g; ++m) {
        const RowSet part = b->slice(m * q, q);
        REQUIRE(part.intervals() == merged({sorted.begin() + m * q, sorted.begin() + (m + 1) * q}));
        sliced += part.boxed();
      }
    }
    // Packing copies the runs ascending into a contiguous region, unpacking back.
    const auto pack = runtime::expand_copies(runtime::pack_copies(*b, {runtime::Space::Stage0, 5}));
    REQUIRE(pack.size() == want.size());
    std::int64_t off = 5;
    for (std::size_t i = 0; i < want.size(); ++i) {
      CHECK(pack[i].src.offset == want[i].begin);
      CHECK(pack[i].dst.offset == off);
      CHECK(pack[i].units == want[i].size());
      off += want[i].size();
    }
    const auto unpack = runtime::expand_copies(runtime::unpack_copies(*b, {runtime::Space::Stage1, 5}));
    REQUIRE(unpack.size() == pack.size());
    for (std::size_t i = 0; i < pack.size(); ++i) {
      CHECK(unpack[i].src.offset == pack[i].dst.offset);
      CHECK(unpack[i].dst.offset == pack[i].src.offset);
    }
  }
  // Boxes nested by construction (every stride beyond everything inside it) are never refused.
  for (int trial = 0; trial < 500; ++trial) {
    const std::int64_t begin = pick(0, 7), len = pick(1, 4);
    std::vector<Dim> inner_first;
    std::int64_t extent = len;
    for (int i = pick(1, 3); i > 0; --i) {
      const Dim d{pick(2, 4), extent + pick(1, 3)};
      inner_first.push_back(d);
      extent += (d.count - 1) * d.stride;
    }
    std::vector<Dim> dims(inner_first.rbegin(), inner_first.rend());
    std::shuffle(dims.begin(), dims.end(), rng);  // any order: box() sorts
    const auto b = RowSet::box(begin, len, dims);
    REQUIRE(b);
    CHECK(b->intervals() == merged(brute_units(begin, len, dims)));
    CHECK(b->runs() == static_cast<std::int64_t>(b->intervals().size()));
  }
  MESSAGE("boxes " << boxes << ", refused " << refused << ", boxed slices " << sliced);
  CHECK(boxes > 1000);
  CHECK(refused > 100);
  CHECK(sliced > 1000);
}

TEST_CASE("strided copies: blocks in lexicographic order of the repeats") {
  runtime::Copy c{{runtime::Space::Stage0, 1}, {runtime::Space::Main, 100}, 2, {{2, 10, 1000}, {3, 2, 7}}};
  CHECK(c.blocks() == 6);
  std::vector<std::pair<std::int64_t, std::int64_t>> got;
  runtime::for_each_block(c, [&](std::int64_t s, std::int64_t d) { got.emplace_back(s, d); });
  const std::vector<std::pair<std::int64_t, std::int64_t>> want = {{1, 100},   {3, 107},   {5, 114},
                                                                   {11, 1100}, {13, 1107}, {15, 1114}};
  CHECK(got == want);
  CHECK(runtime::total_blocks({c, c}) == 12);
}

TEST_CASE("rank plans at a million ranks: strided AllGathers move exactly the rank's rows") {
  // node=131072,gpu=8, one axis: the program whose AllGathers used to list 131,072 members' rows.
  const auto sys = engine::parse_system_arg("node=131072,gpu=8");
  const auto r = runtime::resolve_patterns(sys, {{131072, 8}}, {0}, engine::HierarchyKind::ReductionAxes,
                                           "ReduceScatter@(node,Inside) ; ReduceScatter@(node,Parallel(root)) ; "
                                           "AllGather@(node,Inside) ; AllGather@(node,Parallel(root))");
  REQUIRE(r.reaches_goal);
  for (std::int64_t d : {0LL, 524288LL + 5, 1048575LL}) {
    INFO("rank ", d);
    const auto p = runtime::make_rank_plan(r.program, d, false);
    REQUIRE(p.strided);
    REQUIRE(p.units == 1048576);
    // After the two ReduceScatters the rank holds one unit: gpu block, then node block.
    const std::int64_t gpu = d % 8, node = d / 8;
    CHECK(p.steps[1].rs.after.rows.intervals() == Intervals{{gpu * 131072 + node, gpu * 131072 + node + 1}});
    // The first AllGather (8 members, one unit each, 131,072 apart) and the second (131,072
    // members, 8 units each): every copy is one strided copy, whatever the size.
    for (int s : {2, 3}) {
      const auto& rs = p.steps[s].rs;
      CHECK(rs.pre.size() + rs.post.size() + p.final_copies.size() <= 2);
    }
    // What the unpacking writes is exactly the rank's rows, each unit once, read from the staging
    // blocks in member order.
    const auto& last = p.steps[3].rs;
    CHECK(last.after.rows.total() == 1048576);
    std::int64_t written = 0;
    bool once = true, inside = true;
    std::vector<bool> seen(1048576, false);
    for (const auto& c : last.post)
      runtime::for_each_block(c, [&](std::int64_t s, std::int64_t dst) {
        for (std::int64_t i = 0; i < c.units; ++i) {
          once = once && !seen[dst + i];
          seen[dst + i] = true;
        }
        inside = inside && s + c.units <= 1048576;
        written += c.units;
      });
    CHECK(once);
    CHECK(inside);
    CHECK((last.post.empty() || written == 1048576));
  }
}

TEST_CASE("rank plans where ReduceScatter blocks do not follow the digits list the members") {
  // docs/shape.md's minimal witness ([1 2 2 3], 12 devices): after RS a ; RS b ; AG a, the
  // ReduceScatter over c splits runs of 3 into thirds across the runs. Every rank's plan equals
  // its part of the global plan, planned by listing the AllGather members.
  const auto sys = engine::parse_system_arg("a=2,b=2,c=3");
  const std::string prog =
      "ReduceScatter@(a,Parallel(root)) ; ReduceScatter@(b,Parallel(a)) ; AllGather@(a,Parallel(root)) ; "
      "ReduceScatter@(b,Inside) ; AllGather@(b,Inside) ; AllGather@(b,Parallel(a))";
  const auto r = runtime::resolve_patterns(sys, {{2, 2, 3}}, {0}, engine::HierarchyKind::ReductionAxes, prog);
  REQUIRE(r.reaches_goal);
  for (std::int64_t d = 0; d < 12; ++d) {
    const auto p = runtime::make_rank_plan(r.program, d, true);
    CHECK_FALSE(p.strided);
    CHECK(runtime::check_against_global(r.program, d) == "");
  }
}
