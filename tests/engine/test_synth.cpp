#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "naive.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"

using namespace p2v::engine;

namespace {

std::set<std::string> names(const SynthResult& r) {
  std::set<std::string> s;
  for (const auto& p : r.programs) s.insert(program_name(r, p));
  return s;
}

SynthResult synth_plain(const std::vector<int>& cards, const std::vector<std::string>& n, int L,
                        MasterCollectives mc = MasterCollectives::AllReduceOnly) {
  auto h = make_plain_hierarchy(cards, n);
  std::vector<int> all(h.num_local());
  for (int i = 0; i < h.num_local(); ++i) all[i] = i;
  SynthOptions o;
  o.max_size = L;
  o.master = mc;
  return synthesize(h, {all}, o);
}

// Replays a lowered program on system states with the naive semantics.
bool naive_valid(const LoweredProgram& lp, int n, const Groups& goal_groups) {
  auto s = naive::initial(n);
  for (const auto& st : lp)
    if (!naive::step(s, st.collective, st.groups)) return false;
  return s == naive::goal(n, goal_groups);
}

// Brute force over every instruction sequence up to L with the naive semantics on lowered groups:
// a sequence is kept iff every step's precondition holds and the final state is the goal. A prefix
// whose precondition fails makes every extension fail, so extensions of invalid prefixes are
// skipped; prefixes that reached the goal ARE extended (the claim that nothing applies to the goal
// is checked, not assumed).
std::set<LoweredProgram> brute_force(const SynthResult& r, int n, const Groups& goal_groups, int L) {
  std::vector<LoweredStep> lowered;
  for (const auto& in : r.instructions)
    lowered.push_back({in.collective, lower_groups(r.hierarchy, in.grouping.groups)});
  const auto goal = naive::goal(n, goal_groups);
  std::set<LoweredProgram> out;
  LoweredProgram cur;
  std::function<void(const naive::State&)> rec = [&](const naive::State& s) {
    if (!cur.empty() && s == goal) out.insert(cur);
    if (static_cast<int>(cur.size()) == L) return;
    for (const auto& st : lowered) {
      naive::State t = s;
      if (!naive::step(t, st.collective, st.groups)) continue;
      cur.push_back(st);
      rec(t);
      cur.pop_back();
    }
  };
  rec(naive::initial(n));
  return out;
}

std::set<LoweredProgram> lowered_set(const SynthResult& r) {
  std::set<LoweredProgram> s;
  for (const auto& p : r.programs) s.insert(lower(r, p));
  return s;
}

}  // namespace

TEST_CASE("Example 5.2: the programs of Fig. 3 and Fig. 10 on [1 2 4]") {
  auto r = synth_plain({1, 2, 4}, {"root", "node", "gpu"}, 5);
  auto s = names(r);
  CHECK(s.count("AllReduce@(root,Inside)"));
  CHECK(s.count("AllReduce@(node,Inside) ; AllReduce@(node,Parallel(root))"));
  CHECK(s.count("Reduce@(node,Inside) ; AllReduce@(node,Master(root)) ; Broadcast@(node,Inside)"));
  CHECK(s.count("ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; AllGather@(node,Inside)"));
  // Fig. 4 invalid programs are absent; Master carries no other collective by default.
  for (const auto& n : s) {
    CHECK(n.find("ReduceScatter@(node,Inside) ; AllReduce@(node,Inside)") != 0);
    CHECK(n.find("AllReduce@(node,Inside) ; AllReduce@(node,Inside)") != 0);
    std::size_t at = 0;
    while ((at = n.find("Master", at)) != std::string::npos) {  // every Master step is an AllReduce
      const std::size_t start = n.rfind(" ; ", at);
      CHECK(n.compare(start == std::string::npos ? 0 : start + 3, 10, "AllReduce@") == 0);
      ++at;
    }
  }
  // Shortest first; the single AllReduce is the unique program of size 1.
  REQUIRE(!r.programs.empty());
  CHECK(r.programs.front().size() == 1);
  for (std::size_t i = 1; i < r.programs.size(); ++i) CHECK(r.programs[i - 1].size() <= r.programs[i].size());
  CHECK(std::count_if(r.programs.begin(), r.programs.end(), [](const Program& p) { return p.size() == 1; }) == 1);
}

