// Reshard certificates and the independent checker (proofs/checker/reshard.cpp): accepted as
// synthesized, refused with a counterexample when mutated (wrong group order, wrong permutation,
// wrong slice, a step over the memory bound, wrong endpoint).
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "p2v/checker/checker.hpp"
#include "p2v/reshard/certificate.hpp"
#include "p2v/reshard/plan.hpp"

namespace rs = p2v::reshard;
using nlohmann::json;

namespace {
// The plan as p2v reshard --certify writes it. Its "smt" section is test data here (this test has
// no solvers): the checker records those answers and never re-solves them; what it checks is the
// replay, which these tests mutate.
json certificate(const std::string& mesh, const std::string& from, const std::string& to) {
  const auto p = rs::plan(rs::Request{mesh, from, to, {}, "f32", rs::CostKind::Paper, {}, {}});
  rs::SmtFacts facts;
  for (std::size_t k = 0; k < p.program.steps.size(); ++k)
    if (p.program.steps[k].step.op != rs::Op::AllPermute)
      facts.steps.push_back({static_cast<std::int64_t>(k), rs::to_string(p.program.steps[k].step.op), {"z3", "cvc5"}});
  const std::string text = rs::certificate_text(p, facts);
  // The format's own strict reader reads back what the writer wrote.
  const auto back = rs::read_certificate(text, "test");
  CHECK(back.program.steps.size() == p.program.steps.size());
  CHECK(back.program.cost == p.program.cost);
  CHECK(back.smt->steps.size() == facts.steps.size());
  json c = json::parse(text);
  return c;
}
std::string verdict(const json& c) {
  const auto v = p2v::checker::check_reshard_certificate(c.dump());
  return v.ok ? "" : v.reason;
}
json* first_step(json& c, const std::string& op) {
  for (auto& s : c["steps"])
    if (s["op"] == op) return &s;
  return nullptr;
}
}  // namespace

TEST_CASE("checker accepts synthesized programs (examples and random problems)") {
  CHECK(verdict(certificate("devs=32", "[32,64{devs}2048]", "[1{devs}32,2048]")) == "");
  CHECK(verdict(certificate("x=3,y=5", "[5{x}15]", "[3{y}15]")) == "");
  CHECK(verdict(certificate("x=4,y=4", "[16]", "[4{x}16]")) == "");
  for (int kind = 0; kind < rs::kRandomMeshKinds; ++kind) {
    std::mt19937_64 rng(7 + static_cast<unsigned>(kind));
    for (int k = 0; k < 60; ++k) {
      const auto q = rs::random_problem(rng, kind, 4, 2);
      CAPTURE(q.from);
      CAPTURE(q.to);
      CHECK(verdict(certificate(q.mesh, q.from, q.to)) == "");
    }
  }
}

TEST_CASE("checker refuses mutated programs with a counterexample") {
  auto c = certificate("x=4,y=4", "[32{x,y}512,128]", "[128{x}512,32{y}128]");
  REQUIRE(verdict(c) == "");
  {  // wrong group order
    auto m = c;
    auto& g = (*first_step(m, "alltoall"))["groups"][0];
    std::swap(g[0], g[1]);
    const auto r = verdict(m);
    CHECK(r.find("adjacent tiles in concatenation order") != std::string::npos);
    CHECK(r.find("group 0 lists device") != std::string::npos);
  }
  {  // wrong permutation
    auto p = certificate("x=4,y=4", "[32{x}128]", "[32{y}128]");
    auto& src = (*first_step(p, "allpermute"))["sources"];
    std::swap(src[1], src[4]);
    CHECK(verdict(p).find("num_groups") != std::string::npos);  // the number of devices that move changed
    int moving = 0;
    for (std::size_t d = 0; d < src.size(); ++d) moving += src[d].get<std::size_t>() != d;
    (*first_step(p, "allpermute"))["num_groups"] = moving;  // consistent again: the end state is wrong
    CHECK(verdict(p).find("end: device") != std::string::npos);
    src[1] = src[2];  // not a bijection
    CHECK(verdict(p).find("not a permutation") != std::string::npos);
  }
  {  // wrong slice
    auto p = certificate("x=4,y=4", "[16]", "[4{x}16]");
    auto& sl = (*first_step(p, "dynslice"))["slice"];
    std::swap(sl[0], sl[4]);
    CHECK(verdict(p).find("end: device 0") != std::string::npos);
  }
  {  // a group that is not a partition
    auto m = c;
    auto& g = (*first_step(m, "alltoall"))["groups"];
    g[0][0] = g[0][1];
    CHECK(verdict(m).find("in two groups") != std::string::npos);
  }
  {  // memory bound and endpoints
    auto m = c;
    m["limit"] = 100;
    CHECK(verdict(m).find("limit below the bound") != std::string::npos);
    auto e = c;
    e["to"] = "[128{y}512,32{x}128]";
    CHECK(verdict(e).find("end: device") != std::string::npos);
    auto b = certificate("x=4", "[8{x}32]", "[32]");
    b["bound"] = 8;
    CHECK(verdict(b).find("recorded bound") != std::string::npos);
  }
}

// The baseline is the naive program (allgather everything, then dynslice) and no other: a padded
// one would inflate the cost the plan is compared with. A step's axes must hold as many devices as
// its groups (its text shows them). Integers beyond 2^63 do not wrap.
TEST_CASE("checker: the baseline is allgathers then dynslices; a step's axes match its groups; no wrap") {
  const json base = certificate("x=2,y=2", "[8{x,y}32,16]", "[16{x}32,8{y}16]");
  REQUIRE(verdict(base) == "");
  {
    json c = base;  // an allgather after a dynslice, the cost recorded to match
    auto& st = c["baseline"]["steps"];
    REQUIRE(st.size() >= 2);
    REQUIRE(st[0]["op"] == "allgather");
    REQUIRE(st[1]["op"] == "dynslice");
    json padded = json::array({st[0], st[1], st[0]});
    for (std::size_t i = 1; i < st.size(); ++i) padded.push_back(st[i]);
    st = padded;
    CHECK(verdict(c).find("baseline step 2 (allgather): an allgather after a dynslice") != std::string::npos);
  }
  {
    json c = base;  // a plan step (alltoall over x and y: groups of 4) relabelled as over x alone
    json* s = first_step(c, "alltoall");
    REQUIRE(s != nullptr);
    REQUIRE((*s)["axes"].size() == 2);
    (*s)["axes"] = json::array({"x"});
    std::string t = (*s)["text"].get<std::string>();
    (*s)["text"] = t.substr(0, t.find('{')) + "{x}";
    CHECK(verdict(c).find("axes: groups of 4 devices, but the axes named hold 2") != std::string::npos);
  }
  {
    json c = base;
    c["limit"] = json(std::numeric_limits<std::uint64_t>::max());
    CHECK(verdict(c) == "limit: 18446744073709551615 out of range");
  }
}
