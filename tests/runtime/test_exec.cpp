// The executor over the threads backend, in process and without MPI: every rank (a thread) plans
// its own part, runs it, and checks every element after every step against the state semantics.
#include <doctest/doctest.h>

#include <thread>

#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/runtime/backend.hpp"
#include "p2v/runtime/coordinator.hpp"
#include "p2v/runtime/jobs.hpp"
#include "p2v/runtime/run.hpp"

using namespace p2v;

namespace {

// Runs `prog` on one thread per rank; returns rank 0's report (and every rank's ok flag).
runtime::RunReport run_threads(const std::shared_ptr<const runtime::PatternProgram>& prog, runtime::RunOptions opt,
                               bool* all_ok, int* splits) {
  const int n = static_cast<int>(prog->num_ranks());
  auto team = runtime::make_thread_team(n);
  auto fabric = runtime::make_thread_fabric(n);
  std::vector<runtime::RunReport> reps(n);
  std::vector<int> sp(n);
  std::vector<std::thread> th;
  for (int i = 0; i < n; ++i)
    th.emplace_back([&, i] {
      auto be = runtime::make_thread_backend(fabric, i, opt.dtype);
      reps[i] = runtime::run_program(runtime::make_rank_plan(prog, i, opt.verify), *be, opt, *team[i]);
      sp[i] = be->splits();
    });
  for (auto& t : th) t.join();
  *all_ok = true;
  for (const auto& r : reps) *all_ok &= r.ok;
  *splits = sp[0];
  return reps[0];
}

}  // namespace

TEST_CASE("executor on threads: every program of a placement verified, faults caught (no MPI)") {
  const auto sys = engine::parse_system_arg("node=2,gpu=4");
  const engine::ParallelismMatrix x = {{1, 2}, {2, 2}};
  engine::Placement pl(sys.cardinalities(), {2, 4}, x, {1});
  engine::SynthOptions so;
  so.max_size = 4;
  const auto res = engine::synthesize(pl, sys.level_names(), engine::HierarchyKind::ReductionAxes, so);
  runtime::RunOptions opt;
  opt.bytes = 1024;
  opt.iters = 1;
  opt.warmup = 0;
  int n = 0;
  for (const auto& prog : res.programs) {
    const auto name = engine::program_name(res, prog);
    INFO(name);
    const auto r = runtime::resolve_patterns(sys, x, {1}, engine::HierarchyKind::ReductionAxes, name);
    bool ok = false;
    int splits = 0;
    const auto rep = run_threads(r.program, opt, &ok, &splits);
    REQUIRE(ok);
    CHECK(rep.steps.size() == prog.size());
    ++n;
  }
  CHECK(n == static_cast<int>(res.programs.size()));
  CHECK(n > 10);

  // A corrupted element after step 2 of RS ; AR ; AG is reported with its step and rank.
  const auto r = runtime::resolve_patterns(
      sys, x, {1}, engine::HierarchyKind::ReductionAxes,
      "ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; AllGather@(node,Inside)");
  opt.fault_step = 1;
  opt.fault_rank = 5;
  bool ok = true;
  int splits = 0;
  const auto rep = run_threads(r.program, opt, &ok, &splits);
  CHECK(!ok);
  CHECK(rep.failure.find("after step 2 (AllReduce): rank 5") != std::string::npos);
  // A program that misses the goal fails the final check.
  const auto partial =
      runtime::resolve_patterns(sys, x, {1}, engine::HierarchyKind::ReductionAxes, "AllReduce@(node,Inside)");
  CHECK(!partial.reaches_goal);
  opt.fault_step = opt.fault_rank = -1;
  const auto rep2 = run_threads(partial.program, opt, &ok, &splits);
  CHECK(!ok);
  CHECK(rep2.failure.find("goal") != std::string::npos);
}

TEST_CASE("communicators: one split per step with new groups, reused across steps and the baseline") {
  const auto sys = engine::parse_system_arg("rack=1,server=2,cpu=2,gpu=4");
  const auto r = runtime::resolve_patterns(
      sys, {{1, 2, 1, 2}, {1, 1, 2, 2}}, {1}, engine::HierarchyKind::ReductionAxes,
      "ReduceScatter@(cpu,Inside) ; AllReduce@(cpu,Parallel(server)) ; AllGather@(cpu,Inside)");
  runtime::RunOptions opt;
  opt.bytes = 4096;
  opt.iters = 1;
  opt.warmup = 0;
  bool ok = false;
  int splits = 0;
  const auto rep = run_threads(r.program, opt, &ok, &splits);
  CHECK(ok);
  CHECK(splits == 3);  // RS/AG share one, AR one, the baseline one
  CHECK(rep.steps[0].groups_list == "0-1|2-3|4-5|6-7|8-9|10-11|12-13|14-15");
  CHECK(rep.steps[1].groups_list == "0 4|1 5|2 6|3 7|8 12|9 13|10 14|11 15");
}
