#include <doctest/doctest.h>

#include <filesystem>

#include "p2v/engine/counting.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

using namespace p2v::engine;

namespace {

// Replays p with both semantics; checks each step's counting state against the boolean one:
// same owned rows, multiplicities 0/1 on owned rows, support = the boolean column sets.
void check_agreement(int k, const LoweredProgram& p) {
  StateSet b = StateSet::initial(k), nb(k);
  CountState c(k);
  for (std::size_t t = 0; t < p.size(); ++t) {
    std::string why;
    REQUIRE_MESSAGE(b.apply(p[t].collective, p[t].groups, nb, &why), why);
    b = nb;
    c.apply(p[t]);
    bool ok = true;
    for (int d = 0; d < k && ok; ++d) {
      ok = c.rows(d) == b.rows(d);
      for (int r : c.rows(d))
        for (int j = 0; j < k; ++j) {
          const auto m = c.mult(d, r, j);
          ok = ok && (m == 0 || m == 1) && (m == 1) == b.get(d, r, j);
        }
      CAPTURE(d);
      CAPTURE(t);
      REQUIRE(ok);
    }
  }
}

}  // namespace

TEST_CASE("counting: the five collectives on 4 devices") {
  CountState s(4);
  s.apply({Collective::ReduceScatter, {{0, 1, 2, 3}}});
  // Member i owns chunk i, the sum over all four devices.
  for (int d = 0; d < 4; ++d) {
    CHECK(s.rows(d) == std::vector<int>{d});
    for (int j = 0; j < 4; ++j) CHECK(s.mult(d, d, j) == 1);
  }
  s.apply({Collective::AllGather, {{0, 1, 2, 3}}});
  CHECK(!first_difference(s, run_counting(4, {{Collective::AllReduce, {{0, 1, 2, 3}}}})));
  // AllReduce twice multiplies by the group size.
  s.apply({Collective::AllReduce, {{0, 1}, {2, 3}}});
  CHECK(s.mult(0, 2, 3) == 2);
  s.apply({Collective::Reduce, {{0, 2}}});
  CHECK(s.rows(2).empty());
  CHECK(s.mult(0, 1, 1) == 4);
  s.apply({Collective::Broadcast, {{0, 1, 2, 3}}});
  for (int d = 0; d < 4; ++d) CHECK(s.mult(d, 3, 0) == 4);
  CHECK_THROWS_AS(s.apply({Collective::AllReduce, {{0, 1}, {1, 2}}}), p2v::Error);
  CHECK_THROWS_AS(s.apply({Collective::AllReduce, {{0, 7}}}), p2v::Error);
}

TEST_CASE("counting: ReduceScatter's layout follows the member order") {
  CountState s(4);
  s.apply({Collective::ReduceScatter, {{3, 2, 1, 0}}});
  CHECK(s.rows(3) == std::vector<int>{0});
  CHECK(s.rows(0) == std::vector<int>{3});
  const auto d = first_difference(s, run_counting(4, {{Collective::ReduceScatter, {{0, 1, 2, 3}}}}));
  REQUIRE(d);
  CHECK(d->device == 0);
  CHECK(d->row == 0);
  // Device 0 owns row 3 on the left, row 0 on the right.
  CHECK(!d->lhs);
  REQUIRE(d->rhs);
  CHECK(*d->rhs == 1);
}

TEST_CASE("counting agrees with the boolean semantics on every synthesized program of the bundled systems") {
  namespace fs = std::filesystem;
  int programs = 0;
  for (const auto& f : fs::directory_iterator(fs::path(P2V_SOURCE_DIR) / "examples" / "systems")) {
    if (f.path().extension() != ".json") continue;
    const System sys = load_system_file(f.path().string());
    const auto cards = sys.cardinalities();
    std::vector<int> axes;
    for (int c : cards)
      if (c > 1) axes.push_back(c);
    std::vector<std::vector<int>> reductions;
    for (int a = 0; a < static_cast<int>(axes.size()); ++a) reductions.push_back({a});
    if (axes.size() > 1) reductions.push_back({0, 1});
    for (const auto& red : reductions)
      for (const auto& x : enumerate_matrices(cards, axes)) {
        Placement p(cards, axes, x, red);
        SynthOptions o;
        o.max_size = 4;
        const auto r = synthesize(p, sys.level_names(), HierarchyKind::ReductionAxes, o);
        CAPTURE(f.path().string());
        CAPTURE(format_matrix(x));
        for (const auto& prog : r.programs) {
          CAPTURE(program_name(r, prog));
          check_agreement(p.num_devices(), lower(r, prog));
          ++programs;
        }
      }
  }
  MESSAGE(programs << " programs checked");
  CHECK(programs > 100);
}

#include "p2v/engine/rules.hpp"

TEST_CASE("rules: every rule holds or fails under the counting semantics as catalogued, up to 16 devices") {
  for (const auto& rule : rule_catalog()) {
    CAPTURE(rule.id);
    int refuted = 0, shapes = 0;
    for (const auto& shape : grid_shapes(rule.arity, 16)) {
      const auto d = compare_counting(run_side(rule.lhs, shape), run_side(rule.rhs, shape), rule.compare);
      if (rule.holds) CHECK_MESSAGE(!d, d->describe());
      refuted += d ? 1 : 0;
      ++shapes;
    }
    CHECK(shapes > 0);
    if (!rule.holds) CHECK(refuted > 0);
  }
  CHECK_THROWS_AS(find_rule("nope"), p2v::Error);
  // The grid layout: {b,a} orders members column-major.
  const auto lp = lower_grid({GridStep{Collective::ReduceScatter, {1, 0}, -1, -1, 0}}, {2, 3});
  REQUIRE(lp[0].groups.size() == 1);
  CHECK(lp[0].groups[0] == std::vector<int>{0, 3, 1, 4, 2, 5});
}

#include "p2v/engine/derive.hpp"
#include "p2v/engine/notation.hpp"

TEST_CASE("derivation: every derived program equals AllReduce and is enumerated; the differences are explained") {
  const System sys = load_system_file(std::string(P2V_SOURCE_DIR) + "/examples/systems/a100-4node.json");
  for (int red : {0, 1}) {
    for (const auto& x : enumerate_matrices(sys.cardinalities(), {4, 16})) {
      Placement p(sys.cardinalities(), {4, 16}, x, {red});
      DeriveOptions o;
      o.max_size = 5;
      const auto c = compare_with_enumerator(p, sys.level_names(), o);
      CAPTURE(format_matrix(x));
      CHECK(c.only_derived.empty());
      CHECK(c.common == static_cast<std::int64_t>(c.derived.programs.size()));
      CHECK(c.common + static_cast<std::int64_t>(c.only_enumerator.size()) == c.enumerated);
      const RuleMoves m(c.hierarchy, o.master);
      const LoweredProgram ar{{Collective::AllReduce, p.reduction_groups()}};
      for (const auto& d : c.derived.programs) {
        CHECK(m.equal(d.program, ar));
        CHECK(d.derivation.size() + 1 >= d.program.size() / 2);
        // The notation round-trips.
        CHECK(resolve_program(c.hierarchy, program_notation(c.hierarchy, d.program)) == d.program);
      }
      for (const auto& e : c.only_enumerator) CHECK(!e.reason.empty());
      if (c.enumerated > 3) {
        CHECK(c.common >= 30);  // the hierarchical and 2-D programs are all derived
        bool hier = false;
        for (const auto& d : c.derived.programs)
          for (const auto& a : d.derivation) hier = hier || a.rule == "ar-hier";
        CHECK(hier);
      }
    }
  }
}
