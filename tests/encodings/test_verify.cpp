// encodings::verify_placements: the enumerator against both solvers per matrix, its scheduling,
// the comparison, the diagnostics and the errors (`p2v verify` is a thin shell over it).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>

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
  VerifyOptions o = small_options(3);
  o.encoding = VerifyEncoding::Concrete;  // on the devices (auto takes the symbolic encoding here)
  const auto res = verify_placements(sys, axes, reduce, matrices, o, [&](const VerifyCase& c) { seen.push_back(c.x); });
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
  o.encoding = VerifyEncoding::Shape;  // the concrete encoding there (auto: symbolic)
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
  CHECK(to_json(c, true).at("encoding") == "shape");
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
  CHECK_THROWS_AS(parse_verify_encoding("fast"), Error);
  // A time limit too short for any check: the error names the matrix and the solver.
  o = small_options(4);
  o.encoding = VerifyEncoding::Concrete;
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

namespace {

// The notation of every program of a case's enumerator and of each of its runs.
std::set<std::string> names(const engine::SynthResult& r, const std::vector<engine::Program>& progs) {
  std::set<std::string> out;
  for (const auto& p : progs) out.insert(engine::program_name(r, p));
  return out;
}

VerifyOptions with_encoding(int max_size, VerifyEncoding e, bool minimal) {
  VerifyOptions o = small_options(max_size);
  o.encoding = e;
  o.minimal = minimal;
  return o;
}

}  // namespace

TEST_CASE("verify --encoding symbolic: symbolic = concrete = enumerator, sets and minimal, both solvers") {
  struct Sys {
    const char* spec;
    std::vector<int> axes, reduce;
    int L;
  };
  // Two-level (every matrix of [2 4] over axes 2,4: smallest instances [1 2 2] and [1 2]; the
  // system's groups for concrete), two-level on its own smallest instance, three-level (8 devices,
  // its own smallest instance; L = 2 because the concrete encoding takes 11 s CPU at L = 3), and a
  // large system whose reduction group is far beyond the concrete encoding (only its instance is).
  for (const Sys& sys : {Sys{"node=2,gpu=4", {2, 4}, {1}, 5}, Sys{"node=2,gpu=2", {4}, {0}, 5},
                         Sys{"rack=2,node=2,gpu=2", {8}, {0}, 2}, Sys{"node=64,gpu=8", {512}, {0}, 4}}) {
    CAPTURE(sys.spec);
    const auto system = engine::parse_system_inline(sys.spec);
    const auto matrices = engine::enumerate_matrices(system.cardinalities(), sys.axes);
    int same_instance = 0;  // cases whose concrete run is on the symbolic run's hierarchy
    for (const bool minimal : {false, true}) {
      CAPTURE(minimal);
      const auto sym = verify_placements(system, sys.axes, sys.reduce, matrices,
                                         with_encoding(sys.L, VerifyEncoding::Symbolic, minimal));
      const auto shp = verify_placements(system, sys.axes, sys.reduce, matrices,
                                         with_encoding(sys.L, VerifyEncoding::Shape, minimal));
      CHECK(sym.identical);
      CHECK(shp.identical);
      REQUIRE(sym.cases.size() == matrices.size());
      REQUIRE(shp.cases.size() == matrices.size());
      // The reduction group's own devices where the concrete encoding fits.
      const bool small = system.num_devices() <= 16;
      std::optional<VerifyResult> conc;
      if (small)
        conc = verify_placements(system, sys.axes, sys.reduce, matrices,
                                 with_encoding(sys.L, VerifyEncoding::Concrete, minimal));
      for (std::size_t i = 0; i < matrices.size(); ++i) {
        const VerifyCase& s = sym.cases[i];
        const VerifyCase& h = shp.cases[i];
        CHECK(s.symbolic);
        CHECK(std::string(s.encoding()) == "symbolic");
        CHECK(std::string(h.encoding()) == "shape");
        CHECK(to_json(s, minimal).at("encoding") == "symbolic");
        REQUIRE(s.runs.size() == 2);
        REQUIRE(h.runs.size() == 2);
        CHECK(names(s.enumerator, s.enumerator.programs) == names(h.enumerator, h.enumerator.programs));
        for (std::size_t k = 0; k < 2; ++k) {
          CHECK(s.runs[k].shortest == s.shortest());
          CHECK(h.runs[k].shortest == s.shortest());
          if (!minimal) {  // the same programs, found by each solver in each encoding
            CHECK(s.runs[k].programs == s.enumerator.programs);
            CHECK(h.runs[k].programs == h.enumerator.programs);
          }
        }
        if (conc) {
          const VerifyCase& c = conc->cases[i];
          CHECK(c.same());
          CHECK(std::string(c.encoding()) == "concrete");
          CHECK(c.shortest() == s.shortest());
          if (!minimal) {
            for (const auto& run : c.runs) CHECK(run.programs == c.enumerator.programs);
            // Where the group is its own smallest instance, the same programs by name as well.
            if (c.enumerator.hierarchy.cards == s.enumerator.hierarchy.cards) {
              ++same_instance;
              CHECK(names(c.enumerator, c.runs[1].programs) == names(s.enumerator, s.runs[0].programs));
            }
          }
        }
      }
    }
    if (system.num_devices() <= 16) CHECK(same_instance > 0);
  }
}

