// Rank-local plans against the global plan: for every synthesized program of many placements on
// several systems (hierarchies (d), (d) uncollapsed and (a)-(c), both Master settings), every
// rank's own plan (groups from its coordinates, rows replayed for itself) equals its part of the
// global plan exactly: roles, copies, regions, counts, layouts, final copies, and the columns the
// checked run compares against.
#include <doctest/doctest.h>

#include <fmt/core.h>
#include <algorithm>
#include <map>

#include "p2v/engine/error.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/runtime/jobs.hpp"
#include "p2v/runtime/plan.hpp"
#include "p2v/runtime/program_source.hpp"
#include "p2v/runtime/rank_plan.hpp"

using namespace p2v;
using engine::HierarchyKind;

namespace {

struct Count {
  int programs = 0, ranks = 0;
  int strided = 0, listed = 0;                 // programs planned with strided AllGather families / member lists
  std::map<std::string, engine::Groups> keys;  // communicator key -> groups, per system
};

// Equal communicator keys mean equal groups (the backends' cache relies on it across programs
// and placements), and equal groups of one pattern kind get one key.
void check_key(Count& c, const engine::GroupPattern& g, const engine::Shape& grid) {
  const auto groups = engine::lower_pattern(g, grid);
  const auto [it, fresh] = c.keys.try_emplace(runtime::pattern_key(g, grid), groups);
  REQUIRE(it->second == groups);
  (void)fresh;
}

// Every program of placement (x, reduce) of `sys` in hierarchy `kind`: local vs global.
void compare_all(const engine::System& sys, const std::vector<int>& axes, const engine::ParallelismMatrix& x,
                 const std::vector<int>& reduce, HierarchyKind kind, engine::MasterCollectives mc, int max_size,
                 Count& count) {
  engine::Placement pl(sys.cardinalities(), axes, x, reduce);
  engine::SynthOptions opt;
  opt.master = mc;
  opt.max_size = max_size;
  const auto res = engine::synthesize(pl, sys.level_names(), kind, opt);
  const int N = pl.num_devices();
  for (const auto& prog : res.programs) {
    const std::string name = engine::program_name(res, prog);
    INFO(sys.name, " ", engine::format_matrix_brackets(x), " reduce ", reduce[0], " ", engine::to_string(kind), ": ",
         name);
    const auto lowered = engine::lower(res, prog);
    const auto r = runtime::resolve_patterns(sys, x, reduce, kind, name);
    REQUIRE(r.reaches_goal);
    // The patterns are the program's groups.
    for (std::size_t s = 0; s < lowered.size(); ++s) {
      REQUIRE(engine::lower_pattern(r.program->steps[s].groups, r.program->grid) == lowered[s].groups);
      check_key(count, r.program->steps[s].groups, r.program->grid);
    }
    check_key(count, r.program->reduction, r.program->grid);
    REQUIRE(engine::lower_pattern(r.program->reduction, r.program->grid) == pl.reduction_groups());
    const auto global = runtime::make_plan(lowered, N, pl.reduction_groups());
    for (int d = 0; d < N; ++d) {
      INFO("rank ", d);
      const auto mine = runtime::make_rank_plan(r.program, d, false);
      REQUIRE(runtime::compare_views(runtime::rank_view(global, d), runtime::rank_view(mine)) == "");
      if (d == 0) ++(mine.strided ? count.strided : count.listed);
      // Same roles: group ids are the first members, in the global plan's groups.
      for (std::size_t s = 0; s < lowered.size(); ++s) {
        const auto& st = mine.steps[s];
        if (!st.comm.active()) continue;
        const auto& g = global.comms[global.steps[s].ranks[d].comm];
        REQUIRE(st.comm.group == g[0]);
        REQUIRE(g[st.comm.member] == d);
      }
      ++count.ranks;
    }
    // The columns, on a few ranks (each needs its own global plan).
    for (int d : {0, N / 2, N - 1}) {
      INFO("columns of rank ", d);
      const auto g = runtime::make_plan(lowered, N, pl.reduction_groups(), d);
      REQUIRE(runtime::check_against_global(r.program, d) == "");
      const auto mine = runtime::make_rank_plan(r.program, d, true);
      REQUIRE(runtime::compare_views(runtime::rank_view(g, d), runtime::rank_view(mine)) == "");
      std::vector<int> group = pl.reduction_groups()[pl.reduction_group_of(d)];
      REQUIRE(mine.goal_columns == group);
    }
    ++count.programs;
  }
}

void compare_system(const std::string& system, const std::vector<int>& axes, HierarchyKind kind,
                    engine::MasterCollectives mc, int max_size, Count& count) {
  const auto sys = engine::parse_system_arg(system);
  count.keys.clear();
  for (const auto& x : engine::enumerate_matrices(sys.cardinalities(), axes))
    for (int red = 0; red < static_cast<int>(axes.size()); ++red)
      compare_all(sys, axes, x, {red}, kind, mc, max_size, count);
}

}  // namespace

