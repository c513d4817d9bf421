// Shape vs concrete (docs/shape.md §6): for every shape up to depth 4 over cardinalities 2..5
// (single- and multi-axis placements, levels of cardinality 1 in between, both Master settings),
// synthesis on the shape gives the same programs, in the same order and notation, as synthesis on
// the concrete devices, and every step's level pattern lowers to exactly the concrete groups.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <functional>

#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"

using namespace p2v::engine;

namespace {

struct Tally {
  int placements = 0;
  long long programs = 0;
};

std::vector<std::string> notation(const SynthResult& r) {
  std::vector<std::string> v;
  for (const auto& p : r.programs) v.push_back(program_name(r, p));
  return v;
}

// Compares shape and concrete synthesis (and lowering) on one placement.
void compare(const std::vector<int>& levels, const std::vector<int>& axes, const ParallelismMatrix& x,
             const std::vector<int>& reduce, HierarchyKind kind, MasterCollectives mc, Tally& t) {
  std::vector<std::string> names;
  for (std::size_t j = 0; j < levels.size(); ++j) names.push_back(fmt::format("l{}", j));
  const Placement p(levels, axes, x, reduce);
  SynthOptions o;
  o.master = mc;
  const SynthResult concrete = synthesize(p, names, kind, o);
  const Shape s = make_shape(levels, names, x, reduce, kind);
  const SynthResult symbolic = synthesize_shape(s, o);
  INFO("levels ", fmt::format("{}", levels), " axes ", fmt::format("{}", axes), " matrix ", format_matrix(x),
       " reduce ", fmt::format("{}", reduce), " kind ", to_string(kind), " master ",
       mc == MasterCollectives::All ? "all" : "allreduce");
  REQUIRE(symbolic.hierarchy.names == concrete.hierarchy.names);
  REQUIRE(notation(symbolic) == notation(concrete));
  CHECK(s.group_size() == concrete.hierarchy.num_local());
  // Every instruction of the shape lowers to the concrete instruction of the same name.
  REQUIRE(symbolic.instructions.size() == concrete.instructions.size());
  for (std::size_t i = 0; i < symbolic.instructions.size(); ++i) {
    const auto& gs = symbolic.instructions[i].grouping;
    const auto& gc = concrete.instructions[i].grouping;
    REQUIRE(instruction_name(symbolic.hierarchy, symbolic.instructions[i]) ==
            instruction_name(concrete.hierarchy, concrete.instructions[i]));
    const GroupPattern g = group_pattern(s, gs.slice, gs.form, gs.e);
    const Groups want = lower_groups(concrete.hierarchy, gc.groups);
    REQUIRE(lower_pattern(g, s) == want);
    CHECK(g.num_groups == static_cast<std::int64_t>(want.size()));
    CHECK(g.group_size == static_cast<std::int64_t>(want[0].size()));
    // What a rank computes for itself: its group's first member and its place in the group.
    for (std::size_t gi = 0; gi < want.size(); ++gi)
      for (std::size_t m = 0; m < want[gi].size(); ++m)
        CHECK(group_of(g, s, want[gi][m]) == std::pair<std::int64_t, int>{want[gi][0], static_cast<int>(m)});
  }
  ++t.placements;
  t.programs += static_cast<long long>(concrete.programs.size());
}

// Every cardinality vector of length `depth` over 2..hi whose product is at most `max_k`.
void for_each_cards(int depth, int hi, long long max_k, const std::function<void(const std::vector<int>&)>& f) {
  std::vector<int> c(depth, 2);
  while (true) {
    long long k = 1;
    for (int v : c) k *= v;
    if (k <= max_k) f(c);
    int i = depth - 1;
    while (i >= 0 && c[i] == hi) c[i--] = 2;
    if (i < 0) return;
    ++c[i];
  }
}

}  // namespace

TEST_CASE("single axis: every shape up to depth 4, cardinalities 2..5, both Master settings") {
  Tally t;
  for (auto mc : {MasterCollectives::AllReduceOnly, MasterCollectives::All})
    for (int depth = 1; depth <= 4; ++depth)
      for_each_cards(depth, 5, depth == 4 ? 100 : 125, [&](const std::vector<int>& c) {
        int k = 1;
        for (int v : c) k *= v;
        compare(c, {k}, {c}, {0}, HierarchyKind::ReductionAxes, mc, t);
      });
  MESSAGE(t.placements, " placements, ", t.programs, " programs compared");
  CHECK(t.placements > 2 * (4 + 16 + 64));
}

TEST_CASE("levels of cardinality 1 between reduced levels: they vanish from the shape") {
  Tally t;
  // A non-reduced axis owns the middle (or outer) level; the reduced axis skips it.
  for (auto mc : {MasterCollectives::AllReduceOnly, MasterCollectives::All})
    for (int a : {2, 3, 4})
      for (int b : {2, 3, 5})
        for (int f : {2, 3}) {
          compare({a, f, b}, {a * b, f}, {{a, 1, b}, {1, f, 1}}, {0}, HierarchyKind::ReductionAxes, mc, t);
          compare({f, a, b}, {a * b, f}, {{1, a, b}, {f, 1, 1}}, {0}, HierarchyKind::ReductionAxes, mc, t);
          compare({a, b, f}, {f, a * b}, {{1, 1, f}, {a, b, 1}}, {1}, HierarchyKind::ReductionAxes, mc, t);
        }
  MESSAGE(t.placements, " placements compared");
}

