#include <doctest/doctest.h>

#include "p2v/engine/error.hpp"
#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/engine/state.hpp"

using namespace p2v::engine;

namespace {
// Fig. 2a, one axis of 16 reduced: hierarchy (a) = [1 2 2 4] named rack, server, cpu, gpu.
SynthesisHierarchy fig2a() {
  Placement p({1, 2, 2, 4}, {16}, {{1, 2, 2, 4}}, {0});
  return make_hierarchy(p, {"rack", "server", "cpu", "gpu"}, HierarchyKind::System);
}
Groups g(const SynthesisHierarchy& h, const char* slice, FormKind f, const char* e) {
  return lower_groups(h, form_groups(h, h.level_index(slice), f, e ? h.level_index(e) : -1));
}
// Names of docs/model.md §1: A0..A3 = 0..3, B0 = 4, C0 = 8, D0 = 12.
constexpr int A = 0, B = 4, C = 8, D = 12;
}  // namespace

TEST_CASE("Example 5.1: Table 2 groups on [1 2 2 4]") {
  auto h = fig2a();
  CHECK(g(h, "cpu", FormKind::Inside, nullptr) ==
        Groups{{A, A + 1, A + 2, A + 3}, {B, B + 1, B + 2, B + 3}, {C, C + 1, C + 2, C + 3}, {D, D + 1, D + 2, D + 3}});
  auto par_server = g(h, "cpu", FormKind::Parallel, "server");
  CHECK(par_server.size() == 8);
  CHECK(par_server[0] == std::vector<int>{A, B});
  CHECK(par_server[1] == std::vector<int>{A + 1, B + 1});
  CHECK(par_server[4] == std::vector<int>{C, D});
  auto par_rack = g(h, "cpu", FormKind::Parallel, "rack");
  CHECK(par_rack.size() == 4);
  CHECK(par_rack[0] == std::vector<int>{A, B, C, D});
  CHECK(par_rack[1] == std::vector<int>{A + 1, B + 1, C + 1, D + 1});
  CHECK(g(h, "cpu", FormKind::Master, "rack") == Groups{{A, B, C, D}});
  CHECK(g(h, "server", FormKind::Inside, nullptr) == Groups{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}});
  auto srv_par = g(h, "server", FormKind::Parallel, "rack");
  CHECK(srv_par.size() == 8);
  CHECK(srv_par[0] == std::vector<int>{A, C});
  CHECK(srv_par[1] == std::vector<int>{A + 1, C + 1});
  CHECK(srv_par[4] == std::vector<int>{B, D});
  auto all = g(h, "rack", FormKind::Inside, nullptr);
  REQUIRE(all.size() == 1);
  CHECK(all[0].size() == 16);
}

TEST_CASE("instructions are identified by their groups; singleton groupings are dropped") {
  // [1 4 1]: (root,Inside), (node,Parallel(root)) and (node,Master(root)) all form one group of 4.
  auto h = make_plain_hierarchy({1, 4, 1}, {"root", "node", "gpu"});
  auto gs = groupings(h);
  REQUIRE(gs.size() == 1);
  CHECK(grouping_name(h, gs[0]) == "(root,Inside)");
  CHECK(instructions(h, MasterCollectives::AllReduceOnly).size() == 5);
  // Master takes AllReduce only by default; all five with the option.
  auto h2 = make_plain_hierarchy({1, 2, 4}, {"root", "node", "gpu"});
  auto count_master = [&](MasterCollectives mc) {
    int n = 0;
    for (const auto& in : instructions(h2, mc)) n += in.grouping.form == FormKind::Master;
    return n;
  };
  CHECK(count_master(MasterCollectives::AllReduceOnly) == 1);
  CHECK(count_master(MasterCollectives::All) == 5);
}

TEST_CASE("B.2 shape: Parallel groups have the product of the levels between as size") {
  auto h = make_plain_hierarchy({1, 2, 3, 4});
  auto gr = form_groups(h, 2, FormKind::Parallel, 0);  // levels 1..2 vary: size 6, 4 groups
  CHECK(gr.size() == 4);
  for (const auto& x : gr) CHECK(x.size() == 6);
}

