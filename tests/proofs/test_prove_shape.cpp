// prove per shape (docs/shape.md §9): on small systems, every check computed on the placement's
// smallest instance equals the check computed on the system's devices (status, counts, witness
// notation), for every matrix of a set of systems, every reduction-axis set, both Master settings.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fmt/core.h>

#include <algorithm>
#include <regex>
#include <string>

#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/proofs/expressiveness.hpp"
#include "p2v/proofs/prove_run.hpp"

using namespace p2v;
using proofs::Status;

namespace {

// Device lists ("{0,4}{1,5}") name devices of the instance or of the system: compare the rest.
// (the instance has fewer groups per step, so whole group lists are replaced).
std::string without_devices(const std::string& s) {
  return std::regex_replace(s, std::regex(R"((\{[0-9,]*\})+)"), "{..}");
}

struct Case {
  const char* system;
  std::vector<int> axes;
};

}  // namespace

TEST_CASE("prove on the smallest instance equals prove on the devices, exhaustively on small systems") {
  const std::vector<Case> cases{{"node=3,gpu=2", {6}},          {"node=4,gpu=3", {12}},   {"node=2,gpu=4", {2, 4}},
                                {"node=2,gpu=6", {2, 6}},       {"node=3,gpu=4", {3, 4}}, {"node=4,gpu=4", {4, 4}},
                                {"a=2,b=3,c=2", {12}},          {"a=2,b=3,c=2", {2, 6}},  {"a=3,b=1,c=4", {6, 2}},
                                {"a=2,b=2,c=3", {3, 2, 2}},     {"node=2,gpu=8", {2, 8}}, {"node=4,gpu=6", {4, 6}},
                                {"node=4,gpu=6", {8, 3}},       {"a=3,b=2,c=2", {3, 4}},  {"a=2,b=3,c=1,d=2", {6, 2}},
                                {"a=2,b=3,c=1,d=2", {2, 3, 2}}, {"a=3,b=2,c=2,d=2", {24}}};
  int compared = 0, capped = 0, strict_or_failing = 0;
  for (const auto& c : cases) {
    const auto sys = engine::parse_system_inline(c.system);
    const auto levels = sys.cardinalities();
    std::vector<std::vector<int>> reduce_sets;
    for (int mask = 1; mask < (1 << c.axes.size()); ++mask) {
      std::vector<int> r;
      for (std::size_t i = 0; i < c.axes.size(); ++i)
        if (mask >> i & 1) r.push_back(static_cast<int>(i));
      reduce_sets.push_back(r);
    }
    for (const auto& x : engine::enumerate_matrices(levels, c.axes))
      for (const auto& reduce : reduce_sets)
        for (auto master : {engine::MasterCollectives::AllReduceOnly, engine::MasterCollectives::All}) {
          proofs::ProveOptions opt;
          opt.solvers.clear();
          opt.max_size = 4;
          opt.master = master;
          opt.mode = proofs::ProveMode::Concrete;
          const auto conc = proofs::prove(sys, c.axes, reduce, x, opt);
          opt.mode = proofs::ProveMode::Shape;
          opt.max_instance_devices = proofs::kMaxConcreteProveDevices;
          const auto shp = proofs::prove(sys, c.axes, reduce, x, opt);
          INFO(c.system, " axes ", c.axes.size(), " matrix ", engine::format_matrix(x), " reduce ", reduce.size(),
               " master ", static_cast<int>(master));
          REQUIRE(shp.shape.has_value());
          capped += shp.shape->instance.devices < sys.num_devices();
          CHECK(conc.program_counts == shp.program_counts);
          REQUIRE(shp.checks.size() == conc.checks.size() + 2);
          for (std::size_t i = 0; i < conc.checks.size(); ++i) {
            const auto &a = conc.checks[i], &b = shp.checks[i];
            CHECK(a.id == b.id);
            CHECK_MESSAGE(a.status == b.status, a.id, ": ", a.detail, " | ", b.detail);
            CHECK(without_devices(a.detail) == without_devices(b.detail));
            CHECK(a.where == "system");
            CHECK(b.where.find("smallest instance") == 0);
            strict_or_failing += a.status == Status::Fails || a.detail.find("strict") != std::string::npos;
          }
          for (std::size_t i = conc.checks.size(); i < shp.checks.size(); ++i)
            CHECK_MESSAGE(shp.checks[i].status == Status::Holds, shp.checks[i].id, ": ", shp.checks[i].detail);
          ++compared;
        }
  }
  MESSAGE(compared << " placements compared, " << capped << " with a smaller instance, " << strict_or_failing
                   << " strict or failing checks");
  CHECK(capped > compared / 2);
  CHECK(strict_or_failing > 0);  // the comparison covers failing and strict checks, not only holds
}

