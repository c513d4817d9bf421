// SMT encodings: enumerator == Z3 == cvc5 on one-, two- and three-level hierarchies and the
// paper's configs; unsat below the shortest program; the choice encodings and incremental mode.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "p2v/encodings/certificate.hpp"
#include "p2v/encodings/search.hpp"
#include "p2v/encodings/smt.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/replay.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

using namespace p2v;
using namespace p2v::encodings;
using smt::SolverKind;

namespace {

std::set<engine::LoweredProgram> lowered_set(const engine::SynthResult& r, const std::vector<engine::Program>& progs) {
  std::set<engine::LoweredProgram> s;
  for (const auto& p : progs) s.insert(engine::lower(r, p));
  return s;
}

// Enumerator vs. both solvers on hierarchy h with goal groups `goal`; returns the program count.
std::size_t differential(const engine::SynthesisHierarchy& h, const engine::Groups& goal, int L,
                         const SearchOptions& opt = {},
                         engine::MasterCollectives mc = engine::MasterCollectives::AllReduceOnly) {
  engine::SynthOptions so;
  so.max_size = L;
  so.master = mc;
  const auto r = engine::synthesize(h, goal, so);
  const auto want = lowered_set(r, r.programs);
  const auto sp = make_search_problem(h, r.instructions, goal);
  for (auto kind : {SolverKind::Z3, SolverKind::Cvc5}) {
    CAPTURE(smt::to_string(kind));
    const auto e = enumerate_programs(kind, sp, L, opt);
    CHECK(e.programs == r.programs);  // same indices, same order (shortest first, lexicographic)
    CHECK(lowered_set(r, e.programs) == want);
    REQUIRE(e.bounds.size() == static_cast<std::size_t>(L));
    for (const auto& b : e.bounds) CHECK(b.final_result == smt::Result::unsat);
    const int shortest = r.programs.empty() ? 0 : static_cast<int>(r.programs.front().size());
    CHECK(e.shortest == shortest);
  }
  return r.programs.size();
}

engine::Groups all_local(const engine::SynthesisHierarchy& h) {
  std::vector<int> v;
  for (int i = 0; i < h.num_local(); ++i) v.push_back(i);
  return {v};
}

}  // namespace

TEST_CASE("smt layer: both backends agree on a small bitvector query") {
  for (auto kind : {SolverKind::Z3, SolverKind::Cvc5}) {
    smt::Solver s(kind);
    CHECK(!s.version().empty());
    auto x = s.bv_var("x", 8), y = s.bv_var("y", 8);
    s.add((x & y) == s.bv_val(8, 0));
    s.add((x | y) == s.bv_val(8, 0xff));
    s.add(smt::ult(x, y));
    s.add(smt::extract(x, 7, 4) == s.bv_val(4, 0));
    s.push();
    s.add(x == s.bv_val(8, 0x0f));
    REQUIRE(s.check() == smt::Result::sat);
    CHECK(s.value_u64(y) == 0xf0);
    s.pop();
    s.add(x == s.bv_val(8, 0x1f));
    CHECK(s.check() == smt::Result::unsat);
  }
}

TEST_CASE("one level: [1 4] and [1 8]") {
  for (int n : {4, 8}) {
    auto h = engine::make_plain_hierarchy({1, n});
    CHECK(differential(h, all_local(h), 5) > 0);
  }
}

TEST_CASE("two levels: docs/model.md Example 5.2, [1 2 4]") {
  auto h = engine::make_plain_hierarchy({1, 2, 4}, {"root", "node", "gpu"});
  const std::size_t n = differential(h, all_local(h), 3);
  CHECK(n > 4);
  // The four programs of Example 5.2 are found by both solvers.
  engine::SynthOptions so;
  so.max_size = 3;
  const auto r = engine::synthesize(h, all_local(h), so);
  const auto z3 = enumerate_programs(SolverKind::Z3, make_search_problem(h, r.instructions, all_local(h)), 3);
  std::set<std::string> names;
  for (const auto& p : z3.programs) names.insert(engine::program_name(r, p));
  CHECK(names.count("AllReduce@(root,Inside)"));
  CHECK(names.count("AllReduce@(node,Inside) ; AllReduce@(node,Parallel(root))"));
  CHECK(names.count("Reduce@(node,Inside) ; AllReduce@(node,Master(root)) ; Broadcast@(node,Inside)"));
  CHECK(names.count("ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; AllGather@(node,Inside)"));
}