TEST_CASE("rank-local plans equal the global plan, rank by rank, for every program (hierarchy (d))") {
  Count c;
  using MC = engine::MasterCollectives;
  compare_system("rack=1,server=2,cpu=2,gpu=4", {4, 4}, HierarchyKind::ReductionAxes, MC::AllReduceOnly, 5, c);
  compare_system("node=2,gpu=4", {8}, HierarchyKind::ReductionAxes, MC::All, 5, c);
  compare_system("a=2,b=3,c=2", {2, 6}, HierarchyKind::ReductionAxes, MC::AllReduceOnly, 4, c);
  compare_system("a=2,b=2,c=2", {2, 2, 2}, HierarchyKind::ReductionAxes, MC::All, 4, c);
  compare_system("a=3,b=4", {6, 2}, HierarchyKind::ReductionUncollapsed, MC::AllReduceOnly, 4, c);
  compare_system("node=2,gpu=6", {12}, HierarchyKind::ReductionAxes, MC::All, 4, c);
  MESSAGE("programs: " << c.programs << ", rank plans compared: " << c.ranks << ", strided " << c.strided << ", listed "
                       << c.listed);
  CHECK(c.programs > 400);
  // Both ways of planning an AllGather are compared with the global plan.
  CHECK(c.strided > 300);
  CHECK(c.listed > 0);
}

TEST_CASE("rank-local plans equal the global plan for hierarchies (a)-(c)") {
  Count c;
  using MC = engine::MasterCollectives;
  for (auto kind : {HierarchyKind::System, HierarchyKind::ColumnBased, HierarchyKind::RowBased}) {
    const int before = c.programs;
    compare_system("node=2,gpu=4", {2, 4}, kind, MC::AllReduceOnly, 3, c);
    compare_system("a=2,b=3", {3, 2}, kind, MC::All, 3, c);
    CHECK(c.programs > before);
  }
  MESSAGE("programs: " << c.programs << ", rank plans compared: " << c.ranks << ", strided " << c.strided << ", listed "
                       << c.listed);
}

TEST_CASE("rank plans at large sizes: a rank's own part only") {
  // 131,072 ranks (pod=16,rack=32,node=32,gpu=8), one axis reduced: RS ; AR ; AG over gpu / the rest.
  const auto sys = engine::parse_system_arg("pod=16,rack=32,node=32,gpu=8");
  const auto r = runtime::resolve_patterns(
      sys, {{16, 32, 32, 8}}, {0}, HierarchyKind::ReductionAxes,
      "ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; AllGather@(node,Inside)");
  REQUIRE(r.reaches_goal);
  for (std::int64_t d : {0LL, 65536LL + 3, 131071LL}) {
    const auto p = runtime::make_rank_plan(r.program, d, false);
    REQUIRE(p.steps.size() == 3);
    CHECK(p.steps[0].comm.group_size == 8);
    CHECK(p.steps[0].comm.member == d % 8);
    CHECK(p.steps[0].comm.group == d - d % 8);
    CHECK(p.steps[1].comm.group_size == 16384);
    CHECK(p.steps[1].comm.group == d % 8);
    CHECK(p.steps[1].comm.member == d / 8);
    // 8 units of 16,384 rows: the rank's block after RS, the whole buffer back home after AG.
    CHECK(p.units == 8);
    CHECK(p.steps[0].rs.after.rows.format() == fmt::format("{{{}}}", d % 8));
    CHECK(p.steps[2].rs.in_place == false);
    CHECK(p.steps[2].rs.after.where == runtime::Space::Main);
    CHECK(p.final_copies.empty());
  }
  // Hierarchies (a)-(c) are checked on the whole system: refused above the state engine's size.
  CHECK_THROWS_AS(
      runtime::resolve_patterns(sys, {{16, 32, 32, 8}}, {0}, HierarchyKind::System, "AllReduce@(root,Inside)"),
      p2v::Error);
}