TEST_CASE("verify auto: symbolic where it is faster, the earlier choice elsewhere") {
  // 8 devices, every level of cardinality 2: the group is its own smallest instance -> symbolic.
  const auto r8 =
      verify_placements(engine::parse_system_inline("rack=2,node=2,gpu=2"), {8}, {0},
                        {engine::ParallelismMatrix{{2, 2, 2}}}, with_encoding(3, VerifyEncoding::Auto, true));
  REQUIRE(r8.cases.size() == 1);
  CHECK(std::string(r8.cases[0].encoding()) == "symbolic");
  CHECK(r8.identical);
  // 4 devices per group: symbolic on the smallest instance, also where that is smaller ([1 4] -> [1 2]).
  const auto s4 = engine::parse_system_inline("node=2,gpu=4");
  const auto r4 = verify_placements(s4, {2, 4}, {1}, engine::enumerate_matrices(s4.cardinalities(), {2, 4}),
                                    with_encoding(3, VerifyEncoding::Auto, false));
  REQUIRE(r4.cases.size() == 2);
  for (const auto& c : r4.cases) CHECK(std::string(c.encoding()) == "symbolic");
  CHECK(r4.identical);
  // 2 devices per group: below kAutoSymbolicFrom, the concrete encoding on the devices as before.
  const auto s2 = engine::parse_system_inline("node=2,gpu=2");
  const auto r2 = verify_placements(s2, {2, 2}, {1}, engine::enumerate_matrices(s2.cardinalities(), {2, 2}),
                                    with_encoding(3, VerifyEncoding::Auto, false));
  REQUIRE_FALSE(r2.cases.empty());
  for (const auto& c : r2.cases) CHECK(std::string(c.encoding()) == "concrete");
  // --master-collectives all: the per-level encoding does not apply; auto falls back (concrete on
  // the 8 devices), and forcing symbolic is an error naming why.
  VerifyOptions o = with_encoding(3, VerifyEncoding::Auto, true);
  o.synth.master = engine::MasterCollectives::All;
  const auto sys = engine::parse_system_inline("rack=2,node=2,gpu=2");
  const auto fb = verify_placements(sys, {8}, {0}, {engine::ParallelismMatrix{{2, 2, 2}}}, o);
  CHECK(std::string(fb.cases[0].encoding()) == "concrete");
  CHECK(fb.identical);
  o.encoding = VerifyEncoding::Symbolic;
  CHECK_THROWS_WITH_AS(verify_placements(sys, {8}, {0}, {engine::ParallelismMatrix{{2, 2, 2}}}, o),
                       doctest::Contains("--encoding symbolic: the per-level encoding does not apply to matrix"),
                       Error);
  CHECK_THROWS_WITH_AS(verify_placements(sys, {8}, {0}, {engine::ParallelismMatrix{{2, 2, 2}}}, o),
                       doctest::Contains("master-collectives all"), Error);
  // Hierarchies (a)-(c) cover every device: no shape, no symbolic encoding.
  o = with_encoding(3, VerifyEncoding::Symbolic, true);
  o.kind = engine::HierarchyKind::System;
  CHECK_THROWS_WITH_AS(verify_placements(sys, {8}, {0}, {engine::ParallelismMatrix{{2, 2, 2}}}, o),
                       doctest::Contains("--encoding symbolic works on hierarchy (d) only"), Error);
  CHECK(parse_verify_encoding("symbolic") == VerifyEncoding::Symbolic);
  CHECK(parse_verify_encoding("per-level") == VerifyEncoding::Symbolic);
  CHECK_THROWS_AS(parse_verify_encoding("fast"), Error);
}