TEST_CASE("two levels with uneven factors: [1 3 2] and [1 2 3]") {
  for (auto cards : {std::vector<int>{1, 3, 2}, std::vector<int>{1, 2, 3}}) {
    auto h = engine::make_plain_hierarchy(cards);
    differential(h, all_local(h), 3);
  }
}

TEST_CASE("three levels: [1 2 2 2], and Master with all collectives") {
  auto h = engine::make_plain_hierarchy({1, 2, 2, 2});
  differential(h, all_local(h), 3);
  auto h2 = engine::make_plain_hierarchy({1, 2, 2});
  differential(h2, all_local(h2), 4, {}, engine::MasterCollectives::All);
}

TEST_CASE(
    "design alternatives give the same sets: one-hot, push/pop, non-incremental, last-step lemma, per-row vectors, "
    "per-instruction, functional") {
  auto h = engine::make_plain_hierarchy({1, 2, 2});
  SearchOptions o;
  o.choice = ChoiceEncoding::OneHot;
  differential(h, all_local(h), 4, o);
  o.push_pop = true;
  differential(h, all_local(h), 4, o);
  o.push_pop = false;
  o.incremental = false;
  differential(h, all_local(h), 3, o);
  o.choice = ChoiceEncoding::Binary;
  differential(h, all_local(h), 3, o);
  o.incremental = true;
  o.last_step_lemma = true;
  differential(h, all_local(h), 4, o);
  o.last_step_lemma = false;
  o.per_device = false;  // per-row column vectors
  differential(h, all_local(h), 4, o);
  o.factored = false;
  differential(h, all_local(h), 4, o);
  o.functional = true;
  differential(h, all_local(h), 3, o);
}

// The full reduce-1 cross-check (k = 16, L = 5) takes minutes: `p2v verify` / bench_encodings do it.
TEST_CASE("paper config: 4xA100 [4 16], reduce 0 (L=5) and reduce 1 [[4 1],[1 16]] (L=3), hierarchy (d)") {
  const auto sys = engine::load_system_file(std::string(P2V_SOURCE_DIR) + "/examples/systems/a100-4node.json");
  const std::vector<std::string> names = sys.level_names();
  for (int red : {0, 1}) {
    for (const auto& x : engine::enumerate_matrices(sys.cardinalities(), {4, 16})) {
      CAPTURE(red);
      CAPTURE(engine::format_matrix(x));
      engine::Placement p(sys.cardinalities(), {4, 16}, x, {red});
      auto h = engine::make_hierarchy(p, names, engine::HierarchyKind::ReductionAxes);
      if (red == 1 && h.cards.size() != 2) continue;  // only [1 16] for reduce 1
      CHECK(differential(h, engine::local_goal_groups(h, p), red == 0 ? 5 : 3) > 0);
    }
  }
}

TEST_CASE("hierarchy (a) with several reduction groups as the goal") {
  const auto sys = engine::parse_system_inline("node=2,gpu=2");
  std::vector<std::string> names{"node", "gpu"};
  engine::Placement p(sys.cardinalities(), {2, 2}, {{1, 2}, {2, 1}}, {0});
  for (auto kind :
       {engine::HierarchyKind::System, engine::HierarchyKind::ColumnBased, engine::HierarchyKind::RowBased}) {
    auto h = engine::make_hierarchy(p, names, kind);
    differential(h, engine::local_goal_groups(h, p), 4);
  }
}

