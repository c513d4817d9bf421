// engine::ProgramSource: which programs a placement has (shape, exact fallback or concrete).
#include <doctest/doctest.h>

#include <algorithm>

#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/programs.hpp"
#include "p2v/engine/system.hpp"

using namespace p2v::engine;

namespace {

// The programs' notations, in the result's order.
std::vector<std::string> notations(const SynthResult& r) {
  std::vector<std::string> v(r.programs.size());
  std::transform(r.programs.begin(), r.programs.end(), v.begin(), [&](const Program& p) { return program_name(r, p); });
  return v;
}

ProgramsOptions master_all() {
  ProgramsOptions o;
  o.synth.master = MasterCollectives::All;
  return o;
}

}  // namespace

TEST_CASE("programs_for: the shape's list, synthesized once per shape, where the theorem is proved") {
  const System s = parse_system_inline("node=4,gpu=8");
  ProgramSource src(s, {8, 4}, {});
  const auto a = src.programs_for({{2, 4}, {2, 2}}, {0});
  REQUIRE(a.path == ProgramsPath::Shape);
  CHECK(a.first_of_shape);
  CHECK(a.unproved.empty());
  CHECK(a.cards == a.shape->cards());
  // Another placement of the same shape shares the list.
  const auto b = src.programs_for({{4, 2}, {1, 4}}, {0});
  REQUIRE(b.shape_key() == a.shape_key());
  CHECK_FALSE(b.first_of_shape);
  CHECK(b.result == a.result);
  // The shape's list is the system's (docs/shape.md §3) and lowers to the same groups.
  const auto exact = synthesize(Placement(s.cardinalities(), {8, 4}, {{4, 2}, {1, 4}}, {0}), s.level_names(),
                                HierarchyKind::ReductionAxes, {});
  REQUIRE(notations(*b.result) == notations(exact));
  for (std::size_t i = 0; i < exact.programs.size(); ++i)
    CHECK(b.lower(b.result->programs[i]) == lower(exact, exact.programs[i]));
}

TEST_CASE("programs_for: where the shape theorem is not proved, small reduction groups are exact") {
  // --master-collectives all at depth 3 with unequal cardinalities: "no other program" is checked, not
  // proved (docs/shape.md §3.3, §3.5; depth <= 2 is proved, §3.4, and depth 3 with equal ones, §3.5).
  const System s = parse_system_inline("rack=2,node=2,gpu=3");
  ProgramSource src(s, {12}, master_all());
  const auto p = src.programs_for({{2, 2, 3}}, {0});
  REQUIRE(p.path == ProgramsPath::ExactFallback);
  CHECK_FALSE(p.on_shape());
  CHECK(p.shape_key().empty());
  CHECK(p.unproved.empty());
  const auto exact = synthesize(Placement(s.cardinalities(), {12}, {{2, 2, 3}}, {0}), s.level_names(),
                                HierarchyKind::ReductionAxes, master_all().synth);
  CHECK(notations(*p.result) == notations(exact));
  CHECK(p.cards == std::vector<std::int64_t>{1, 2, 2, 3});
  // The system's hierarchy has the shape's levels: every step has a level pattern.
  REQUIRE(p.shape);
  for (const auto& prog : p.result->programs) {
    const auto pats = p.patterns(prog);
    const auto low = p.lower(prog);
    REQUIRE(pats.size() == low.size());
    for (std::size_t k = 0; k < pats.size(); ++k) CHECK(lower_pattern(pats[k], *p.shape) == low[k].groups);
  }
}

TEST_CASE("programs_for: unproved shapes above the fallback size keep the shape's list and say why") {
  const System s = parse_system_inline("rack=2,node=32,gpu=8");
  ProgramSource src(s, {512}, master_all());
  const auto p = src.programs_for({{2, 32, 8}}, {0});
  REQUIRE(p.path == ProgramsPath::Shape);
  CHECK(p.shape->group_size() > kExactFallbackDevices);
  CHECK(p.unproved.find("not proved") != std::string::npos);
  CHECK(p.first_of_shape);
}

TEST_CASE("programs_for: --master-collectives all at depth 2 is proved, on the shape") {
  // docs/shape.md §3.4: both directions proved at depth <= 2, so no exact fallback and nothing unproved.
  const System s = parse_system_inline("node=2,gpu=4");
  ProgramSource src(s, {8}, master_all());
  const auto p = src.programs_for({{2, 4}}, {0});
  CHECK(p.path == ProgramsPath::Shape);
  CHECK(p.unproved.empty());
  const auto exact = synthesize(Placement(s.cardinalities(), {8}, {{2, 4}}, {0}), s.level_names(),
                                HierarchyKind::ReductionAxes, master_all().synth);
  CHECK(notations(*p.result) == notations(exact));
}

