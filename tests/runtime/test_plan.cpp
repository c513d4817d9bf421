// Unit tests of the runtime plan: layouts, in-place decisions, packing, communicator
// deduplication, and an in-process emulation of the MPI collectives that replays the plan's data
// movement for every synthesized program of several small systems and checks the goal exactly.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "p2v/engine/error.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/runtime/plan.hpp"
#include "p2v/runtime/program_source.hpp"

using namespace p2v;
using runtime::Space;

namespace {

struct Setup {
  engine::System sys;
  engine::Placement pl;
  engine::SynthesisHierarchy h;
};

Setup setup(const std::string& sys, std::vector<int> axes, engine::ParallelismMatrix x, std::vector<int> reduce) {
  auto s = engine::parse_system_arg(sys);
  engine::Placement pl(s.cardinalities(), axes, x, reduce);
  auto h = runtime::program_hierarchy(s, pl, engine::HierarchyKind::ReductionAxes);
  return {s, pl, h};
}

const char* kFig2a = "rack=1,server=2,cpu=2,gpu=4";

// Emulates the plan on N in-memory ranks with the MPI semantics of each call; returns the final
// main buffers. Each unit holds `epu` elements.
std::vector<std::vector<long>> emulate(const runtime::Plan& plan, long epu) {
  const int N = plan.num_ranks;
  const long elems = plan.units * epu;
  struct Bufs {
    std::vector<long> b[3];
  };
  std::vector<Bufs> r(N);
  for (int d = 0; d < N; ++d) {
    r[d].b[0].resize(elems);
    r[d].b[1].assign(plan.stage_units[0] * epu, -7);
    r[d].b[2].assign(plan.stage_units[1] * epu, -7);
    for (long e = 0; e < elems; ++e) r[d].b[0][e] = (long(d) + 1) * 1000003L + e * 7919L;
  }
  auto at = [&](int d, runtime::Region g, long n) -> long* {
    auto& v = r[d].b[static_cast<int>(g.space)];
    REQUIRE(g.offset * epu + n <= static_cast<long>(v.size()));
    return v.data() + g.offset * epu;
  };
  auto copies = [&](int d, const std::vector<runtime::Copy>& cs) {
    for (const auto& c : runtime::expand_copies(cs)) {
      const long n = c.units * epu;
      std::vector<long> tmp(at(d, c.src, n), at(d, c.src, n) + n);
      std::copy(tmp.begin(), tmp.end(), at(d, c.dst, n));
    }
  };
  for (const auto& st : plan.steps) {
    for (int d = 0; d < N; ++d)
      if (st.ranks[d].comm >= 0) copies(d, st.ranks[d].pre);
    for (const auto& g : st.groups) {
      if (g.size() < 2) continue;
      const int gs = static_cast<int>(g.size());
      const long n = st.ranks[g[0]].count * epu;
      for (int d : g) REQUIRE(st.ranks[d].count * epu == n);
      switch (st.collective) {
        case engine::Collective::AllReduce:
        case engine::Collective::Reduce: {
          std::vector<long> sum(n, 0);
          for (int d : g) {
            const auto& rs = st.ranks[d];
            const long* src = at(d, rs.in_place ? rs.recv : rs.send, n);
            for (long i = 0; i < n; ++i) sum[i] += src[i];
          }
          for (int m = 0; m < gs; ++m)
            if (st.collective == engine::Collective::AllReduce || m == 0)
              std::copy(sum.begin(), sum.end(), at(g[m], st.ranks[g[m]].recv, n));
          break;
        }
        case engine::Collective::ReduceScatter: {
          std::vector<long> sum(n * gs, 0);
          for (int d : g) {
            REQUIRE(!st.ranks[d].in_place);
            const long* src = at(d, st.ranks[d].send, n * gs);
            for (long i = 0; i < n * gs; ++i) sum[i] += src[i];
          }
          for (int m = 0; m < gs; ++m)
            std::copy(sum.begin() + m * n, sum.begin() + (m + 1) * n, at(g[m], st.ranks[g[m]].recv, n));
          break;
        }
        case engine::Collective::AllGather: {
          std::vector<long> all(n * gs);
          const bool ip = st.ranks[g[0]].in_place;
          for (int m = 0; m < gs; ++m) {
            const auto& rs = st.ranks[g[m]];
            REQUIRE(rs.in_place == ip);  // MPI: in-place on all members or none
            const long* src = ip ? at(g[m], rs.recv, n * gs) + m * n : at(g[m], rs.send, n);
            std::copy(src, src + n, all.begin() + m * n);
          }
          for (int d : g) std::copy(all.begin(), all.end(), at(d, st.ranks[d].recv, n * gs));
          break;
        }
        case engine::Collective::Broadcast: {
          std::vector<long> v(at(g[0], st.ranks[g[0]].send, n), at(g[0], st.ranks[g[0]].send, n) + n);
          for (int d : g) std::copy(v.begin(), v.end(), at(d, st.ranks[d].recv, n));
          break;
        }
      }
    }
    for (int d = 0; d < N; ++d)
      if (st.ranks[d].comm >= 0) copies(d, st.ranks[d].post);
  }
  std::vector<std::vector<long>> out(N);
  for (int d = 0; d < N; ++d) {
    copies(d, plan.final_copies[d]);
    out[d] = r[d].b[0];
  }
  return out;
}

// Runs every synthesized program of a placement through plan + emulation and checks the goal.
int check_all(const std::string& sys, std::vector<int> axes, engine::ParallelismMatrix x, std::vector<int> reduce,
              engine::MasterCollectives mc = engine::MasterCollectives::AllReduceOnly) {
  auto s = setup(sys, axes, x, reduce);
  const std::vector<std::string> names = s.sys.level_names();
  engine::SynthOptions opt;
  opt.master = mc;
  auto res = engine::synthesize(s.pl, names, engine::HierarchyKind::ReductionAxes, opt);
  const int N = s.pl.num_devices();
  int n = 0;
  for (const auto& prog : res.programs) {
    const auto lowered = engine::lower(res, prog);
    INFO(engine::program_name(res, prog));
    const auto plan = runtime::make_plan(lowered, N, s.pl.reduction_groups(), 0);
    REQUIRE(plan.reaches_goal);
    // The notation resolves to the same lowered program.
    CHECK(runtime::resolve_program(s.h, engine::program_name(res, prog)) == lowered);
    const long epu = 3;
    const auto out = emulate(plan, epu);
    for (int d = 0; d < N; ++d) {
      const auto& grp = s.pl.reduction_groups()[s.pl.reduction_group_of(d)];
      for (long e = 0; e < plan.units * epu; ++e) {
        long want = 0;
        for (int j : grp) want += (long(j) + 1) * 1000003L + e * 7919L;
        REQUIRE(out[d][e] == want);
      }
    }
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("one-step AllReduce: in place on main, one unit, no staging") {
  auto s = setup(kFig2a, {4, 4}, {{1, 2, 1, 2}, {1, 1, 2, 2}}, {1});
  auto prog = runtime::resolve_program(s.h, "AllReduce@(rack,Inside)");
  auto plan = runtime::make_plan(prog, 16, s.pl.reduction_groups(), 0);
  CHECK(plan.reaches_goal);
  CHECK(plan.units == 1);
  CHECK(plan.stage_units[0] == 0);
  CHECK(plan.stage_units[1] == 0);
  for (const auto& rs : plan.steps[0].ranks) {
    CHECK(rs.in_place);
    CHECK(rs.pre.empty());
    CHECK(rs.post.empty());
    CHECK(rs.recv == runtime::Region{Space::Main, 0});
  }
  // The step's groups are the reduction groups: the baseline reuses their communicators.
  CHECK(plan.comms.size() == 4);
  CHECK(plan.baseline_comms.size() == 4);
}

TEST_CASE("RS ; AR ; AG: no copies at all (RS into staging, AG back home)") {
  auto s = setup(kFig2a, {4, 4}, {{1, 2, 1, 2}, {1, 1, 2, 2}}, {1});
  auto prog = runtime::resolve_program(
      s.h, "ReduceScatter@(cpu,Inside) ; AllReduce@(cpu, Parallel(server)) ; AllGather@(cpu,InsideGroup)");
  auto plan = runtime::make_plan(prog, 16, s.pl.reduction_groups(), 3);
  REQUIRE(plan.steps.size() == 3);
  CHECK(plan.units == 2);
  for (int d = 0; d < 16; ++d) {
    for (const auto& st : plan.steps) {
      CHECK(st.ranks[d].pre.empty());
      CHECK(st.ranks[d].post.empty());
    }
    CHECK(plan.steps[0].ranks[d].recv.space == Space::Stage0);
    CHECK(plan.steps[1].ranks[d].in_place);
    CHECK(plan.steps[2].ranks[d].recv == runtime::Region{Space::Main, 0});
    CHECK(plan.final_copies[d].empty());
  }
  // Steps 1 and 3 share their groups: 8 + 8 communicators, plus 4 for the baseline.
  CHECK(plan.comms.size() == 20);
  // Columns recorded for rank 3 after step 1: it holds unit 1 with ranks {2,3}.
  CHECK(plan.columns[0][1] == std::vector<int>{2, 3});
  CHECK(plan.columns[0][0].empty());
}

TEST_CASE("non-contiguous AllGather: packed in staging, then unpacked home") {
  auto s = setup(kFig2a, {4, 4}, {{1, 2, 1, 2}, {1, 1, 2, 2}}, {1});
  auto prog = runtime::resolve_program(
      s.h, "ReduceScatter@(rack,Inside) ; AllGather@(cpu,Parallel(server)) ; AllGather@(cpu,Inside)");
  auto plan = runtime::make_plan(prog, 16, s.pl.reduction_groups(), 0);
  CHECK(plan.reaches_goal);
  // Rank 0 after step 2 holds units {0,2}: packed in a staging buffer.
  const auto& a2 = plan.steps[1].ranks[0].after;
  CHECK(a2.where != Space::Main);
  CHECK(a2.rows.format() == "{0,2}");
  // Step 3 interleaves {0,2} and {1,3}: unpacked home with copies.
  CHECK(!plan.steps[2].ranks[0].post.empty());
  CHECK(plan.steps[2].ranks[0].after.where == Space::Main);
  CHECK(emulate(plan, 2).size() == 16);
}

TEST_CASE("Master step: one group, the other ranks idle") {
  auto s = setup(kFig2a, {4, 4}, {{1, 2, 1, 2}, {1, 1, 2, 2}}, {1});
  auto prog =
      runtime::resolve_program(s.h, "Reduce@(cpu,Inside) ; AllReduce@(cpu,Master(server)) ; Broadcast@(cpu,Inside)");
  auto plan = runtime::make_plan(prog, 16, s.pl.reduction_groups(), 0);
  CHECK(plan.reaches_goal);
  int active = 0;
  for (const auto& rs : plan.steps[1].ranks) active += rs.comm >= 0;
  CHECK(active == 8);  // one pair per reduction group
}

TEST_CASE("invalid and wrong programs") {
  auto s = setup(kFig2a, {4, 4}, {{1, 2, 1, 2}, {1, 1, 2, 2}}, {1});
  auto bad = runtime::resolve_program(s.h, "AllReduce@(cpu,Inside) ; AllReduce@(cpu,Inside)");
  CHECK_THROWS_AS(runtime::make_plan(bad, 16, s.pl.reduction_groups()), p2v::Error);
  auto partial = runtime::resolve_program(s.h, "AllReduce@(cpu,Inside)");
  auto plan = runtime::make_plan(partial, 16, s.pl.reduction_groups());
  CHECK(!plan.reaches_goal);
  CHECK(!plan.goal_failure.empty());
  // A 16-device program on 8 ranks.
  auto ok = runtime::resolve_program(s.h, "AllReduce@(rack,Inside)");
  CHECK_THROWS_AS(runtime::make_plan(ok, 8, {{0, 1, 2, 3}, {4, 5, 6, 7}}), p2v::Error);
  CHECK_THROWS_AS(runtime::resolve_program(s.h, "AllReduce@(node,Inside)"), p2v::Error);
  CHECK_THROWS_AS(runtime::resolve_program(s.h, "AllReduce@(cpu,Inside) ;"), p2v::Error);
}

TEST_CASE("every synthesized program moves the data right (emulated MPI)") {
  int n = 0;
  n += check_all(kFig2a, {4, 4}, {{1, 2, 1, 2}, {1, 1, 2, 2}}, {1});
  n += check_all(kFig2a, {4, 4}, {{1, 2, 1, 2}, {1, 1, 2, 2}}, {0});
  n += check_all(kFig2a, {4, 4}, {{1, 1, 2, 2}, {1, 2, 1, 2}}, {1});
  n += check_all(kFig2a, {16}, {{1, 2, 2, 4}}, {0}, engine::MasterCollectives::All);
  n += check_all("node=2,gpu=4", {2, 4}, {{1, 2}, {2, 2}}, {0, 1}, engine::MasterCollectives::All);
  n += check_all("a=2,b=3,c=2", {2, 6}, {{2, 1, 1}, {1, 3, 2}}, {1});
  n += check_all("a=2,b=3,c=2", {12}, {{2, 3, 2}}, {0});
  MESSAGE("programs checked: " << n);
  CHECK(n > 300);
}