TEST_CASE("unsat below the shortest program, and where no program exists") {
  auto h = engine::make_plain_hierarchy({1, 2, 4});
  const auto ins = engine::instructions(h, engine::MasterCollectives::AllReduceOnly);
  // Without the root-level grouping, the shortest program has 2 steps.
  std::vector<engine::Instruction> no_root;
  for (const auto& i : ins)
    if (i.grouping.groups.size() != 1 || i.grouping.groups[0].size() != 8) no_root.push_back(i);
  REQUIRE(no_root.size() < ins.size());
  const auto sp = make_search_problem(h, no_root, all_local(h));
  engine::SynthOptions so;
  for (auto kind : {SolverKind::Z3, SolverKind::Cvc5}) {
    CAPTURE(smt::to_string(kind));
    CHECK_FALSE(find_program(kind, sp, 1).has_value());
    auto two = find_program(kind, sp, 2);
    REQUIRE(two.has_value());
    CHECK(two->size() == 2);
    const auto shortest = find_shortest(kind, sp, 3);
    REQUIRE(shortest.programs.size() == 1);
    CHECK(shortest.programs[0].size() == 2);
    CHECK(shortest.shortest == 2);
    REQUIRE(shortest.bounds.size() == 2);  // stops at the first sat bound
    CHECK(shortest.bounds[0].final_result == smt::Result::unsat);
    CHECK(shortest.bounds[1].final_result == smt::Result::sat);
    CHECK(encoding_accepts(kind, sp, shortest.programs[0]));
    const auto e = enumerate_programs(kind, sp, 2);
    CHECK(e.shortest == 2);
    CHECK(e.bounds[0].programs == 0);
    CHECK(e.bounds[0].final_result == smt::Result::unsat);
    // The encoding accepts the enumerator's programs and rejects an invalid one.
    CHECK(encoding_accepts(kind, sp, *two));
  }
  // Only Broadcasts: no program at all.
  std::vector<engine::Instruction> bc;
  for (const auto& i : ins)
    if (i.collective == engine::Collective::Broadcast) bc.push_back(i);
  const auto sb = make_search_problem(h, bc, all_local(h));
  for (auto kind : {SolverKind::Z3, SolverKind::Cvc5}) {
    const auto e = enumerate_programs(kind, sb, 3);
    CHECK(e.programs.empty());
    CHECK(e.shortest == 0);
  }
  // AllReduce twice on the root is invalid (Example 4.2).
  const auto full = make_search_problem(h, ins, all_local(h));
  int root_ar = -1;
  for (std::size_t i = 0; i < ins.size(); ++i)
    if (ins[i].collective == engine::Collective::AllReduce && ins[i].grouping.groups.size() == 1 &&
        ins[i].grouping.groups[0].size() == 8)
      root_ar = static_cast<int>(i);
  REQUIRE(root_ar >= 0);
  CHECK(encoding_accepts(SolverKind::Z3, full, {root_ar}));
  CHECK_FALSE(encoding_accepts(SolverKind::Z3, full, {root_ar, root_ar}));
  CHECK_FALSE(encoding_accepts(SolverKind::Cvc5, full, {root_ar, root_ar}));
}

TEST_CASE("a time limit gives an error, never a verified answer") {
  auto h = engine::make_plain_hierarchy({1, 4, 4});
  const auto ins = engine::instructions(h, engine::MasterCollectives::AllReduceOnly);
  const auto sp = make_search_problem(h, ins, all_local(h));
  SearchOptions o;
  o.timeout_ms = 1;
  for (auto kind : {SolverKind::Z3, SolverKind::Cvc5}) {
    bool threw = false;
    try {
      (void)enumerate_programs(kind, sp, 5, o);
    } catch (const Error& e) {
      threw = true;
      CHECK(std::string(e.what()).find("unknown") != std::string::npos);
    }
    CHECK(threw);
  }
}

TEST_CASE("the solvers' model states equal the engine's replay, step by step") {
  auto h = engine::make_plain_hierarchy({1, 2, 2});
  engine::SynthOptions so;
  so.max_size = 4;
  const auto r = engine::synthesize(h, all_local(h), so);
  const auto sp = make_search_problem(h, r.instructions, all_local(h));
  SearchOptions o;
  o.keep_states = true;
  for (auto kind : {SolverKind::Z3, SolverKind::Cvc5}) {
    const auto e = enumerate_programs(kind, sp, 4, o);
    REQUIRE(e.programs == r.programs);
    REQUIRE(e.states.size() == e.programs.size());
    for (std::size_t i = 0; i < e.programs.size(); ++i) CHECK(e.states[i] == replay_states(r, e.programs[i]));
  }
}