TEST_CASE("Hoare rules: Examples 4.1 and 4.2 and each rule's pre/postcondition") {
  // Fig. 2d reducing shards: (d) hierarchy [1 2 1 2]; A0, A1 are local 0, 1.
  Placement p({1, 2, 2, 4}, {4, 4}, {{1, 1, 2, 2}, {1, 2, 1, 2}}, {1});
  auto h = make_hierarchy(p, {"rack", "server", "cpu", "gpu"}, HierarchyKind::ReductionAxes);
  const int k = h.num_local();
  REQUIRE(k == 4);
  REQUIRE(h.to_system[0][0] == 0);
  REQUIRE(h.to_system[0][1] == 1);
  const Groups a0a1{{0, 1}};
  std::string why;
  // Example 4.1: ReduceScatter then AllReduce on {A0, A1}.
  StateSet s = StateSet::initial(k), t;
  REQUIRE(s.apply(Collective::ReduceScatter, a0a1, t, &why));
  CHECK(t.rows(0) == std::vector<int>{0, 1});
  CHECK(t.rows(1) == std::vector<int>{2, 3});
  CHECK(t.columns(0, 0) == std::vector<int>{0, 1});
  StateSet u;
  CHECK_FALSE(t.apply(Collective::AllReduce, a0a1, u, &why));
  CHECK(why.find("different rows") != std::string::npos);
  CHECK(why.find("{0-1}") != std::string::npos);  // names the group
  // Example 4.2: a second AllReduce over devices already summed.
  REQUIRE(s.apply(Collective::AllReduce, a0a1, t));
  CHECK_FALSE(t.apply(Collective::AllReduce, a0a1, u, &why));
  CHECK(why.find("overlap") != std::string::npos);
  // Reduce: root gets the sum, the others become empty.
  REQUIRE(s.apply(Collective::Reduce, Groups{{0, 1, 2, 3}}, t));
  CHECK(t.rows(1).empty());
  CHECK(t.columns(0, 3) == std::vector<int>{0, 1, 2, 3});
  // AllGather needs non-empty rows.
  CHECK_FALSE(t.check(Collective::AllGather, Groups{{0, 1}}, &why));
  // Broadcast restores the others from the root.
  REQUIRE(t.apply(Collective::Broadcast, Groups{{0, 1, 2, 3}}, u));
  CHECK(u == StateSet::goal(k, {{0, 1, 2, 3}}));
  // Broadcast needs a strictly smaller member.
  CHECK_FALSE(u.check(Collective::Broadcast, Groups{{0, 1}}, &why));
  CHECK(why.find("already equals the root") != std::string::npos);
  // ReduceScatter needs divisibility: 3 rows over 2 members, 6 over 4, fail.
  StateSet s3 = StateSet::initial(3);
  CHECK_FALSE(s3.check(Collective::ReduceScatter, Groups{{0, 1}}, &why));
  StateSet s6 = StateSet::initial(6);
  CHECK_FALSE(s6.check(Collective::ReduceScatter, Groups{{0, 1, 2, 3}}, &why));
  CHECK(why.find("not divisible") != std::string::npos);
  // AllGather after ReduceScatter in the same group reaches the goal.
  REQUIRE(s.apply(Collective::ReduceScatter, Groups{{0, 1, 2, 3}}, t));
  REQUIRE(t.apply(Collective::AllGather, Groups{{0, 1, 2, 3}}, u));
  CHECK(u == StateSet::goal(k, {{0, 1, 2, 3}}));
}

TEST_CASE("states wider than one word (k > 64) work") {
  const int k = 130;
  std::vector<int> all(k);
  for (int i = 0; i < k; ++i) all[i] = i;
  StateSet s = StateSet::initial(k), t, u;
  REQUIRE(s.apply(Collective::ReduceScatter, Groups{all}, t));
  CHECK(t.rows(129) == std::vector<int>{129});
  REQUIRE(t.apply(Collective::AllGather, Groups{all}, u));
  CHECK(u == StateSet::goal(k, {all}));
  CHECK_THROWS_AS(StateSet(kMaxStateDevices + 1), p2v::Error);
}
