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

TEST_CASE("summed levels: every state of every program has them; other column sets have none") {
  for (const auto& cards : {std::vector<int>{1, 2, 2}, std::vector<int>{1, 2, 2, 2}, std::vector<int>{1, 2, 2, 1}}) {
    const auto h = engine::make_plain_hierarchy(cards);
    engine::SynthOptions so;
    so.max_size = 4;
    const auto r = engine::synthesize(h, all_local(h), so);
    for (const auto& prog : r.programs)
      for (const auto& st : engine::replay(r, prog).states) {
        const auto pl = per_level_state(st);
        REQUIRE(pl.has_value());
        const auto summed = summed_levels(*pl);
        REQUIRE(summed.has_value());
        // Device x holds the columns j that agree with it outside its summed levels, and only those.
        for (int x = 0; x < st.k(); ++x) {
          const int sx = (*summed)[static_cast<std::size_t>(x)];
          CHECK((sx < 0) == st.rows(x).empty());
          if (sx < 0) continue;
          for (int j = 0; j < st.k(); ++j)
            CHECK(pl->cols[static_cast<std::size_t>(x)][static_cast<std::size_t>(j)] == (((j ^ x) & ~sx) == 0));
        }
      }
  }
  // The initial state sums nothing, the goal every level.
  const auto init = per_level_state(engine::StateSet::initial(4));
  REQUIRE(init.has_value());
  CHECK(*summed_levels(*init) == std::vector<int>{0, 0, 0, 0});
  const auto goal = per_level_state(engine::StateSet::goal(4, {{0, 1, 2, 3}}));
  REQUIRE(goal.has_value());
  CHECK(*summed_levels(*goal) == std::vector<int>{3, 3, 3, 3});
  // Columns {0, 3} (the interval [0, 3] has four elements), columns {1} on device 0 (a cylinder,
  // but around device 1), three columns: none; an empty device is -1.
  PerLevelState s = *init;
  s.cols[0] = {true, false, false, true};
  CHECK_FALSE(summed_levels(s).has_value());
  s.cols[0] = {false, true, false, false};
  CHECK_FALSE(summed_levels(s).has_value());
  s.cols[0] = {true, true, true, false};
  CHECK_FALSE(summed_levels(s).has_value());
  s.cols[0] = {true, true, false, false};
  s.cols[2] = std::vector<bool>(4, false);
  CHECK(*summed_levels(s) == std::vector<int>{1, 0, -1, 0});
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
    // The closure with every device's columns as k bits instead of summed levels: the same
    // programs, over at least as many states.
    SearchOptions sets;
    sets.closure_column_sets = true;
    const auto closure_sets =
        confirm_by_symbolic_closure({SolverKind::Z3, SolverKind::Cvc5}, sp, r.programs, c.L, sets);
    for (std::size_t q = 0; q < closure.size(); ++q) {
      const auto& run = closure[q];
      CHECK(run.method == RunMethod::SymbolicClosure);
      CHECK(run.programs == r.programs);
      CHECK(run.closure_states > 0);
      CHECK(run.summed_levels);
      CHECK_FALSE(closure_sets[q].summed_levels);
      CHECK(closure_sets[q].programs == r.programs);
      CHECK(closure_sets[q].closure_states >= run.closure_states);
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

TEST_CASE("summed levels: where a program passes other column sets, the closure keeps the column sets") {
  // Four devices (two levels); every collective on the full groupings, and AllReduce also on each
  // single group (groups that do not cover every device, as Master groupings are). Some programs then
  // pass a state whose columns are not summed levels: AllReduce on {2, 3} alone, then on {0, 2}
  // alone, leaves devices 0 and 2 with columns {0, 2, 3}; AllReduce on {0, 1} alone and a Broadcast
  // over the second level reach the goal.
  SearchProblem p;
  p.k = 4;
  p.goal_groups = {{0, 1, 2, 3}};
  for (int v : {1, 2, 3}) {
    engine::Groups full;
    for (int root = 0; root < 4; ++root) {
      if ((root & v) != 0) continue;
      full.emplace_back();
      for (int x = 0; x < 4; ++x)
        if ((x & ~v) == root) full.back().push_back(x);
    }
    for (auto c : {engine::Collective::AllReduce, engine::Collective::ReduceScatter, engine::Collective::AllGather,
                   engine::Collective::Reduce, engine::Collective::Broadcast})
      p.instructions.push_back({c, full});
    if (full.size() > 1)
      for (const auto& g : full) p.instructions.push_back({engine::Collective::AllReduce, {g}});
  }
  REQUIRE(per_level_unsupported(p).empty());
  const auto programs = enumerate_programs(SolverKind::Z3, p, 5).programs;
  REQUIRE(programs.size() > 100);
  // Some program passes a state with a per-level form whose columns are not summed levels.
  bool other = false;
  for (const auto& prog : programs) {
    engine::StateSet st = engine::StateSet::initial(4), next(4);
    for (int i : prog) {
      REQUIRE(st.apply(p.instructions[static_cast<std::size_t>(i)].collective,
                       p.instructions[static_cast<std::size_t>(i)].groups, next));
      st = next;
      const auto pl = per_level_state(st);
      REQUIRE(pl.has_value());
      other = other || !summed_levels(*pl).has_value();
    }
  }
  REQUIRE(other);
  for (const auto& run : confirm_by_symbolic_closure({SolverKind::Z3, SolverKind::Cvc5}, p, programs, 5)) {
    CHECK(run.programs == programs);
    CHECK_FALSE(run.summed_levels);
  }
  // The per-level search finds them all too (with column sets: summed levels would miss some).
  CHECK(enumerate_programs_per_level(SolverKind::Z3, p, 5).programs == programs);
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