// docs/shape.md §5: the shape encoding (the concrete encoding of the smallest instance, one state per
// device class), the concrete encoding and the enumerator give identical sets on small systems.
TEST_CASE("shape encoding = concrete encoding = enumerator on small systems") {
  struct Case {
    std::string sys;
    std::vector<int> axes;
    engine::ParallelismMatrix x;
    std::vector<int> reduce;
    int L;
  };
  for (const auto& c : std::vector<Case>{{"node=3,gpu=3", {9}, {{3, 3}}, {0}, 3},
                                         {"node=2,gpu=3", {6}, {{2, 3}}, {0}, 4},
                                         {"a=2,b=3,c=2", {12}, {{2, 3, 2}}, {0}, 2},
                                         {"node=3,gpu=4", {2, 6}, {{1, 2}, {3, 2}}, {1}, 3}}) {
    CAPTURE(c.sys);
    const auto sys = engine::parse_system_arg(c.sys);
    const auto names = sys.level_names();
    engine::SynthOptions so;
    so.max_size = c.L;
    const engine::Placement p(sys.cardinalities(), c.axes, c.x, c.reduce);
    const auto h = engine::make_hierarchy(p, names, engine::HierarchyKind::ReductionAxes);
    const auto concrete = engine::synthesize(h, all_local(h), so);
    const auto shape =
        engine::make_shape(sys.cardinalities(), names, c.x, c.reduce, engine::HierarchyKind::ReductionAxes);
    const auto symbolic = engine::synthesize_shape(shape, so);
    const auto sc = make_search_problem(h, concrete.instructions, all_local(h));
    const auto ss = make_search_problem(symbolic.hierarchy, symbolic.instructions, all_local(symbolic.hierarchy));
    for (auto kind : {SolverKind::Z3, SolverKind::Cvc5}) {
      CAPTURE(smt::to_string(kind));
      const auto ec = enumerate_programs(kind, sc, c.L);
      const auto es = enumerate_programs(kind, ss, c.L);
      std::vector<std::string> nc, ns, ne;
      for (const auto& pr : ec.programs) nc.push_back(engine::program_name(concrete, pr));
      for (const auto& pr : es.programs) ns.push_back(engine::program_name(symbolic, pr));
      for (const auto& pr : concrete.programs) ne.push_back(engine::program_name(concrete, pr));
      CHECK(nc == ne);
      CHECK(ns == ne);
      CHECK(!ne.empty());
    }
  }
}

TEST_CASE("certify: confirming the enumerator's set (closure and per bound) agrees, and a wrong set is refused") {
  for (const auto& cards : {std::vector<int>{1, 2, 2}, std::vector<int>{1, 2, 2, 2}, std::vector<int>{1, 3, 2}}) {
    CAPTURE(cards.size());
    const auto h = engine::make_plain_hierarchy(cards);
    engine::SynthOptions so;
    so.max_size = cards.size() == 4 ? 4 : 5;
    const auto r = engine::synthesize(h, all_local(h), so);
    REQUIRE(r.programs.size() > 2);
    const auto sp = make_search_problem(h, r.instructions, all_local(h));
    for (auto kind : {SolverKind::Z3, SolverKind::Cvc5}) {
      CAPTURE(smt::to_string(kind));
      const auto c = confirm_by_closure(kind, sp, r.programs, so.max_size);
      CHECK(c.method == RunMethod::Closure);
      CHECK(c.programs == r.programs);
      CHECK(c.closure_states > 0);
      CHECK(c.validity_checks > 0);
      CHECK(c.settings.find("logic=") != std::string::npos);
      if (cards.size() < 4) {
        const auto b = confirm_programs(kind, sp, r.programs, so.max_size);
        CHECK(b.programs == r.programs);
        for (const auto& f : b.bounds) CHECK(f.final_result == smt::Result::unsat);
      }
      // A set missing a program: the reference semantics (closure) or the solver (per bound) has it.
      auto missing = r.programs;
      missing.erase(missing.begin() + 1);
      CHECK_THROWS_AS(confirm_by_closure(kind, sp, missing, so.max_size), Error);
      if (cards.size() < 4)
        CHECK_THROWS_WITH_AS(confirm_programs(kind, sp, missing, so.max_size), doctest::Contains("does not list"),
                             Error);
      // A set with an invalid program (the first one with its steps reversed, or doubled).
      auto extra = r.programs;
      engine::Program bad = r.programs.back();
      bad.push_back(bad.front());
      if (static_cast<int>(bad.size()) > so.max_size) bad.erase(bad.begin());
      if (std::find(extra.begin(), extra.end(), bad) == extra.end()) {
        extra.push_back(bad);
        std::stable_sort(extra.begin(), extra.end(), [](const engine::Program& a, const engine::Program& b) {
          return a.size() != b.size() ? a.size() < b.size() : a < b;
        });
        CHECK_THROWS_AS(confirm_by_closure(kind, sp, extra, so.max_size), Error);
        if (cards.size() < 4) CHECK_THROWS_AS(confirm_programs(kind, sp, extra, so.max_size), Error);
      }
    }
  }
}