TEST_CASE("validation on the smallest instance agrees with the system for every short program") {
  // resolve_patterns checks (d) programs on the shape's smallest instance; the global plan checks
  // them on the system. Every program of up to 3 instructions (any collective, Master too) gets
  // the same verdict: invalid at the same step, or valid with the same goal verdict.
  int compared = 0, valid = 0;
  struct P {
    const char* sys;
    std::vector<int> axes;
    engine::ParallelismMatrix x;
    std::vector<int> reduce;
  };
  for (const P& p :
       {P{"node=2,gpu=6", {12}, {{2, 6}}, {0}}, P{"a=2,b=3,c=2", {2, 6}, {{2, 1, 1}, {1, 3, 2}}, {1}},
        P{"a=3,b=4", {6, 2}, {{3, 2}, {1, 2}}, {0}}, P{"a=3,b=2,c=2", {3, 4}, {{3, 1, 1}, {1, 2, 2}}, {0, 1}}}) {
    const auto sys = engine::parse_system_arg(p.sys);
    engine::Placement pl(sys.cardinalities(), p.axes, p.x, p.reduce);
    const auto h = runtime::program_hierarchy(sys, pl, HierarchyKind::ReductionAxes);
    const auto ins = engine::instructions(h, engine::MasterCollectives::All);
    std::vector<std::vector<int>> progs;
    for (int a = 0; a < static_cast<int>(ins.size()); ++a) {
      progs.push_back({a});
      for (int b = 0; b < static_cast<int>(ins.size()); ++b) {
        progs.push_back({a, b});
        for (int c = 0; c < static_cast<int>(ins.size()); ++c) progs.push_back({a, b, c});
      }
    }
    for (const auto& prog : progs) {
      std::string name;
      engine::LoweredProgram lowered;
      for (int i : prog) {
        name += (name.empty() ? "" : " ; ") + engine::instruction_name(h, ins[i]);
        lowered.push_back({ins[i].collective, engine::lower_groups(h, ins[i].grouping.groups)});
      }
      INFO(p.sys, ": ", name);
      std::string real_error, shape_error;
      bool real_goal = false, shape_goal = false;
      try {
        real_goal = runtime::make_plan(lowered, pl.num_devices(), pl.reduction_groups()).reaches_goal;
      } catch (const p2v::Error& e) {
        real_error = e.what();
      }
      try {
        shape_goal = runtime::resolve_patterns(sys, p.x, p.reduce, HierarchyKind::ReductionAxes, name).reaches_goal;
      } catch (const p2v::Error& e) {
        shape_error = e.what();
      }
      // Same verdict, and an invalid program fails at the same step.
      REQUIRE(real_error.empty() == shape_error.empty());
      if (!real_error.empty())
        REQUIRE(real_error.substr(0, real_error.find(':')) == shape_error.substr(0, shape_error.find(':')));
      else
        REQUIRE(real_goal == shape_goal);
      valid += real_error.empty();
      ++compared;
    }
  }
  MESSAGE("programs compared: " << compared << ", valid: " << valid);
  CHECK(valid > 100);
}
