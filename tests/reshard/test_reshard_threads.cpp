// Reshard programs run on the threads backend (runtime/reshard.hpp, the code MPI and NCCL run
// too): one thread per mesh device, every element of every device's final tile checked against
// τ2; peaks equal the plan's; communicator splits equal the distinct groupings; a program with a
// step removed is caught.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <array>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "p2v/reshard/plan.hpp"
#include "p2v/runtime/reshard.hpp"

namespace rs = p2v::reshard;
namespace rt = p2v::runtime;

namespace {

rs::Plan plan(const std::string& mesh, const std::string& from, const std::string& to) {
  return rs::plan(rs::Request{mesh, from, to, {}, "f32", rs::CostKind::Paper, {}, {}});
}

// Splits a run makes: one per distinct grouping of its allgathers and alltoalls, one for the
// world when it permutes.
int expected_splits(const rs::Program& p) {
  std::set<std::vector<std::vector<std::int64_t>>> keys;
  bool permute = false;
  for (const auto& s : p.steps) {
    if (s.step.op == rs::Op::AllGather || s.step.op == rs::Op::AllToAll) keys.insert(s.lowered.groups);
    if (s.step.op == rs::Op::AllPermute) permute = true;
  }
  return static_cast<int>(keys.size()) + (permute ? 1 : 0);
}

void check_run(const rs::Plan& p, const rs::Program& prog) {
  const auto r = rt::run_reshard_threads(p, prog, 2);
  INFO(r.first_wrong);
  CHECK(r.wrong == 0);
  CHECK(r.peak_tile_bytes == prog.peak * 8);
  CHECK(r.peak_bytes == prog.peak_staged * 8);
  CHECK(r.splits == expected_splits(prog));
}

}  // namespace

TEST_CASE("docs/reshard.md's permute-first examples and a relabelling run correctly on threads") {
  for (const auto& [mesh, from, to] :
       std::vector<std::array<std::string, 3>>{{"x=4,y=6", "[4{y,x}96]", "[16{y}96]"},
                                               {"a=2,b=2,c=2", "[3{b}6,2{a,c}8]", "[6,4{a}8]"},
                                               {"x=2,y=3", "[3{x}6,4]", "[2{y}6,4]"},
                                               {"x=2,y=2", "[8{x,y}32,4]", "[16{x}32,2{y}4]"},
                                               {"a=8", "[1{a}8,8]", "[8,1{a}8]"}}) {
    CAPTURE(mesh);
    CAPTURE(to);
    const auto p = plan(mesh, from, to);
    REQUIRE(!p.program.steps.empty());
    check_run(p, p.program);
    check_run(p, p.baseline);
  }
}

TEST_CASE("random problems on all four meshes run correctly on threads") {
  std::mt19937_64 rng(27);
  int permutes = 0, alltoalls = 0;
  for (int k = 0; k < 40; ++k) {
    const auto q = rs::random_problem(rng, k % rs::kRandomMeshKinds, 4, 1);
    CAPTURE(q.mesh);
    CAPTURE(q.from);
    CAPTURE(q.to);
    const auto p = plan(q.mesh, q.from, q.to);
    for (const auto& s : p.program.steps) {
      permutes += s.step.op == rs::Op::AllPermute;
      alltoalls += s.step.op == rs::Op::AllToAll;
    }
    check_run(p, p.program);
    check_run(p, p.baseline);
  }
  // The sample exercises every operation the backends gained.
  CHECK(permutes > 0);
  CHECK(alltoalls > 0);
}

TEST_CASE("a program with a step removed leaves wrong data, and the run says where") {
  const auto p = plan("a=2,b=2,c=2", "[3{b}6,2{a,c}8]", "[6,4{a}8]");
  REQUIRE(p.program.steps.size() >= 2);
  for (std::size_t drop = 0; drop < p.program.steps.size(); ++drop) {
    rs::Program bad = p.program;
    bad.steps.erase(bad.steps.begin() + static_cast<std::ptrdiff_t>(drop));
    const auto r = rt::run_reshard_threads(p, bad, 1);
    CAPTURE(drop);
    CHECK(r.wrong > 0);
    CHECK(r.first_wrong.rfind("rank ", 0) == 0);
  }
}
