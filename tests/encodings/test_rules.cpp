#include <doctest/doctest.h>

#include <sys/wait.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "p2v/encodings/rules.hpp"
#include "p2v/encodings/rules_digits.hpp"
#include "p2v/engine/error.hpp"

using namespace p2v;
using namespace p2v::encodings;

namespace {
const std::vector<smt::SolverKind> kBoth = {smt::SolverKind::Z3, smt::SolverKind::Cvc5};

std::string slurp(const std::string& f) {
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("rules: every positive rule proved and every negative one refuted by both solvers up to 6 devices") {
  for (const auto& rule : engine::rule_catalog()) {
    CAPTURE(rule.id);
    const RuleProof p = prove_rule(rule, 6, kBoth, 60000);
    CHECK_MESSAGE(p.status == (rule.holds ? RuleProof::Proved : RuleProof::Refuted), p.message);
    for (const auto& s : p.shapes) {
      REQUIRE(s.result.runs.size() == 2);
      CHECK(s.result.runs[0].solver == "z3");
      CHECK(s.result.runs[1].solver == "cvc5");
      CHECK(s.result.smtlib.find("(check-sat)") != std::string::npos);
      CHECK(s.result.hash == fnv1a64_hex(s.result.smtlib));
    }
    if (rule.holds) CHECK(p.scope.find("up to 6 devices only") != std::string::npos);
  }
}

TEST_CASE("rules: negative rules have the smallest counterexample") {
  const RuleProof ar = prove_rule(engine::find_rule("neg-ar-ar"), 8, kBoth, 60000);
  REQUIRE(ar.status == RuleProof::Refuted);
  CHECK(ar.shapes.size() == 1);  // the first shape, 2 devices
  CHECK(ar.shapes.back().shape == std::vector<int>{2});
  const auto& d = *ar.shapes.back().result.difference;
  CHECK(d.device == 0);
  CHECK(d.row == 0);
  CHECK(d.source == 0);
  CHECK(*d.lhs == 2);
  CHECK(*d.rhs == 1);
  for (const auto& r : ar.shapes.back().result.runs) {
    CHECK(r.result == smt::Result::sat);
    REQUIRE(r.witness);
  }
  const RuleProof wb = prove_rule(engine::find_rule("neg-hier-wrong-block"), 8, kBoth, 60000);
  REQUIRE(wb.status == RuleProof::Refuted);
  CHECK(wb.shapes.back().shape == std::vector<int>{2, 2});  // no 2- or 3-device grid refutes it
}

TEST_CASE("rules: certificates are re-validated by the counting replay, tampering is rejected") {
  for (const char* id : {"ar-hier", "neg-rs-ag-id"}) {
    const auto& rule = engine::find_rule(id);
    const std::string cert = rule_certificate_json(rule, prove_rule(rule, 6, kBoth, 60000));
    std::string summary;
    CHECK(check_rule_certificate(cert, &summary) == "");
    CHECK(summary.find(id) != std::string::npos);
    std::string bad = cert;
    const auto p = bad.find(rule.holds ? "\"unsat\"" : "\"sat\"");
    REQUIRE(p != std::string::npos);
    bad.replace(p, rule.holds ? 7 : 5, "\"unknown\"");
    CHECK(check_rule_certificate(bad, nullptr) != "");
  }
  // A positive rule's certificate relabelled as another rule does not validate.
  const auto& ar = engine::find_rule("ar-2d-rows-cols");
  std::string c = rule_certificate_json(ar, prove_rule(ar, 4, kBoth, 60000));
  c.replace(c.find("ar-2d-rows-cols"), 15, "neg-ar-2d-overla");
  CHECK(check_rule_certificate(c, nullptr) != "");
}

TEST_CASE("rules: certificates are written and read back field by field; the reader is strict") {
  // Round trip: one proved rule with an all-sizes proof, one refuted rule (witnesses, counterexample).
  for (const char* id : {"commute-reduce-ag", "neg-rs-ag-id"}) {
    CAPTURE(id);
    const auto& rule = engine::find_rule(id);
    const RuleProof p = prove_rule(rule, 4, kBoth, 60000, RuleEncoding::Auto, rule.holds);
    const RuleCertificate c = make_rule_certificate(rule, p);
    const std::string text = write_rule_certificate(c);
    CHECK(text == rule_certificate_json(rule, p));
    const RuleCertificate back = read_rule_certificate(text, "cert.json");
    CHECK(back == c);
    CHECK(write_rule_certificate(back) == text);
    CHECK(back.all_sizes.has_value() == rule.holds);
    CHECK(back.shapes.back().counterexample.has_value() == !rule.holds);
    if (!rule.holds) CHECK(back.shapes.back().answers[0].witness.has_value());
    CHECK(check_rule_certificate(text, nullptr) == "");
  }
  const auto& rule = engine::find_rule("commute-reduce-ag");
  const std::string text = rule_certificate_json(rule, prove_rule(rule, 4, kBoth, 60000, RuleEncoding::Auto, true));
  // Each edit must be refused by the reader with the path and the reason, and so by p2v check.
  auto refused = [&](auto edit) {
    nlohmann::json j = nlohmann::json::parse(text);
    edit(j);
    std::string why;
    try {
      (void)read_rule_certificate(j.dump(1), "cert.json");
    } catch (const p2v::Error& e) {
      why = e.what();
    }
    REQUIRE(why.rfind("cert.json: ", 0) == 0);
    // p2v check reports the reader's error unchanged (its origin is "rule certificate").
    CHECK(check_rule_certificate(j.dump(1), nullptr) == "rule certificate" + why.substr(9));
    return why;
  };
  using J = nlohmann::json;
  CHECK(refused([](J& j) { j["note"] = 1; }).find("cert.json: note: unknown field") == 0);
  CHECK(refused([](J& j) {
          j["shapes"][0]["answers"][1]["note"] = "x";
        }).find("cert.json: shapes[0].answers[1].note: unknown field") == 0);
  CHECK(refused([](J& j) {
          j["all_sizes"]["answers"][0]["witness"] = {0, 0, 0};
        }).find("cert.json: all_sizes.answers[0].witness: unknown field") == 0);
  CHECK(refused([](J& j) { j["max_devices"] = "4"; }).find("cert.json: max_devices: expected an integer") == 0);
  CHECK(refused([](J& j) {
          j["shapes"][2]["answers"][0]["ms"] = "1";
        }).find("cert.json: shapes[2].answers[0].ms: expected a number") == 0);
  CHECK(refused([](J& j) {
          j["shapes"][1]["shape"][0] = 1.5;
        }).find("cert.json: shapes[1].shape[0]: expected an integer") == 0);
  CHECK(refused([](J& j) { j["shapes"][0].erase("query_hash"); }).find("cert.json: shapes[0].query_hash: missing") ==
        0);
  CHECK(refused([](J& j) { j["all_sizes"].erase("reason"); }).find("cert.json: all_sizes.reason: missing") == 0);
  CHECK(refused([](J& j) { j.erase("scope"); }).find("cert.json: scope: missing") == 0);
  CHECK(refused([](J& j) { j["format"] = "p2v-rule-certificate/2"; }).find("is not a version this p2v reads") !=
        std::string::npos);
  CHECK(refused([](J& j) { j["shapes"] = J::object(); }).find("cert.json: shapes: expected an array") == 0);
  // A certificate without `encoding` (before the per-digit encoding) still reads (as concrete).
  const auto& ar = engine::find_rule("ar-hier");
  nlohmann::json old =
      nlohmann::json::parse(rule_certificate_json(ar, prove_rule(ar, 4, kBoth, 60000, RuleEncoding::Concrete)));
  old.erase("encoding");
  CHECK_FALSE(read_rule_certificate(old.dump(1), "old.json").encoding.has_value());
  CHECK(check_rule_certificate(old.dump(1), nullptr) == "");
}

TEST_CASE("rules: the per-digit closed forms agree with the counting replay on every shape up to 24 devices") {
  int in_fragment = 0;
  for (const auto& rule : engine::rule_catalog()) {
    CAPTURE(rule.id);
    const DigitRule dr(rule);
    if (rule.holds) CHECK_MESSAGE(dr.ok(), dr.reason());  // every positive rule of the catalogue
    if (!dr.ok()) {
      CHECK(dr.reason().find("outside the per-digit fragment") != std::string::npos);
      continue;
    }
    ++in_fragment;
    CHECK(dr.forms_text().find("radix order") == 0);
    for (const auto& shape : engine::grid_shapes(rule.arity, 24)) {
      CAPTURE(shape);
      CHECK(dr.replay_check(shape) == "");
    }
  }
  CHECK(in_fragment == 23);  // all but neg-hier-wrong-block (its member order is rotated)
  CHECK(DigitRule(engine::find_rule("neg-hier-wrong-block")).reason().find("rotated") != std::string::npos);
  // Size-dependent multiplicities (n_a) are found and kept out of the all-sizes query.
  CHECK(DigitRule(engine::find_rule("neg-ar-ar")).size_dependent());
  CHECK_FALSE(DigitRule(engine::find_rule("ar-hier-4")).size_dependent());
}

TEST_CASE("rules: every positive rule proved for every size by z3 and by cvc5") {
  for (const auto& rule : engine::rule_catalog()) {
    if (!rule.holds) continue;
    CAPTURE(rule.id);
    const RuleProof p = prove_rule(rule, 4, kBoth, 60000, RuleEncoding::Auto, true);
    REQUIRE(p.status == RuleProof::Proved);
    CHECK(p.encoding == "per-digit");
    CHECK_MESSAGE(p.all_sizes.status == "proved", p.all_sizes.reason);
    REQUIRE(p.all_sizes.runs.size() == 2);
    for (const auto& r : p.all_sizes.runs) CHECK(r.result == smt::Result::unsat);
    CHECK(p.all_sizes.hash == fnv1a64_hex(p.all_sizes.smtlib));
    CHECK(p.scope.find("proved for every size") == 0);
  }
}

namespace {
engine::Rule custom(int arity, engine::RuleSide l, engine::RuleSide r) {
  engine::Rule x;
  x.id = "custom";
  x.arity = arity;
  x.lhs = std::move(l);
  x.rhs = std::move(r);
  return x;
}
smt::Result all_sizes_answer(const DigitRule& dr, smt::SolverKind k) {
  smt::SolverOptions o;
  o.incremental = false;
  smt::Solver s(k, o);
  dr.query(&s, nullptr);
  return s.check();
}
}  // namespace

TEST_CASE("rules: the all-sizes query refutes false equations of the fragment (it is not vacuous)") {
  using C = engine::Collective;
  auto st = [](C c, std::vector<int> axes) { return engine::GridStep{c, std::move(axes), -1, -1, 0}; };
  auto only = [](C c, std::vector<int> axes, int axis, int v) {
    return engine::GridStep{c, std::move(axes), -1, axis, v};
  };
  const engine::RuleSide id{};
  std::vector<engine::Rule> wrong = {
      // Broadcast is not the identity (for n_a >= 2).
      custom(1, {{}, {st(C::Broadcast, {0})}}, id),
      // AllReduce is not Reduce (ownership differs on non-roots).
      custom(1, {{}, {st(C::AllReduce, {0})}}, {{}, {st(C::Reduce, {0})}}),
      // A step on the slice a=1 is not a no-op: it differs only when n_a >= 2 (element 1 exists).
      custom(2, {{}, {only(C::AllReduce, {1}, 0, 0), only(C::AllReduce, {1}, 0, 1)}},
             {{}, {only(C::AllReduce, {1}, 0, 0)}}),
      // AllGather from the layout of RS{a,b} in the wrong order of steps and layout.
      custom(2, {{st(C::ReduceScatter, {0, 1})}, {st(C::AllGather, {1})}},
             {{st(C::ReduceScatter, {0, 1})}, {st(C::AllGather, {0})}}),
  };
  for (const auto& rule : wrong) {
    CAPTURE(engine::rule_side_text(rule.lhs));
    const DigitRule dr(rule);
    REQUIRE_MESSAGE(dr.ok(), dr.reason());
    REQUIRE_FALSE(dr.size_dependent());
    CHECK(all_sizes_answer(dr, smt::SolverKind::Z3) == smt::Result::sat);
    CHECK(all_sizes_answer(dr, smt::SolverKind::Cvc5) == smt::Result::sat);
  }
  // ... and proves a true one outside the catalogue: a slice step on a=1 commutes with one on a=0.
  const engine::Rule comm = custom(2, {{}, {only(C::Reduce, {1}, 0, 1), only(C::Broadcast, {1}, 0, 0)}},
                                   {{}, {only(C::Broadcast, {1}, 0, 0), only(C::Reduce, {1}, 0, 1)}});
  const DigitRule dc(comm);
  REQUIRE(dc.ok());
  CHECK(all_sizes_answer(dc, smt::SolverKind::Z3) == smt::Result::unsat);
  CHECK(all_sizes_answer(dc, smt::SolverKind::Cvc5) == smt::Result::unsat);
}

TEST_CASE("rules: per-digit and concrete bounded encodings agree; all-sizes certificates checked, tampering refused") {
  for (const auto& rule : engine::rule_catalog()) {
    CAPTURE(rule.id);
    const RuleProof a = prove_rule(rule, 5, kBoth, 60000, RuleEncoding::Concrete);
    const RuleProof b = prove_rule(rule, 5, kBoth, 60000, RuleEncoding::Auto);
    CHECK(a.encoding == "concrete");
    CHECK(a.status == b.status);
    CHECK(a.shapes.size() == b.shapes.size());
    if (a.status == RuleProof::Refuted) CHECK(a.message == b.message);
  }
  const auto& rule = engine::find_rule("commute-reduce-ag");
  const std::string cert = rule_certificate_json(rule, prove_rule(rule, 6, kBoth, 60000, RuleEncoding::Auto, true));
  std::string summary;
  std::vector<std::array<std::string, 3>> claims;
  REQUIRE(check_rule_certificate(cert, &summary, &claims) == "");
  CHECK(summary.find("for every size") != std::string::npos);
  bool replayed = false, recorded_answers = false;
  for (const auto& c : claims) {
    if (c[0] == "all_sizes.closed_forms" && c[2] == "replayed") replayed = true;
    if (c[0] == "all_sizes.answers[].answer" && c[2] == "recorded") recorded_answers = true;
    CHECK(c[2] != "proved");
  }
  CHECK(replayed);
  CHECK(recorded_answers);
  CHECK(check_rule_certificate(cert, nullptr, &claims, true) == "");  // re-solved
  auto tamper = [&](const std::string& from, const std::string& to) {
    std::string bad = cert;
    const auto p = bad.find(from);  // keys are sorted: all_sizes comes first
    REQUIRE(p != std::string::npos);
    bad.replace(p, from.size(), to);
    return check_rule_certificate(bad, nullptr);
  };
  CHECK(tamper("\"encoding\": \"per-digit\"", "\"encoding\": \"concrete\"") != "");
  CHECK(tamper("\"radix_order\": \"a,b\"", "\"radix_order\": \"b,a\"") != "");
  CHECK(tamper("\"status\": \"proved\"", "\"status\": \"unknown\"") != "");  // the all-sizes status (first)
  CHECK(tamper("\"answer\": \"unsat\"", "\"answer\": \"sat\"") != "");       // cvc5's all-sizes answer
  CHECK(tamper("m = ", "m = 2*") != "");                                     // closed forms
  CHECK(tamper("proved for every size", "proved for every sizes") != "");    // scope
}

TEST_CASE("equations: AllReduce twice differs from AllReduce; RS ; AG equals it") {
  Equation eq;
  eq.k = 4;
  eq.lhs = {{engine::Collective::AllReduce, {{0, 1}, {2, 3}}}, {engine::Collective::AllReduce, {{0, 1}, {2, 3}}}};
  eq.rhs = {{engine::Collective::AllReduce, {{0, 1}, {2, 3}}}};
  auto r = solve_equation(eq, kBoth, 60000);
  CHECK(r.verdict == EquationResult::Differ);
  eq.lhs = {{engine::Collective::ReduceScatter, {{0, 1}, {2, 3}}}, {engine::Collective::AllGather, {{0, 1}, {2, 3}}}};
  r = solve_equation(eq, kBoth, 60000);
  CHECK(r.verdict == EquationResult::Equal);
  // Block order matters: a ReduceScatter with reversed member order still gathers to the same sum.
  eq.lhs = {{engine::Collective::ReduceScatter, {{1, 0}, {3, 2}}}, {engine::Collective::AllGather, {{0, 1}, {2, 3}}}};
  CHECK(solve_equation(eq, kBoth, 60000).verdict == EquationResult::Equal);
}

#ifdef P2V_BIN
TEST_CASE("end to end: p2v rules list/show/prove/derive, p2v rewrite, p2v check on rule certificates") {
  const std::string dir = (std::filesystem::temp_directory_path() / "p2v-test-rules").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string bin = P2V_BIN, out = dir + "/out.txt";
  const std::string sys = std::string(P2V_SOURCE_DIR) + "/examples/systems/v100-2node.json";
  auto run = [&](const std::string& args) {
    const int rc = std::system((bin + " " + args + " > " + out + " 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  CHECK(run("rules list") == 0);
  CHECK(slurp(out).find("neg-ar-ar") != std::string::npos);
  CHECK(run("rules show ar-hier --json") == 0);
  CHECK(slurp(out).find("\"side_conditions\"") != std::string::npos);
  CHECK(run("rules show nope") == 2);
  CHECK(slurp(out).find("unknown rule 'nope'") != std::string::npos);
  CHECK(run("rules prove ar-rs-ag neg-ar-ar --max-devices 4 --certificates " + dir + "/certs") == 0);
  CHECK(slurp(out).find("proved up to 4 devices only") != std::string::npos);
  CHECK(slurp(out).find("counterexample: shape 2 (2 devices): device 0, chunk 0, source 0: 2 vs 1") !=
        std::string::npos);
  CHECK(run("check " + dir + "/certs/ar-rs-ag.json " + dir + "/certs/neg-ar-ar.json") == 0);
  CHECK(run("check " + dir + "/certs") == 0);  // with the manifest
  CHECK(slurp(out).find("2 of 2 certificates accepted") != std::string::npos);
  CHECK(slurp(out).find("not re-checked") != std::string::npos);
  CHECK(run("check --resolve " + dir + "/certs") == 0);  // the queries answered again by z3 and cvc5
  CHECK(slurp(out).find("re-solved by z3 and cvc5") != std::string::npos);
  // A used directory is refused without --force.
  CHECK(run("rules prove ar-rs-ag --max-devices 4 --certificates " + dir + "/certs") == 2);
  CHECK(run("rules prove ar-rs-ag --max-devices 4 --certificates " + dir + "/certs --force") == 0);
  CHECK(run("check " + dir + "/certs") == 0);
  CHECK(slurp(out).find("1 of 1 certificates accepted") != std::string::npos);
  CHECK(run("rules prove ar-rs-ag neg-ar-ar --max-devices 4 --all-sizes --certificates " + dir + "/all") == 0);
  CHECK(slurp(out).find("proved for all sizes, and up to 4") != std::string::npos);
  CHECK(slurp(out).find("z3 unsat") != std::string::npos);
  CHECK(slurp(out).find("cvc5 unsat") != std::string::npos);
  CHECK(run("check " + dir + "/all") == 0);
  CHECK(slurp(out).find("for every size") != std::string::npos);
  CHECK(run("rules prove neg-hier-wrong-block --max-devices 4 --encoding per-digit") == 3);  // outside the fragment
  CHECK(slurp(out).find("rotated") != std::string::npos);
  CHECK(run("rules prove ar-rs-ag --encoding sideways") == 2);
  // User equations on a system: AllReduce twice is refuted (exit 1), the hierarchical form proved.
  const std::string prob = "--system " + sys + " --axes 2,8 --reduce 1 --matrix \"1 2;2 4\"";
  CHECK(run("rules prove " + prob +
            " --lhs \"AllReduce@(node,Inside) ; AllReduce@(node,Inside)\" --rhs \"AllReduce@(node,Inside)\"") == 1);
  CHECK(slurp(out).find("refuted") != std::string::npos);
  CHECK(slurp(out).find("counterexample: device 0, chunk 0, source 0: 4 vs 1") != std::string::npos);  // |G| = 4
  CHECK(run("rules prove " + prob +
            " --lhs \"AllReduce@(node,Inside)\" --rhs \"ReduceScatter@(node,Inside) ; AllGather@(node,Inside)\"") == 0);
  CHECK(slurp(out).find("proved") != std::string::npos);
  CHECK(run("rules prove " + prob + " --lhs \"AllReduce@(rack,Inside)\" --rhs \"AllReduce@(node,Inside)\"") == 2);
  CHECK(slurp(out).find("do not fit the system") != std::string::npos);
  CHECK(run("rules derive " + prob) == 0);
  CHECK(slurp(out).find("only enumerated") != std::string::npos);
  CHECK(run("rewrite --program AllReduce " + prob) == 0);
  CHECK(slurp(out).find("certificate: proved equal by z3 and cvc5") != std::string::npos);
}
#endif