TEST_CASE("certify: the closure shared out among several solvers per kind gives the same facts") {
  const auto h = engine::make_plain_hierarchy({1, 2, 2});
  engine::SynthOptions so;
  so.max_size = 5;
  const auto r = engine::synthesize(h, all_local(h), so);
  const auto sp = make_search_problem(h, r.instructions, all_local(h));
  for (auto kind : {SolverKind::Z3, SolverKind::Cvc5}) {
    CAPTURE(smt::to_string(kind));
    SearchOptions one, three;
    three.jobs = 3;
    std::vector<std::string> progress;
    three.progress = [&](const std::string& line) { progress.push_back(line); };
    const auto a = confirm_by_closure(kind, sp, r.programs, so.max_size, one);
    const auto b = confirm_by_closure(kind, sp, r.programs, so.max_size, three);
    CHECK(b.programs == a.programs);
    CHECK(b.closure_states == a.closure_states);
    CHECK(b.closure_edges == a.closure_edges);
    CHECK(b.validity_checks == a.validity_checks);
    CHECK(b.solver == a.solver);
    CHECK(std::any_of(progress.begin(), progress.end(),
                      [](const std::string& l) { return l.find("3 workers") != std::string::npos; }));
    // A wrong set is refused whatever the number of workers.
    auto missing = r.programs;
    missing.erase(missing.begin() + 1);
    CHECK_THROWS_AS(confirm_by_closure(kind, sp, missing, so.max_size, three), Error);
  }
  // Both kinds in one pool of workers (a worker helps the other kind when its own is done): the
  // same facts per kind as each kind alone.
  const std::vector<EnumerationResult> alone = {confirm_by_closure(SolverKind::Z3, sp, r.programs, so.max_size),
                                                confirm_by_closure(SolverKind::Cvc5, sp, r.programs, so.max_size)};
  for (int jobs : {1, 3}) {
    CAPTURE(jobs);
    SearchOptions o;
    o.jobs = jobs;
    const auto both = confirm_by_closure({SolverKind::Z3, SolverKind::Cvc5}, sp, r.programs, so.max_size, o);
    REQUIRE(both.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(both[i].solver == alone[i].solver);
      CHECK(both[i].programs == alone[i].programs);
      CHECK(both[i].closure_states == alone[i].closure_states);
      CHECK(both[i].closure_edges == alone[i].closure_edges);
      CHECK(both[i].validity_checks == alone[i].validity_checks);
    }
  }
}