TEST_CASE("prove answers at 131,072 devices on the smallest instance and says what it relies on") {
  const auto sys = engine::parse_system_inline("pod=16,rack=32,node=32,gpu=8");
  proofs::ProveOptions opt;
  opt.solvers.clear();
  opt.max_size = 3;
  const auto rep = proofs::prove(sys, {131072}, {0}, {{16, 32, 32, 8}}, opt);  // auto: above 512 devices
  REQUIRE(rep.shape.has_value());
  CHECK(rep.shape->instance.devices == 16);
  CHECK(rep.shape->instance.real_devices == 131072);
  CHECK(rep.shape->relies_on.find("docs/shape.md §9") == 0);
  CHECK(rep.ok());
  bool closed = false;
  for (const auto& c : rep.checks) {
    CHECK_MESSAGE(c.status != Status::Fails, c.id);
    if (c.id == "B.2@system") {
      closed = true;
      CHECK(c.where == "closed form");
      CHECK(c.detail.find("(a) (node,Parallel(root)): 8 groups of 16384") != std::string::npos);
    }
  }
  CHECK(closed);
  // The same on the 16-device system itself, concretely: same counts.
  const auto small = engine::parse_system_inline("pod=2,rack=2,node=2,gpu=2");
  opt.mode = proofs::ProveMode::Concrete;
  CHECK(proofs::prove(small, {16}, {0}, {{2, 2, 2, 2}}, opt).program_counts == rep.program_counts);
}

TEST_CASE("prove refuses what it cannot do, naming the limit, the size and what to run") {
  const auto sys = engine::parse_system_inline("pod=16,rack=32,node=32,gpu=8");
  proofs::ProveOptions opt;
  opt.solvers.clear();
  // 10 factors >= 2: an instance of 1024 devices.
  const engine::ParallelismMatrix x{{4, 4, 8, 8}, {2, 2, 2, 1}, {2, 4, 2, 1}};
  CHECK_THROWS_WITH_AS(proofs::prove(sys, {1024, 8, 16}, {0}, x, opt),
                       doctest::Contains("has 10 factors >= 2, so its smallest instance"), p2v::Error);
  CHECK_THROWS_WITH_AS(proofs::prove(sys, {1024, 8, 16}, {0}, x, opt), doctest::Contains("1024 devices; Theorem 3.2"),
                       p2v::Error);
  CHECK_THROWS_WITH_AS(proofs::prove(sys, {1024, 8, 16}, {0}, x, opt),
                       doctest::Contains("Choose a placement with at most 9 factors >= 2"), p2v::Error);
  opt.max_instance_devices = 16;
  try {
    proofs::prove(sys, {1024, 8, 16}, {0}, {{16, 32, 2, 1}, {1, 1, 8, 1}, {1, 1, 2, 8}}, opt);
    FAIL("expected a refusal");
  } catch (const p2v::Error& e) {
    const std::string m = e.what();
    CHECK(m.find("has 64 devices") != std::string::npos);
    CHECK(m.find("at most 16 devices (--max-instance") != std::string::npos);
    CHECK(m.find("Raise --max-instance to 64") != std::string::npos);
    CHECK(m.find("p2v synth --system pod=16,rack=32,node=32,gpu=8 --axes 1024,8,16 --reduce 0") != std::string::npos);
  }
  opt.mode = proofs::ProveMode::Concrete;
  CHECK_THROWS_WITH_AS(proofs::prove(sys, {131072}, {0}, {{16, 32, 32, 8}}, opt),
                       doctest::Contains("use --on auto or --on shape"), p2v::Error);
  // Over several placements a refusal is an 'unknown' check of that placement, not an abort.
  opt.mode = proofs::ProveMode::Auto;
  opt.max_instance_devices = 32;
  proofs::SuiteCase sc{"many", sys, {1024, 8, 16}, {0}, {}, 2, {}};
  sc.matrices = {{{16, 32, 2, 1}, {1, 1, 8, 1}, {1, 1, 2, 8}}, {{16, 32, 2, 1}, {1, 1, 16, 1}, {1, 1, 1, 8}}};
  const auto res = proofs::run_cases({sc}, opt);
  REQUIRE(res.runs.size() == 2);
  CHECK(res.runs[0].report.checks.at(0).status == Status::Unknown);
  CHECK(res.runs[1].report.ok());
  CHECK_FALSE(res.ok);
  CHECK(proofs::to_json(res).find("\"computed_on\": \"smallest instance\"") != std::string::npos);
}

