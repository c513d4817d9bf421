// encodings::verify_placements: the enumerator against both solvers per matrix, its scheduling,
// the comparison, the diagnostics and the errors (`p2v verify` is a thin shell over it).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "p2v/encodings/verify.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"

using namespace p2v;
using namespace p2v::encodings;

namespace {

VerifyOptions small_options(int max_size) {
  VerifyOptions o;
  o.synth.max_size = max_size;
  o.jobs = 2;
  return o;
}

}  // namespace

TEST_CASE("verify_placements: every matrix, both solvers, identical sets, cases in matrix order") {
  const auto sys = engine::parse_system_inline("node=2,gpu=4");
  const std::vector<int> axes = {2, 4}, reduce = {1};
  const auto matrices = engine::enumerate_matrices(sys.cardinalities(), axes);
  REQUIRE(matrices.size() == 2);
  std::vector<engine::ParallelismMatrix> seen;
  const auto res = verify_placements(sys, axes, reduce, matrices, small_options(3),
                                     [&](const VerifyCase& c) { seen.push_back(c.x); });
  CHECK(res.identical);
  CHECK(seen == matrices);
  REQUIRE(res.cases.size() == 2);
  CHECK_FALSE(res.any_shape());
  for (const auto& c : res.cases) {
    CHECK(c.same());
    REQUIRE(c.runs.size() == 2);
    CHECK(c.run_agrees == std::vector<bool>{true, true});
    CHECK(c.differences.empty());
    CHECK_FALSE(c.enumerator.programs.empty());
    for (const auto& run : c.runs) CHECK(run.programs.size() == c.enumerator.programs.size());
    const auto j = to_json(c, false);
    CHECK(j.at("identical").get<bool>());
    CHECK(j.at("encoding") == "concrete");
    CHECK(j.at("enumerator").at("programs") == c.enumerator.programs.size());
    CHECK(j.at("solvers").size() == 2);
    CHECK(j.at("solvers")[0].at("programs") == c.enumerator.programs.size());
  }
}

TEST_CASE("verify_placements: the minimality query and the shape encoding above 16 devices per group") {
  const auto sys = engine::parse_system_inline("a=16,b=16");
  VerifyOptions o = small_options(4);
  o.minimal = true;
  const auto res = verify_placements(sys, {256}, {0}, {engine::ParallelismMatrix{{16, 16}}}, o);
  REQUIRE(res.cases.size() == 1);
  const VerifyCase& c = res.cases[0];
  CHECK(res.any_shape());
  REQUIRE(c.shape.has_value());
  CHECK(c.enumerator.hierarchy.num_local() == 4);  // the smallest instance: 2 x 2 device classes
  CHECK(c.same());
  for (const auto& run : c.runs) CHECK(run.shortest == c.shortest());
  CHECK(c.shortest() > 0);
  CHECK(to_json(c, true).at("solvers")[0].at("agrees").get<bool>());
}

TEST_CASE("verify_placements: bad options and failed solver runs are errors, never identical") {
  const auto sys = engine::parse_system_inline("node=2,gpu=4");
  const auto matrices = engine::enumerate_matrices(sys.cardinalities(), {2, 4});
  VerifyOptions o = small_options(3);
  o.kind = engine::HierarchyKind::System;
  o.encoding = VerifyEncoding::Shape;
  CHECK_THROWS_WITH_AS(verify_placements(sys, {2, 4}, {1}, matrices, o),
                       doctest::Contains("works on hierarchy (d) only"), Error);
  o = small_options(3);
  o.minimal = true;
  o.certify_dir = "/nonexistent";
  CHECK_THROWS_WITH_AS(verify_placements(sys, {2, 4}, {1}, matrices, o), doctest::Contains("drop --minimal"), Error);
  CHECK_THROWS_AS(parse_verify_encoding("symbolic"), Error);
  // A time limit too short for any check: the error names the matrix and the solver.
  o = small_options(4);
  o.search.timeout_ms = 1;
  int reported = 0;
  CHECK_THROWS_WITH_AS(verify_placements(sys, {2, 4}, {1}, matrices, o, [&](const VerifyCase&) { ++reported; }),
                       doctest::Contains("matrix"), Error);
  CHECK(reported == 0);
}

TEST_CASE("diagnose: the first invalid step with the state before it, or the states of a valid program") {
  const auto sys = engine::parse_system_inline("node=2,gpu=2");
  const auto matrices = engine::enumerate_matrices(sys.cardinalities(), {4});
  const auto res = verify_placements(sys, {4}, {0}, {matrices[0]}, small_options(3));
  const auto& r = res.cases[0].enumerator;
  REQUIRE_FALSE(r.programs.empty());
  const engine::Groups goal = {{0, 1, 2, 3}};
  CHECK(diagnose(r, r.programs[0], goal).find("valid under the engine's rules") == 0);
  // An AllGather first: nothing is scattered yet, so it is invalid at step 1.
  int ag = -1;
  for (std::size_t i = 0; i < r.instructions.size(); ++i)
    if (r.instructions[i].collective == engine::Collective::AllGather) ag = static_cast<int>(i);
  REQUIRE(ag >= 0);
  const std::string why = diagnose(r, engine::Program{ag}, goal);
  CHECK(why.find("step 1 (") == 0);
  CHECK(why.find("is invalid") != std::string::npos);
  CHECK(why.find("device 0:") != std::string::npos);
}
