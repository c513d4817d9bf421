// Round trips (write -> read -> equal) and strict readers of the rewrite certificate
// (p2v-rewrite-certificate/2) and the certificate directory's manifest (p2v-manifest/1); the
// rewrite certificate's check.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "p2v/encodings/rewrite_certificate.hpp"
#include "p2v/encodings/rules.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"
#ifdef P2V_HAVE_CHECKER
#include "p2v/checker/manifest.hpp"
#endif

using namespace p2v;
using nlohmann::json;

namespace {

// A real certificate: the single AllReduce of node=2,gpu=2 rewritten to a two-level program of
// the enumerator, proved equal by z3 and cvc5 (what p2v rewrite --certificate writes).
encodings::RewriteCertificate real_certificate() {
  encodings::RewriteCertificate c;
  c.system = engine::parse_system_inline("node=2,gpu=2");
  c.axes = {4};
  c.reduce = {0};
  c.matrix = {{2, 2}};
  const engine::Placement pl(c.system.cardinalities(), c.axes, c.matrix, c.reduce);
  const auto r = engine::synthesize(pl, c.system.level_names(), engine::HierarchyKind::ReductionAxes, {});
  REQUIRE(r.programs.size() > 1);
  const auto& prog = r.programs.back();  // the longest
  encodings::Equation eq;
  eq.k = pl.num_devices();
  eq.lhs = {engine::LoweredStep{engine::Collective::AllReduce, pl.reduction_groups()}};
  eq.rhs = engine::lower(r, prog);
  const auto res =
      encodings::solve_equation(eq, {encodings::smt::SolverKind::Z3, encodings::smt::SolverKind::Cvc5}, 60000);
  REQUIRE(res.verdict == encodings::EquationResult::Equal);
  c.input = "AllReduce";
  c.output = engine::program_name(r, prog);
  c.verdict = encodings::to_string(res.verdict);
  c.query_hash = res.hash;
  c.smtlib = res.smtlib;
  c.problem = res.problem;
  for (const auto& s : res.runs) c.answers.push_back({s.solver, s.version, encodings::smt::to_string(s.result), s.ms});
  return c;
}

// The message of the exception of type E that f throws ("" when it throws none).
template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("p2v-rewrite-certificate/2: round trip, strict reader, and p2v check's claims") {
  const auto c = real_certificate();
  const json j = encodings::to_json(c);
  CHECK(j["format"] == "p2v-rewrite-certificate/2");
  const auto back = encodings::rewrite_certificate_from_json(j, "r.json");
  CHECK(encodings::same_certificate(back, c));
  CHECK(encodings::to_json(back) == j);
  // Strict: unknown, missing and mistyped fields named by path; version 1 (no placement) refused.
  auto refusal = [&](const std::function<void(json&)>& edit) {
    json t = j;
    edit(t);
    return message_of<p2v::Error>([&] { (void)encodings::parse_rewrite_certificate(t.dump(), "r.json"); });
  };
  CHECK(refusal([](json& t) { t["answers"][0]["seconds"] = 1; }).find("r.json: answers[0].seconds: unknown field") ==
        0);
  CHECK(refusal([](json& t) { t.erase("smtlib"); }) == "r.json: smtlib: missing");
  CHECK(refusal([](json& t) { t["axes"] = "4"; }).find("r.json: axes: expected an array") == 0);
  CHECK(refusal([](json& t) { t["format"] = "p2v-rewrite-certificate/1"; }).find("not a version this p2v reads") !=
        std::string::npos);
  CHECK(refusal([](json& t) { t["verdict"] = "same"; }).find("r.json: verdict: expected equal, differ or unknown") ==
        0);
  // The check: accepted, every claim labelled.
  std::string summary;
  std::vector<std::array<std::string, 3>> claims;
  REQUIRE(encodings::check_rewrite_certificate(j.dump(), &summary, &claims, false) == "");
  CHECK(summary.find("equal under the counting semantics (replayed)") != std::string::npos);
  std::set<std::string> hows;
  for (const auto& cl : claims) hows.insert(cl[2]);
  CHECK(hows.count("replayed (counting semantics)") == 1);
  CHECK(hows.count("re-derived") == 1);
  CHECK(hows.count("recorded") == 1);
  // Refused: another output that is not equal (its query differs too), a changed query, a hash
  // that is not the query's, a solver that did not answer unsat, an unknown verdict.
  auto check = [&](const std::function<void(json&)>& edit) {
    json t = j;
    edit(t);
    return encodings::check_rewrite_certificate(t.dump(), nullptr, nullptr, false);
  };
  CHECK(check([](json& t) { t["output"] = "AllReduce@(node,Inside)"; }).find("counting replay") != std::string::npos);
  CHECK(check([](json& t) { t["smtlib"] = t["smtlib"].get<std::string>() + " "; }).find("smtlib") != std::string::npos);
  CHECK(check([](json& t) { t["query_hash"] = "0000000000000000"; }).find("query_hash") != std::string::npos);
  CHECK(check([](json& t) { t["answers"][1]["answer"] = "sat"; }).find("cvc5 answered sat") != std::string::npos);
  CHECK(check([](json& t) { t["verdict"] = "unknown"; }).find("certifies nothing") != std::string::npos);
  CHECK(check([](json& t) { t["matrix"] = json::array({json::array({4, 1})}); }) != "");
  CHECK(check([](json& t) { t["output"] = "Frobnicate@(gpu,Inside)"; }).find("output:") == 0);
}

#ifdef P2V_HAVE_CHECKER
TEST_CASE("p2v-manifest/1: round trip and strict reader") {
  checker::Manifest m;
  m.argv = {"p2v", "synth", "--certify", "d"};
  m.solvers = {"z3", "cvc5"};
  m.files = {{"a.json", std::string(64, 'a'), 10}, {"b.smt2", std::string(64, 'b'), 0}};
  const std::string text = checker::manifest_text(m);
  CHECK(json::parse(text)["format"] == "p2v-manifest/1");
  CHECK(checker::parse_manifest(text) == m);
  auto refusal = [&](const std::function<void(json&)>& edit) {
    json t = json::parse(text);
    edit(t);
    return message_of<checker::ManifestError>([&] { (void)checker::parse_manifest(t.dump()); });
  };
  CHECK(refusal([](json& t) { t["files"][1]["mode"] = 1; }) == "manifest.files[1]: unknown field 'mode'");
  CHECK(refusal([](json& t) { t["files"][0].erase("sha256"); }) == "manifest.files[0]: missing field 'sha256'");
  CHECK(refusal([](json& t) { t["files"][0]["bytes"] = -1; }) == "manifest.files[0].bytes: a size in bytes expected");
  CHECK(refusal([](json& t) { t["files"][1]["name"] = "a.json"; }) == "manifest.files[1].name: a.json listed twice");
  CHECK(refusal([](json& t) { t["files"][1]["name"] = "../x"; }).find("a file name in the directory") !=
        std::string::npos);
  CHECK(refusal([](json& t) { t["options"]["solvers"][0] = "yices"; }).find("expected z3 or cvc5") !=
        std::string::npos);
  CHECK(refusal([](json& t) { t["format"] = "p2v-manifest/2"; }) == "manifest.format: expected p2v-manifest/1");
  CHECK(refusal([](json& t) { t["run"]["argv"] = json::array(); }) == "manifest.run.argv: non-empty array expected");
}
#endif

#ifdef P2V_BIN
TEST_CASE("p2v rewrite --certificate writes what p2v check accepts, with claims labelled") {
  const auto dir = std::filesystem::temp_directory_path() / ("p2v-test-rewrite-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string cert = (dir / "rw.json").string(), out = (dir / "out").string();
  auto run = [&](const std::string& args) {
    const int rc = std::system((std::string(P2V_BIN) + " " + args + " > " + out + " 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  auto read = [&] {
    std::ifstream f(out);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  REQUIRE(run("rewrite --system node=2,gpu=4 --axes 8 --reduce 0 --program AllReduce --certificate " + cert) == 0);
  CHECK(run("check --json " + cert) == 0);
  const json verdict = json::parse(read());
  REQUIRE(verdict.size() == 1);
  CHECK(verdict[0]["ok"] == true);
  CHECK(verdict[0]["claims"].size() >= 5);
  // Tampered: the output replaced by another program.
  json t = json::parse(std::ifstream(cert));
  t["output"] = "AllReduce@(gpu,Inside)";
  std::ofstream(cert) << t.dump();
  CHECK(run("check " + cert) == 1);
  CHECK(read().find("REJECTED") != std::string::npos);
  std::filesystem::remove_all(dir);
}
#endif