TEST_CASE("solver settings: flags reach the solvers, are described, and bad ones are refused") {
  smt::SolverOptions o;
  o.z3_logic = "QF_BV";
  CHECK(smt::Solver(SolverKind::Z3, o).settings().find("logic=QF_BV") != std::string::npos);
  CHECK(smt::Solver(SolverKind::Z3).settings().find("logic=QF_FD") != std::string::npos);
  o.cvc5_options = {{"bv-sat-solver", "minisat"}};
  const auto cs = smt::Solver(SolverKind::Cvc5, o).settings();
  CHECK(cs.find("bv-sat-solver=minisat") != std::string::npos);
  CHECK(cs.find("cadical") == std::string::npos);
  o.cvc5_options = {{"no-such-option", "1"}};
  CHECK_THROWS_WITH_AS(smt::Solver(SolverKind::Cvc5, o), doctest::Contains("--cvc5-option no-such-option=1"), Error);
  CHECK(smt::parse_option_assignment("a=b", "--x") == std::pair<std::string, std::string>{"a", "b"});
  CHECK_THROWS_AS(smt::parse_option_assignment("ab", "--x"), Error);
}

TEST_CASE("engine::replay: states, the failing step with its reason, the goal") {
  const auto h = engine::make_plain_hierarchy({1, 2, 2});
  engine::SynthOptions so;
  so.max_size = 4;
  const auto r = engine::synthesize(h, all_local(h), so);
  const auto goal = all_local(h);
  for (const auto& prog : r.programs) {
    const auto t = engine::replay(r, prog, &goal);
    CHECK(t.ok());
    CHECK(t.states.size() == prog.size() + 1);
    const auto ls = replay_states(r, prog);  // the certificates' states come from the same replay
    REQUIRE(ls.size() == t.states.size());
    for (int d = 0; d < h.num_local(); ++d) CHECK(ls.back()[d][0][d] == t.states.back().get(d, 0, d));
  }
  // A program run past the goal, and one that cannot start: failing step and reason.
  auto past = r.programs.front();
  past.push_back(past.front());
  const auto t1 = engine::replay(r, past, &goal);
  CHECK(t1.failed_step == static_cast<int>(past.size()) - 1);
  CHECK(t1.reason.find("goal is already reached") != std::string::npos);
  CHECK_FALSE(t1.ok());
  const auto t2 = engine::replay(r, past);  // without a goal, the extra step is judged by its precondition
  CHECK(t2.states.size() + (t2.failed_step >= 0 ? 1 : 0) == past.size() + 1);
  CHECK_THROWS_AS((void)replay_states(r, engine::Program{past.back(), past.back(), past.back(), past.back()}), Error);
}

TEST_CASE("program_state_texts: the certificates' state texts, prefixes replayed once, equal to a replay per program") {
  // Three levels: programs of lengths 2..4 with shared prefixes.
  const auto h = engine::make_plain_hierarchy({2, 2, 2});
  engine::SynthOptions so;
  so.max_size = 4;
  const auto r = engine::synthesize(h, all_local(h), so);
  REQUIRE(r.programs.size() > 10);
  const auto texts = program_state_texts(r, r.programs);
  REQUIRE(texts.size() == r.programs.size());
  std::set<std::string> distinct;  // the device states met: more than a handful
  for (std::size_t i = 0; i < r.programs.size(); ++i) {
    const auto ls = replay_states(r, r.programs[i]);
    const auto t = engine::replay(r, r.programs[i]);
    REQUIRE(texts[i].size() == ls.size());
    for (std::size_t st = 0; st < ls.size(); ++st)
      for (int d = 0; d < h.num_local(); ++d) {
        CHECK(texts[i][st][static_cast<std::size_t>(d)] == state_text(ls[st], d));
        CHECK(state_text(t.states[st], d) == state_text(ls[st], d));
        distinct.insert(texts[i][st][static_cast<std::size_t>(d)]);
      }
  }
  CHECK(distinct.size() > 8);
  CHECK(distinct.count("") == 1);  // Reduce leaves devices empty
  // Out of order (no shared prefix with the previous program) and an invalid step.
  std::vector<engine::Program> rev(r.programs.rbegin(), r.programs.rend());
  const auto back = program_state_texts(r, rev);
  for (std::size_t i = 0; i < rev.size(); ++i) CHECK(back[i] == texts[rev.size() - 1 - i]);
  const auto bad = r.programs.front();
  CHECK_THROWS_AS((void)program_state_texts(r, {bad, engine::Program{bad.back(), bad.back(), bad.back(), bad.back()}}),
                  Error);
}
