// The per-level symbolic encoding (encodings/symbolic.hpp): its state form, and the three-way
// cross-check on small shapes — the enumerator, the concrete encoding and the per-level encoding
// (found by the solver with blocking clauses, and confirmed by the closure) give the same program
// sets, with both solvers; wrong sets and problems outside the encoding are refused.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <numeric>

#include "p2v/encodings/search.hpp"
#include "p2v/encodings/symbolic.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/replay.hpp"
#include "p2v/engine/synth.hpp"

using namespace p2v;
using namespace p2v::encodings;
using smt::SolverKind;

namespace {

engine::Groups all_local(const engine::SynthesisHierarchy& h) {
  std::vector<int> all(static_cast<std::size_t>(h.num_local()));
  std::iota(all.begin(), all.end(), 0);
  return {all};
}

struct Case {
  std::vector<int> cards;
  int L;
};

}  // namespace

TEST_CASE("per-level form: every state of every program has one, and it gives the state back") {
  for (const auto& cards : {std::vector<int>{1, 2, 2}, std::vector<int>{1, 2, 2, 2}, std::vector<int>{1, 2, 2, 1}}) {
    const auto h = engine::make_plain_hierarchy(cards);
    engine::SynthOptions so;
    so.max_size = 4;
    const auto r = engine::synthesize(h, all_local(h), so);
    REQUIRE(r.programs.size() > 10);
    for (const auto& prog : r.programs) {
      const auto t = engine::replay(r, prog);
      REQUIRE(t.failed_step < 0);
      for (const auto& st : t.states) {
        const auto pl = per_level_state(st);
        REQUIRE(pl.has_value());
        CHECK(concrete_state(*pl) == st);
      }
    }
    // The goal: nothing fixed, every column everywhere.
    const auto goal = per_level_state(engine::StateSet::goal(h.num_local(), all_local(h)));
    REQUIRE(goal.has_value());
    for (int b : goal->fixed) CHECK(b == -1);
  }
  // Not row-uniform (device 0 holds row 0 with column 0 and row 1 with columns 0 and 1): no form.
  engine::StateSet s = engine::StateSet::initial(4);
  s.set(0, 1, 1);
  CHECK_FALSE(per_level_state(s).has_value());
  // Rows not fixed to a level digit: device 0 holds rows {0, 3} only.
  engine::StateSet u = engine::StateSet::goal(4, {{0, 1, 2, 3}});
  for (int j = 0; j < 4; ++j) {
    u.set(0, 1, j, false);
    u.set(0, 2, j, false);
  }
  CHECK_FALSE(per_level_state(u).has_value());
}

TEST_CASE("three-way cross-check: enumerator == concrete encoding == per-level encoding, both solvers") {
  // Shapes of depth 1-3, a trivial leaf (Master groupings vary the last non-trivial level) and a
  // trivial level in between.
  for (const Case& c :
       {Case{{1, 2}, 5}, Case{{1, 2, 2}, 5}, Case{{1, 2, 2, 1}, 5}, Case{{1, 2, 1, 2}, 4}, Case{{1, 2, 2, 2}, 3}}) {
    CAPTURE(c.cards.size());
    CAPTURE(c.L);
    const auto h = engine::make_plain_hierarchy(c.cards);
    engine::SynthOptions so;
    so.max_size = c.L;
    const auto r = engine::synthesize(h, all_local(h), so);
    REQUIRE(!r.programs.empty());
    const auto sp = make_search_problem(h, r.instructions, all_local(h));
    REQUIRE(per_level_unsupported(sp).empty());
    const auto closure = confirm_by_symbolic_closure({SolverKind::Z3, SolverKind::Cvc5}, sp, r.programs, c.L);
    for (auto kind : {SolverKind::Z3, SolverKind::Cvc5}) {
      CAPTURE(smt::to_string(kind));
      const auto pl = enumerate_programs_per_level(kind, sp, c.L);
      CHECK(pl.programs == r.programs);
      const auto sh = find_shortest_per_level(kind, sp, c.L);
      CHECK(sh.shortest == static_cast<int>(r.programs.front().size()));
      // The concrete encoding: finding every program (4 devices), or confirming them by its
      // closure (8 devices, where finding them one by one takes minutes).
      const auto conc = sp.k <= 4 ? enumerate_programs(kind, sp, c.L) : confirm_by_closure(kind, sp, r.programs, c.L);
      CHECK(conc.programs == r.programs);
    }
    for (const auto& run : closure) {
      CHECK(run.method == RunMethod::SymbolicClosure);
      CHECK(run.programs == r.programs);
      CHECK(run.closure_states > 0);
    }
    MESSAGE(c.cards.size(), " levels, L = ", c.L, ": ", r.programs.size(), " programs, ", closure[0].closure_states,
            " states closed in the per-level encoding");
    // A set missing a program, or with one more, is refused.
    if (r.programs.size() > 2) {
      auto missing = r.programs;
      missing.erase(missing.begin() + 1);
      CHECK_THROWS_AS(confirm_by_symbolic_closure({SolverKind::Z3}, sp, missing, c.L), Error);
      auto extra = r.programs;
      extra.push_back(r.programs.back());
      extra.back().push_back(extra.back().front());
      if (static_cast<int>(extra.back().size()) <= c.L)
        CHECK_THROWS_AS(confirm_by_symbolic_closure({SolverKind::Cvc5}, sp, extra, c.L), Error);
    }
  }
}

TEST_CASE("per-level encoding: where it does not apply, it says why and refuses") {
  engine::SynthOptions so;
  so.max_size = 3;
  {  // a level of cardinality 3: 6 devices, not a power of two
    const auto h = engine::make_plain_hierarchy({1, 3, 2});
    const auto r = engine::synthesize(h, all_local(h), so);
    const auto sp = make_search_problem(h, r.instructions, all_local(h));
    CHECK(per_level_unsupported(sp).find("power of two") != std::string::npos);
    CHECK_THROWS_AS(confirm_by_symbolic_closure({SolverKind::Z3}, sp, r.programs, 3), Error);
    CHECK_THROWS_AS(enumerate_programs_per_level(SolverKind::Z3, sp, 3), Error);
  }
  {  // --master-collectives all: Lemma 1 fails (a Master group scatters rows)
    so.master = engine::MasterCollectives::All;
    const auto h = engine::make_plain_hierarchy({1, 2, 2});
    const auto r = engine::synthesize(h, all_local(h), so);
    const auto sp = make_search_problem(h, r.instructions, all_local(h));
    CHECK(per_level_unsupported(sp).find("master-collectives all") != std::string::npos);
  }
  {  // several goal groups (hierarchy (a) over two reduction groups)
    const auto h = engine::make_plain_hierarchy({1, 2, 2});
    so.master = engine::MasterCollectives::AllReduceOnly;
    const auto r = engine::synthesize(h, {{0, 1}, {2, 3}}, so);
    const auto sp = make_search_problem(h, r.instructions, {{0, 1}, {2, 3}});
    CHECK(per_level_unsupported(sp).find("goal") != std::string::npos);
  }
  CHECK(parse_encoding_choice("symbolic") == EncodingChoice::PerLevel);
  CHECK(parse_encoding_choice("concrete") == EncodingChoice::Concrete);
  CHECK_THROWS_AS(parse_encoding_choice("fast"), Error);
}
