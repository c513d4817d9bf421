#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <cstdio>
#include <fstream>
#include <string>

#include "p2v/engine/error.hpp"
#include "p2v/proofs/expressiveness.hpp"

using namespace p2v;
using proofs::Status;

namespace {
const proofs::Check& get(const proofs::MatrixReport& r, const std::string& id) {
  for (const auto& c : r.checks)
    if (c.id == id) return c;
  FAIL("no check " << id);
  static proofs::Check none;
  return none;
}
int run(const std::string& args) {
  const int st = std::system((std::string(P2V_BIN) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
}  // namespace

TEST_CASE("minimal witness: (c) and uncollapsed (d) miss the hierarchical AllReduce of (a)") {
  // 2 nodes x 4 GPUs, axes [2 4] both reduced, X = [[1 2],[2 2]]: the smallest system where the
  // chain breaks (README: Where the theorem fails).
  auto sys = engine::parse_system_inline("node=2,gpu=4");
  proofs::ProveOptions opt;
  opt.max_size = 2;
  if (!proofs::have_smt()) opt.solvers.clear();
  auto r = proofs::prove(sys, {2, 4}, {0, 1}, {{1, 2}, {2, 2}}, opt);
  const auto& cb = get(r, "thm:c>=b");
  CHECK(cb.status == Status::Fails);
  CHECK(cb.detail.find("(b) has AllReduce@(node.1,Inside) ; AllReduce@(node.1,Parallel(node.0)) which (c) lacks; "
                       "lowered: AllReduce{0,1,2,3}{4,5,6,7} ; AllReduce{0,4}{1,5}{2,6}{3,7}") == 0);
  const auto& da = get(r, "thm:d>=a");
  CHECK(da.status == Status::Fails);
  CHECK(da.detail.find("(a) has AllReduce@(node,Inside) ; AllReduce@(node,Parallel(root)) which (d) lacks") == 0);
  CHECK(get(r, "B.7").status == Status::Fails);
  CHECK(get(r, "B.7").detail == "no twin for AllReduce{0,1,2,3}{4,5,6,7}");
  // Both solvers find an untwinned (b) instruction (sat), and both prove the other links (unsat).
  for (const char* s : {"z3", "cvc5"}) {
    if (!proofs::have_smt()) break;
    CHECK(get(r, std::string("smt:") + s + ":b->c").status == Status::Fails);
    CHECK(get(r, std::string("smt:") + s + ":a->b").status == Status::Holds);
    CHECK(get(r, std::string("smt:") + s + ":c->d").status == Status::Holds);
  }
  // What still holds: B.1 ((b) >= (a)), B.8 ((d) >= (c)), the lemmas, and the chain's ends.
  for (const char* id : {"thm:b>=a", "thm:d>=c", "B.1", "B.8", "B.2", "B.3", "B.4", "B.5", "B.6"})
    CHECK_MESSAGE(get(r, id).status == Status::Holds, id);
  // Collapsed (d), the default for synthesis, has every program of (a) here.
  CHECK(get(r, "cmp:d-collapsed>=a").detail.find("equal sets") != std::string::npos);
  CHECK_FALSE(r.ok());
}

TEST_CASE("Fig. 2d reducing shards: the whole chain holds, with strict inclusions") {
  auto sys = engine::load_system_file(std::string(P2V_SOURCE_DIR) + "/examples/systems/fig2a.json");
  proofs::ProveOptions opt;
  opt.max_size = 4;
  if (!proofs::have_smt()) opt.solvers.clear();
  auto r = proofs::prove(sys, {4, 4}, {1}, {{1, 1, 2, 2}, {1, 2, 1, 2}}, opt);
  CHECK(r.ok());
  for (const auto& c : r.checks) CHECK_MESSAGE(c.status != Status::Fails, c.id, ": ", c.detail);
  CHECK(get(r, "thm:d>=c").detail.find("strict") != std::string::npos);
  if (proofs::have_smt()) {
    CHECK(get(r, "smt:cvc5:c->d").detail.find("unsat (cvc5") == 0);
    CHECK(get(r, "smt:z3:b->c").detail.find("unsat (z3") == 0);
  }
  // Program counts per hierarchy (cross-checked against brute force in the engine tests).
  CHECK(r.program_counts.size() == 5);
}

TEST_CASE("suite files: errors name the problem; expectations are enforced") {
  const std::string f = "/tmp/p2v_suite_test.json";
  {
    std::ofstream o(f);
    o << R"([{"name":"x","system":"node=2,gpu=4","reduce":[0]}])";
  }
  CHECK_THROWS_WITH_AS(proofs::load_suite(f), doctest::Contains(".axes: missing"), p2v::Error);
  {
    std::ofstream o(f);
    o << R"([{"name":"x","system":"node=2,gpu=4","axes":[2,2],"reduce":[0]}])";
  }
  CHECK_THROWS_WITH_AS(proofs::load_suite(f), doctest::Contains("product is 4 but the system has 8"), p2v::Error);
  {
    std::ofstream o(f);
    o << "[{";
  }
  CHECK_THROWS_WITH_AS(proofs::load_suite(f), doctest::Contains("malformed JSON"), p2v::Error);
  // A suite that expects a failure which does not happen must not pass.
  {
    std::ofstream o(f);
    o << R"([{"name":"x","system":"node=2,gpu=4","axes":[8],"reduce":[0],"max_size":2,)"
      << R"("expect_fail":{"thm:c>=b":"test"}}])";
  }
  CHECK(run("prove --solver none --suite " + f) == 1);
  {
    std::ofstream o(f);
    o << R"([{"name":"x","system":"node=2,gpu=4","axes":[8],"reduce":[0],"max_size":2}])";
  }
  CHECK(run("prove --solver none --suite " + f) == 0);
  // The minimal witness without its expectations fails the run.
  CHECK(run("prove --solver none --system node=2,gpu=4 --axes 2,4 --reduce 0,1 --matrix \"1 2;2 2\" --max-size 2") ==
        1);
  CHECK(run("prove --system node=2,gpu=4") == 2);  // missing --axes/--reduce
  std::remove(f.c_str());
}