TEST_CASE("multi-axis: every matrix of two- and three-axis placements, collapsed and uncollapsed (d)") {
  Tally t;
  struct Case {
    std::vector<int> levels, axes, reduce;
  };
  const std::vector<Case> cases = {
      {{4, 6}, {4, 6}, {0}},
      {{4, 6}, {4, 6}, {1}},
      {{4, 6}, {6, 4}, {0, 1}},
      {{2, 3, 4}, {6, 4}, {0}},
      {{2, 3, 4}, {6, 4}, {1}},
      {{2, 3, 4}, {2, 3, 4}, {0, 2}},
      {{3, 2, 2, 3}, {6, 6}, {0}},
      {{3, 2, 2, 3}, {6, 6}, {1}},
      {{2, 2, 3, 2}, {2, 3, 4}, {1, 2}},
      {{5, 2, 3}, {10, 3}, {0}},
      {{2, 5, 2, 2}, {5, 4, 2}, {0, 1}},
  };
  for (const auto& c : cases)
    for (const auto& x : enumerate_matrices(c.levels, c.axes))
      for (auto kind : {HierarchyKind::ReductionAxes, HierarchyKind::ReductionUncollapsed})
        for (auto mc : {MasterCollectives::AllReduceOnly, MasterCollectives::All}) {
          long long k = 1;
          for (int i : c.reduce)
            for (int v : x[i]) k *= v;
          if (kind == HierarchyKind::ReductionUncollapsed) {
            // Uncollapsed (d) has one level per factor: keep it to depth 4.
            int wide = 0;
            for (int i : c.reduce)
              for (int v : x[i]) wide += v > 1;
            if (wide > 4) continue;
          }
          if (k > 128) continue;
          compare(c.levels, c.axes, x, c.reduce, kind, mc, t);
        }
  MESSAGE(t.placements, " placements compared");
  CHECK(t.placements > 100);
}

TEST_CASE("the shape does not grow with the system: 2^20 devices cost what 16 cost") {
  const std::vector<std::string> names = {"pod", "rack", "node", "gpu"};
  const Shape big = make_shape({16, 32, 32, 64}, names, {{16, 32, 32, 64}}, {0}, HierarchyKind::ReductionAxes);
  const Shape small = make_shape({2, 2, 2, 2}, names, {{2, 2, 2, 2}}, {0}, HierarchyKind::ReductionAxes);
  CHECK(big.signature() == small.signature());
  CHECK(big.num_devices() == (1 << 20));
  SynthOptions o;
  const SynthResult rb = synthesize_shape(big, o), rs = synthesize_shape(small, o);
  CHECK(notation(rb) == notation(rs));
  CHECK(rb.programs.size() == 3408);
  // A step's groups as a pattern: counts and sizes from the real cardinalities, no device lists.
  const auto& in = rb.instructions[0];  // AllReduce@(root,Inside): everyone
  const GroupPattern g = group_pattern(big, in.grouping.slice, in.grouping.form, in.grouping.e);
  CHECK(g.group_size == (1 << 20));
  CHECK(g.num_groups == 1);
  CHECK_THROWS_WITH_AS(lower_pattern(g, big), doctest::Contains("limited to 65536 devices"), p2v::Error);
  // A rank's own group from its coordinates: device 2^20 - 1 is the last member of the one group.
  CHECK(group_of(g, big, (1 << 20) - 1) == std::pair<std::int64_t, int>{0, (1 << 20) - 1});
}

TEST_CASE("too many levels for the smallest instance is refused with the limit") {
  std::vector<int> c(10, 2);
  std::vector<std::string> names;
  for (int j = 0; j < 10; ++j) names.push_back(fmt::format("l{}", j));
  const Shape s = make_shape(c, names, {c}, {0}, HierarchyKind::ReductionAxes);
  CHECK_THROWS_WITH_AS(synthesize_shape(s, SynthOptions{}), doctest::Contains("at most 9"), p2v::Error);
}

// docs/shape.md §3: held rows are not always digit-fixed sets. On [1 2 2 3] (levels a, b, c),
// RS over a ; RS over b ; AG over a ; RS over c leaves device (0,0,1) with rows {2,6}, which fix no
// digit of 12 in any radix; the step is valid all the same, and the program reaches the goal.
TEST_CASE("the minimal witness where the digit view of ReduceScatter breaks, and why it does not matter") {
  const auto h = make_plain_hierarchy({1, 2, 2, 3}, {"root", "a", "b", "c"});
  auto grouping = [&](int slice, FormKind f, int e) { return form_groups(h, slice, f, e); };
  const std::vector<std::pair<Collective, Groups>> prog = {
      {Collective::ReduceScatter, grouping(1, FormKind::Parallel, 0)},  // varies a
      {Collective::ReduceScatter, grouping(2, FormKind::Parallel, 1)},  // varies b
      {Collective::AllGather, grouping(1, FormKind::Parallel, 0)},      // varies a
      {Collective::ReduceScatter, grouping(2, FormKind::Inside, -1)},   // varies c
      {Collective::AllGather, grouping(2, FormKind::Inside, -1)},
      {Collective::AllGather, grouping(2, FormKind::Parallel, 1)},
  };
  StateSet s = StateSet::initial(12);
  for (std::size_t t = 0; t < prog.size(); ++t) {
    StateSet next(12);
    std::string why;
    REQUIRE_MESSAGE(s.apply(prog[t].first, prog[t].second, next, &why), why);
    s = next;
    if (t == 3) CHECK(s.rows(1) == std::vector<int>{2, 6});  // device (a,b,c) = (0,0,1)
  }
  CHECK(s == StateSet::goal(12, {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}));
}