TEST_CASE("--master-collectives all admits the literal rules' extra programs") {
  auto r = synth_plain({1, 2, 4}, {"root", "node", "gpu"}, 4, MasterCollectives::All);
  auto s = names(r);
  CHECK(
      s.count("Reduce@(node,Inside) ; ReduceScatter@(node,Master(root)) ; Broadcast@(node,Inside) ; "
              "AllGather@(node,Parallel(root))"));
  CHECK(r.programs.size() > synth_plain({1, 2, 4}, {"root", "node", "gpu"}, 4).programs.size());
}

TEST_CASE("every synthesized program replays to the goal under the naive semantics") {
  for (auto cards : std::vector<std::vector<int>>{{1, 2, 4}, {1, 4, 4}, {1, 2, 2, 2}, {1, 2, 2, 4}}) {
    auto r = synth_plain(cards, {}, 5);
    const int n = r.hierarchy.num_local();
    std::vector<int> all(n);
    for (int i = 0; i < n; ++i) all[i] = i;
    CHECK(!r.programs.empty());
    for (const auto& p : r.programs) CHECK(naive_valid(lower(r, p), n, {all}));
  }
  // Lowered (d) programs on a placement: executed on all 32 system devices.
  Placement pl({4, 8}, {4, 8}, {{2, 2}, {2, 4}}, {0});
  auto r = synthesize(pl, {"node", "gpu"}, HierarchyKind::ReductionAxes, {});
  CHECK(r.programs.size() > 3);
  for (const auto& p : r.programs) CHECK(naive_valid(lower(r, p), 32, pl.reduction_groups()));
}

TEST_CASE("exhaustive: the enumerator's set equals brute force over all sequences") {
  struct Case {
    std::vector<int> levels, axes;
    ParallelismMatrix x;
    std::vector<int> reduce;
    HierarchyKind kind;
    int L;
  };
  std::vector<Case> cases{
      {{2, 4}, {8}, {{2, 4}}, {0}, HierarchyKind::ReductionAxes, 4},             // [1 2 4]
      {{2, 2, 2}, {8}, {{2, 2, 2}}, {0}, HierarchyKind::ReductionAxes, 4},       // three levels
      {{4, 2}, {2, 4}, {{2, 1}, {2, 2}}, {1}, HierarchyKind::ReductionAxes, 4},  // part of the system
      {{2, 4}, {2, 4}, {{2, 1}, {1, 4}}, {1}, HierarchyKind::System, 3},         // (a), 8 devices
      {{2, 4}, {2, 4}, {{1, 2}, {2, 2}}, {1}, HierarchyKind::ColumnBased, 3},    // (b)
      {{2, 4}, {2, 4}, {{1, 2}, {2, 2}}, {1}, HierarchyKind::RowBased, 3},       // (c)
      {{2, 4}, {2, 2, 2}, {{1, 2}, {2, 1}, {1, 2}}, {0, 2}, HierarchyKind::ReductionUncollapsed, 4},
  };
  // (a) cannot express a reduction whose groups straddle its levels: none at all here.
  {
    Placement p({2, 4}, {2, 4}, {{1, 2}, {2, 2}}, {1});
    SynthOptions o;
    o.max_size = 3;
    auto r = synthesize(p, {"l0", "l1"}, HierarchyKind::System, o);
    CHECK(r.programs.empty());
    CHECK(brute_force(r, 8, p.reduction_groups(), 3).empty());
  }
  for (const auto& c : cases) {
    Placement p(c.levels, c.axes, c.x, c.reduce);
    std::vector<std::string> n;
    for (std::size_t i = 0; i < c.levels.size(); ++i) n.push_back("l" + std::to_string(i));
    SynthOptions o;
    o.max_size = c.L;
    auto r = synthesize(p, n, c.kind, o);
    const std::string kind = to_string(c.kind);
    CAPTURE(kind);
    CAPTURE(format_matrix(c.x));
    const auto brute = brute_force(r, p.num_devices(), p.reduction_groups(), c.L);
    CHECK(!brute.empty());
    CHECK(lowered_set(r) == brute);
    MESSAGE(kind, " ", format_matrix(c.x), ": ", brute.size(), " programs");
    CHECK(lowered_set(r).size() == r.programs.size());  // no duplicates
  }
}