TEST_CASE("verify --encoding symbolic: a missing, an extra or a wrong shortest program is DIFFERENT") {
  const auto sys = engine::parse_system_inline("rack=2,node=2,gpu=2");
  const std::vector<engine::ParallelismMatrix> x = {engine::ParallelismMatrix{{2, 2, 2}}};
  const VerifyOptions o = with_encoding(3, VerifyEncoding::Symbolic, false);
  const auto res = verify_placements(sys, {8}, {0}, x, o);
  REQUIRE(res.identical);
  const VerifyCase good = res.cases[0];
  REQUIRE(good.enumerator.programs.size() > 2);
  {  // z3's run lost a program: the enumerator's extra one is named, with the per-level diagnosis
    VerifyCase c = good;
    c.runs[0].programs.erase(c.runs[0].programs.begin() + 1);
    compare_runs(c, o);
    CHECK_FALSE(c.same());
    CHECK(c.run_agrees == std::vector<bool>{false, true});
    REQUIRE(c.differences.size() == 1);
    CHECK(c.differences[0].find("only the enumerator finds: " +
                                engine::program_name(c.enumerator, good.enumerator.programs[1])) == 0);
    CHECK(c.differences[0].find("the per-level encoding rejects it") != std::string::npos);
    CHECK_FALSE(to_json(c, false).at("identical").get<bool>());
  }
  {  // cvc5's run has a program the engine rejects (a step appended to a complete program)
    VerifyCase c = good;
    auto bad = good.enumerator.programs.front();
    bad.push_back(bad.front());
    c.runs[1].programs.push_back(bad);
    compare_runs(c, o);
    CHECK(c.run_agrees == std::vector<bool>{true, false});
    REQUIRE(c.differences.size() == 1);
    CHECK(c.differences[0].find("only cvc5 finds") == 0);
  }
  {  // minimal: a shortest length one too long
    VerifyOptions om = o;
    om.minimal = true;
    const auto rm = verify_placements(sys, {8}, {0}, x, om);
    REQUIRE(rm.identical);
    VerifyCase c = rm.cases[0];
    c.runs[0].shortest += 1;
    compare_runs(c, om);
    CHECK_FALSE(c.same());
    REQUIRE_FALSE(c.differences.empty());
    CHECK(c.differences[0].find("shortest program has") != std::string::npos);
  }
}

#ifdef P2V_BIN
TEST_CASE("p2v verify --encoding symbolic: the encoding per case in text and JSON; unsupported is exit 2") {
  const std::string out = (std::filesystem::temp_directory_path() / "p2v-test-verify-symbolic.out").string();
  auto run = [&](const std::string& args) {
    const int rc = std::system((std::string(P2V_BIN) + " " + args + " > " + out + " 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  auto read = [&] {
    std::ifstream f(out);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::string problem = "verify --system node=1024,gpu=8 --axes 8192 --reduce 0 --max-size 4 ";
  CHECK(run(problem + "--encoding symbolic --minimal") == 0);
  CHECK(read().find(" symbolic ") != std::string::npos);
  CHECK(read().find("verified: 1 matrices") != std::string::npos);
  CHECK(run(problem + "--encoding symbolic --json") == 0);
  const auto j = nlohmann::json::parse(read());
  CHECK(j.at("results")[0].at("encoding") == "symbolic");
  CHECK(j.at("results")[0].at("identical").get<bool>());
  CHECK(run(problem + "--encoding shape --minimal --json") == 0);
  CHECK(nlohmann::json::parse(read()).at("results")[0].at("encoding") == "shape");
  CHECK(run(problem + "--encoding symbolic --master-collectives all") == 2);
  CHECK(read().find("p2v: error: --encoding symbolic: the per-level encoding does not apply") != std::string::npos);
  CHECK(read().find("verified") == std::string::npos);
  CHECK(run(problem + "--encoding fast") == 2);
}
#endif
