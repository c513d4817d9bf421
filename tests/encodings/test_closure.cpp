// The closure driver (encodings/src/closure.hpp, white-box): with an encoding whose step relation
// is the reference semantics' own graph, written out edge by edge, the driver certifies the
// enumerator's programs; with one listed step left out of the relation, both ways of checking the
// programs' steps (one sat check per step, and the one query "a listed step the relation rejects")
// refuse; with one step added, the closure refuses. Both solvers.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <numeric>

#include "closure.hpp"  // private to encodings/ (this test's include path names encodings/src)
#include "p2v/encodings/search.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/synth.hpp"

using namespace p2v;
using namespace p2v::encodings;
using smt::SolverKind;
using smt::Term;

namespace {

engine::Groups all_local(const engine::SynthesisHierarchy& h) {
  std::vector<int> all(static_cast<std::size_t>(h.num_local()));
  std::iota(all.begin(), all.end(), 0);
  return {all};
}

unsigned width_for(std::size_t n) {  // bits to represent 0..n
  unsigned b = 1;
  while ((std::size_t{1} << b) <= n) ++b;
  return b;
}

using Edge = std::tuple<int, int, int>;  // (state, instruction, successor)

// States as graph node numbers, the step relation as a list of edges.
class TableStep : public detail::OneStep {
 public:
  TableStep(smt::Solver& s, const detail::StateGraph& g, std::size_t instructions, const std::vector<Edge>& edges,
            bool asserted)
      : s_(s), g_(g) {
    const unsigned w = width_for(g.states.size()), c = width_for(instructions);
    for (int t = 0; t < 2; ++t) state_.push_back(s.bv_var("state_" + std::to_string(t), w));
    choice_ = s.bv_var("choice", c);
    std::vector<Term> any;
    for (const auto& [u, i, v] : edges) any.push_back(state_is(0, u) && chosen(i) && state_is(1, v));
    const Term rel = smt::any_of(any, s.bool_val(false));
    if (asserted)
      s.add(rel);
    else
      relation_ = rel;
  }
  Term state_is(int t, int u) override {
    return state_[static_cast<std::size_t>(t)] == s_.bv_val(state_[0].width(), static_cast<std::uint64_t>(u));
  }
  Term goal(int t) override {
    std::vector<Term> at;
    for (std::size_t u = 0; u < g_.states.size(); ++u)
      if (g_.goal[u]) at.push_back(state_is(t, static_cast<int>(u)));
    return smt::any_of(at, s_.bool_val(false));
  }
  Term chosen(int i) override { return choice_ == s_.bv_val(choice_.width(), static_cast<std::uint64_t>(i)); }
  Term relation() override { return relation_; }

 private:
  smt::Solver& s_;
  const detail::StateGraph& g_;
  std::vector<Term> state_;
  Term choice_, relation_;
};

}  // namespace

TEST_CASE("closure driver: the graph's own relation is certified; a missing or an extra step is refused") {
  const auto h = engine::make_plain_hierarchy({1, 2, 2});
  engine::SynthOptions so;
  so.max_size = 3;
  const auto r = engine::synthesize(h, all_local(h), so);
  REQUIRE(r.programs.size() > 2);
  const auto sp = make_search_problem(h, r.instructions, all_local(h));
  const detail::StateGraph g = detail::reachable_states(sp, so.max_size);
  std::vector<Edge> edges;
  for (std::size_t u = 0; u < g.states.size(); ++u)
    for (auto [i, v] : g.succ[u]) edges.emplace_back(static_cast<int>(u), i, v);
  // A step of a program (the first step of the last one), and a step the graph does not have
  // (from the initial state, an instruction it does not list, to the goal).
  const Edge used{0, r.programs.back().front(), -1};
  std::vector<Edge> missing;
  for (const auto& e : edges)
    if (!(std::get<0>(e) == 0 && std::get<1>(e) == std::get<1>(used))) missing.push_back(e);
  REQUIRE(missing.size() + 1 == edges.size());
  int unlisted = -1, goal = -1;
  for (int i = 0; i < static_cast<int>(sp.instructions.size()) && unlisted < 0; ++i)
    if (std::none_of(g.succ[0].begin(), g.succ[0].end(), [i](const auto& e) { return e.first == i; })) unlisted = i;
  for (std::size_t u = 0; u < g.states.size(); ++u)
    if (g.goal[u]) goal = static_cast<int>(u);
  REQUIRE(unlisted >= 0);
  REQUIRE(goal >= 0);
  std::vector<Edge> extra = edges;
  extra.emplace_back(0, unlisted, goal);

  auto run = [&](const std::vector<Edge>& rel, bool batched) {
    detail::ClosureSpec spec;
    spec.method = RunMethod::Closure;
    spec.make = [&](smt::Solver& s) { return std::make_unique<TableStep>(s, g, sp.instructions.size(), rel, true); };
    if (batched)
      spec.make_relation = [&](smt::Solver& s) {
        return std::make_unique<TableStep>(s, g, sp.instructions.size(), rel, false);
      };
    SearchOptions opt;
    opt.jobs = 2;
    return detail::closure_run({SolverKind::Z3, SolverKind::Cvc5}, sp, g, r.programs, so.max_size, opt, {}, spec);
  };
  for (bool batched : {false, true}) {
    CAPTURE(batched);
    const auto ok = run(edges, batched);
    REQUIRE(ok.size() == 2);
    for (const auto& res : ok) {
      CHECK(res.programs == r.programs);
      CHECK(res.closure_states > 0);
      // Every listed step of the programs is checked, one by one or in the one query.
      CHECK(res.validity_checks > 0);
    }
    CHECK(ok[0].validity_checks == ok[1].validity_checks);
    CHECK_THROWS_WITH_AS(run(missing, batched), doctest::Contains("rejects a step of the enumerator's programs"),
                         Error);
    CHECK_THROWS_WITH_AS(run(extra, batched), doctest::Contains("finds a valid step"), Error);
  }
}