TEST_CASE("any goal grouping: the enumerator (with its last-step filter) equals brute force") {
  // The search skips a last step by necessary conditions for landing on the goal (devices outside
  // its groups at the goal, rows and column sets that the step cannot change, roots at the goal).
  // Goals that split the devices end programs with steps that leave some devices alone; goals that
  // leave devices out (their goal state holds nothing) are unreachable, on both sides alike.
  const std::vector<std::pair<std::vector<int>, Groups>> cases{{{1, 2, 2}, {{0, 1}, {2, 3}}},
                                                               {{1, 2, 2}, {{0, 2}, {1, 3}}},
                                                               {{1, 2, 2}, {{0, 1}}},
                                                               {{1, 2, 2}, {{1, 2, 3}}},
                                                               {{1, 2, 3}, {{0, 1, 2}, {3, 4, 5}}}};
  for (const auto& [cards, goal] : cases)
    for (auto mc : {MasterCollectives::AllReduceOnly, MasterCollectives::All}) {
      auto h = make_plain_hierarchy(cards);
      SynthOptions o;
      o.max_size = 4;
      o.master = mc;
      const auto r = synthesize(h, goal, o);
      CAPTURE(h.num_local());
      CAPTURE(goal.size());
      CHECK(lowered_set(r) == brute_force(r, h.num_local(), goal, o.max_size));
    }
}

TEST_CASE("multi-word states: the enumerator equals brute force with the reference kernel") {
  // The search runs the rules on run-length-encoded states (engine/src/state_runs.hpp); StateSet
  // runs them on the plain bitsets (state_kernel.hpp). Over 64 devices a row mask and a column
  // set take several words, and ReduceScatter blocks, Master steps and AllGathers leave states
  // with many runs. Every instruction sequence up to L, stopping at the goal like the search.
  struct Case {
    std::vector<int> cards;
    MasterCollectives mc;
    int L;
  };
  for (const Case& c : {Case{{1, 2, 5, 7}, MasterCollectives::AllReduceOnly, 5},
                        Case{{1, 3, 3, 9}, MasterCollectives::All, 4}, Case{{1, 5, 26}, MasterCollectives::All, 5}}) {
    auto h = make_plain_hierarchy(c.cards);
    const int k = h.num_local();
    REQUIRE(k > 64);
    std::vector<int> all(k);
    for (int i = 0; i < k; ++i) all[i] = i;
    SynthOptions o;
    o.max_size = c.L;
    o.master = c.mc;
    const auto r = synthesize(h, {all}, o);
    const StateSet goal = StateSet::goal(k, {all});
    std::set<Program> brute;
    Program cur;
    std::function<void(const StateSet&)> rec = [&](const StateSet& st) {
      if (!cur.empty() && st == goal) {
        brute.insert(cur);
        return;
      }
      if (static_cast<int>(cur.size()) == c.L) return;
      for (std::size_t i = 0; i < r.instructions.size(); ++i) {
        StateSet next;
        if (!st.apply(r.instructions[i].collective, r.instructions[i].grouping.groups, next)) continue;
        cur.push_back(static_cast<int>(i));
        rec(next);
        cur.pop_back();
      }
    };
    rec(StateSet::initial(k));
    CAPTURE(k);
    MESSAGE(k, " devices: ", brute.size(), " programs");
    CHECK(!brute.empty());
    CHECK(std::set<Program>(r.programs.begin(), r.programs.end()) == brute);
  }
}