TEST_CASE("run_cases on several threads gives the sequential result, in matrix order") {
  // Every placement of two axes on a three-level system (several share a smallest instance, so the
  // shared cache is exercised), sequential against two and three workers; the progress callback
  // sees every run once, one call at a time.
  const auto sys = engine::parse_system_inline("a=4,b=4,c=8");
  proofs::SuiteCase sc{"all", sys, {8, 16}, {0}, {}, 3, {}};
  sc.matrices = engine::enumerate_matrices({4, 4, 8}, {8, 16});
  REQUIRE(sc.matrices.size() >= 8);
  proofs::ProveOptions opt;
  opt.solvers = {};
  opt.mode = proofs::ProveMode::Shape;
  auto text = [](const proofs::ProveResult& r) {
    std::string s;
    for (const auto& run : r.runs) {
      s += engine::format_matrix(run.report.matrix) + "\n";
      for (const auto& c : run.report.checks) s += c.id + " " + proofs::to_string(c.status) + " " + c.detail + "\n";
    }
    return s;
  };
  opt.jobs = 1;
  const auto one = proofs::run_cases({sc}, opt);
  for (int jobs : {2, 3}) {
    opt.jobs = jobs;
    std::vector<int> seen(sc.matrices.size() + 1, 0);
    const auto many = proofs::run_cases({sc}, opt, [&](std::size_t done, std::size_t total, const proofs::CaseRun&) {
      CHECK(total == sc.matrices.size());
      ++seen.at(done);
    });
    CHECK(text(many) == text(one));
    CHECK(many.ok == one.ok);
    CHECK(many.totals == one.totals);
    CHECK(std::count(seen.begin() + 1, seen.end(), 1) == static_cast<long>(sc.matrices.size()));
  }
}

TEST_CASE("the SMT twin queries answer alike on the smallest instance and on the devices") {
  if (!proofs::have_smt()) return;
  const auto sys = engine::parse_system_inline("node=2,gpu=6");
  for (const auto& x : engine::enumerate_matrices(sys.cardinalities(), {2, 6}))
    for (const std::vector<int>& reduce : {std::vector<int>{0}, std::vector<int>{1}, std::vector<int>{0, 1}}) {
      proofs::ProveOptions opt;
      opt.max_size = 3;
      opt.mode = proofs::ProveMode::Concrete;
      const auto conc = proofs::prove(sys, {2, 6}, reduce, x, opt);
      opt.mode = proofs::ProveMode::Shape;
      const auto shp = proofs::prove(sys, {2, 6}, reduce, x, opt);
      int smt = 0;
      for (std::size_t i = 0; i < conc.checks.size(); ++i) {
        if (conc.checks[i].id.rfind("smt:", 0) != 0) continue;
        ++smt;
        INFO(engine::format_matrix(x), " ", conc.checks[i].id);
        CHECK(conc.checks[i].status == shp.checks[i].status);
        CHECK(conc.checks[i].status != Status::Unknown);
      }
      CHECK(smt == 6);
    }
}