TEST_CASE("programs_for: --master-collectives all at depth 3 with equal cardinalities is proved, on the shape") {
  // docs/shape.md §3.5, Theorem 4: both directions proved for [n n n], so no exact fallback (and for
  // [n n n n], §3.6, below).
  for (const char* sys : {"rack=2,node=2,gpu=2", "rack=3,node=3,gpu=3"}) {
    CAPTURE(sys);
    const System s = parse_system_inline(sys);
    const int k = static_cast<int>(s.num_devices());
    const int c = s.cardinalities()[0];
    ProgramSource src(s, {k}, master_all());
    const auto p = src.programs_for({{c, c, c}}, {0});
    CHECK(p.path == ProgramsPath::Shape);
    CHECK(p.unproved.empty());
    const auto exact = synthesize(Placement(s.cardinalities(), {k}, {{c, c, c}}, {0}), s.level_names(),
                                  HierarchyKind::ReductionAxes, master_all().synth);
    CHECK(notations(*p.result) == notations(exact));
  }
  const System s4 = parse_system_inline("pod=2,rack=2,node=2,gpu=2");
  ProgramSource src4(s4, {16}, master_all());
  const auto p4 = src4.programs_for({{2, 2, 2, 2}}, {0});
  CHECK(p4.path == ProgramsPath::Shape);
  CHECK(p4.unproved.empty());
}

TEST_CASE("programs_for: one signature, equal and unequal depth-3 instances: the basis is the placement's") {
  // docs/shape.md §3.5 proves depth 3 under `all` for equal cardinalities only, so placements of one
  // signature (root:1 a:* b:* c:*) differ: a cached per-signature basis let [8 2 4] (64 devices) skip the
  // exact fallback after [4 4 4], and [8 8 16] skip the warning.
  const System s = parse_system_inline("a=8,b=8,c=16");
  ProgramSource src(s, {64, 16}, master_all());
  const auto eq = src.programs_for({{4, 4, 4}, {2, 2, 4}}, {0});  // [4 4 4]: proved, on the shape
  REQUIRE(eq.path == ProgramsPath::Shape);
  CHECK(eq.first_of_shape);
  CHECK(eq.unproved.empty());
  const auto small = src.programs_for({{8, 2, 4}, {1, 4, 4}}, {0});  // [8 2 4], 64 devices: exact
  CHECK(small.path == ProgramsPath::ExactFallback);
  CHECK(small.cards == std::vector<std::int64_t>{1, 8, 2, 4});
  const auto big = src.programs_for({{4, 4, 4}, {2, 2, 4}}, {0, 1});  // [8 8 16]: the shape's list, unproved
  REQUIRE(big.path == ProgramsPath::Shape);
  REQUIRE(big.shape_key() == eq.shape_key());
  CHECK_FALSE(big.first_of_shape);
  CHECK(big.unproved.find("not proved") != std::string::npos);
  CHECK(big.first_unproved_of_shape);  // warned once for the shape's unproved placements
  const auto big2 = src.programs_for({{2, 4, 8}, {4, 2, 2}}, {0, 1});
  CHECK_FALSE(big2.unproved.empty());
  CHECK_FALSE(big2.first_unproved_of_shape);
  const auto eq2 = src.programs_for({{4, 4, 4}, {2, 2, 4}}, {0});
  CHECK(eq2.path == ProgramsPath::Shape);
  CHECK(eq2.unproved.empty());
}

TEST_CASE("programs_for: --concrete and hierarchies (a)-(c) synthesize on the system") {
  const System s = parse_system_inline("node=2,gpu=4");
  ProgramsOptions c;
  c.concrete = true;
  ProgramSource concrete(s, {8}, c);
  const auto p = concrete.programs_for({{2, 4}}, {0});
  CHECK(p.path == ProgramsPath::Concrete);
  CHECK(p.shape);  // (d): level patterns still exist
  ProgramsOptions a;
  a.kind = HierarchyKind::System;
  ProgramSource sys(s, {8}, a);
  const auto q = sys.programs_for({{2, 4}}, {0});
  CHECK(q.path == ProgramsPath::Concrete);
  CHECK_FALSE(q.shape);
  CHECK_THROWS_AS((void)q.patterns(q.result->programs.at(0)), p2v::Error);
  // Too many devices per reduction group for the concrete engine: an error naming the limit.
  const System big = parse_system_inline("node=128,gpu=8");
  ProgramSource big_concrete(big, {1024}, c);
  CHECK_THROWS_AS((void)big_concrete.programs_for({{128, 8}}, {0}), p2v::Error);
}