TEST_CASE("program counts at size 5 by depth (regression, cross-checked by brute force above)") {
  // One level: AllReduce, RS;AG, Reduce;Broadcast.
  CHECK(synth_plain({1, 8}, {}, 5).programs.size() == 3);
  CHECK(synth_plain({1, 2, 4}, {}, 5).programs.size() == synth_plain({1, 4, 4}, {}, 5).programs.size());
}

TEST_CASE("limits are enforced with clear errors") {
  auto h = make_plain_hierarchy({1, 2, 4});
  SynthOptions o;
  o.max_size = 0;
  CHECK_THROWS_WITH_AS(synthesize(h, {{0, 1, 2, 3, 4, 5, 6, 7}}, o), doctest::Contains("--max-size 0"), p2v::Error);
  o.max_size = 99;
  CHECK_THROWS_AS(synthesize(h, {{0, 1, 2, 3, 4, 5, 6, 7}}, o), p2v::Error);
  Placement big({1024}, {1024}, {{1024}}, {0});
  CHECK_THROWS_WITH_AS(synthesize(big, {"gpu"}, HierarchyKind::ReductionAxes, {}), doctest::Contains("at most"),
                       p2v::Error);
}

TEST_CASE("randomized: enumerator equals brute force on random small placements (fixed seed)") {
  // Random systems of 2-3 levels with at most 8 devices, random axes factorizations, matrices,
  // reduction axes and hierarchy kinds; sizes up to 3.
  std::uint64_t seed = 0x9E3779B97F4A7C15ull;
  auto next = [&](std::uint64_t n) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return static_cast<int>(seed % n);
  };
  const std::vector<std::vector<int>> systems{{2, 4}, {4, 2}, {2, 2, 2}, {1, 2, 4}, {2, 1, 2}, {8}, {2, 3}};
  const HierarchyKind kinds[] = {HierarchyKind::System, HierarchyKind::ColumnBased, HierarchyKind::RowBased,
                                 HierarchyKind::ReductionAxes, HierarchyKind::ReductionUncollapsed};
  int checked = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const auto& levels = systems[next(systems.size())];
    int n = 1;
    for (int c : levels) n *= c;
    // Axes: a random ordered factorization of n into 1-3 factors.
    std::vector<int> axes;
    int rest = n;
    const int m = 1 + next(3);
    for (int i = 0; i + 1 < m; ++i) {
      std::vector<int> divs;
      for (int d = 1; d <= rest; ++d)
        if (rest % d == 0) divs.push_back(d);
      axes.push_back(divs[next(divs.size())]);
      rest /= axes.back();
    }
    axes.push_back(rest);
    const auto mats = enumerate_matrices(levels, axes);
    REQUIRE(!mats.empty());
    const auto& x = mats[next(mats.size())];
    std::vector<int> reduce;
    for (int i = 0; i < static_cast<int>(axes.size()); ++i)
      if (next(2)) reduce.push_back(i);
    if (reduce.empty()) reduce.push_back(next(axes.size()));
    const HierarchyKind kind = kinds[next(5)];
    Placement p(levels, axes, x, reduce);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < levels.size(); ++i) names.push_back("l" + std::to_string(i));
    SynthOptions o;
    o.max_size = 3;
    o.master = next(2) ? MasterCollectives::All : MasterCollectives::AllReduceOnly;
    auto r = synthesize(p, names, kind, o);
    const std::string what = std::string(to_string(kind)) + " " + format_matrix(x);
    CAPTURE(what);
    CHECK(lowered_set(r) == brute_force(r, p.num_devices(), p.reduction_groups(), o.max_size));
    ++checked;
  }
  CHECK(checked == 40);
}
