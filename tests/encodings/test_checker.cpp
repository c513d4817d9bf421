// Certificates: round trip through the independent checker, tampered certificates rejected with
// a reason, and a random-mutation fuzz loop over the checker's parser.
#include <doctest/doctest.h>

#include <fmt/core.h>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "p2v/encodings/certificate.hpp"
#include "p2v/engine/certificate_format.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

#ifdef P2V_HAVE_CHECKER
#include "p2v/checker/checker.hpp"

using namespace p2v;
using nlohmann::json;

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Fixture {
  engine::System sys;
  std::vector<std::string> names;
  engine::SynthOptions opt;
  std::vector<std::string> files;
  std::string dir;

  Fixture(const std::string& sys_spec, std::vector<int> axes, engine::ParallelismMatrix x, std::vector<int> red,
          engine::HierarchyKind kind, const std::string& tag) {
    sys = engine::parse_system_arg(sys_spec);
    names = sys.level_names();
    opt.max_size = 4;
    engine::Placement p(sys.cardinalities(), axes, x, red);
    auto r = engine::synthesize(p, names, kind, opt);
    dir = (std::filesystem::temp_directory_path() / ("p2v-test-certs-" + tag)).string();
    std::filesystem::remove_all(dir);
    encodings::CertifyOptions c;
    c.dir = dir;
    auto res = encodings::certify_programs(sys, p, r, opt, c);
    files = res.files;
    REQUIRE(files.size() == r.programs.size());
  }
};

// Is the program in certificate `c` (as the engine reads it) valid on the placement it names?
// Throws when the certificate does not even describe a placement.
bool engine_says_valid(const json& c) {
  std::vector<int> levels = c.at("levels").get<std::vector<int>>();
  std::vector<std::string> names;
  for (std::size_t i = 0; i < levels.size(); ++i) names.push_back(fmt::format("l{}", i));
  engine::Placement p(levels, c.at("axes").get<std::vector<int>>(), c.at("matrix").get<engine::ParallelismMatrix>(),
                      c.at("reduce").get<std::vector<int>>());
  auto h =
      engine::make_hierarchy(p, names, engine::parse_hierarchy_kind(c.at("hierarchy").at("kind").get<std::string>()));
  const int k = h.num_local();
  auto goal = engine::StateSet::goal(k, engine::local_goal_groups(h, p));
  auto s = engine::StateSet::initial(k), next = s;
  for (const auto& st : c.at("program").at("steps")) {
    const std::string form = st.at("form").get<std::string>();
    auto fk = form == "Inside"     ? engine::FormKind::Inside
              : form == "Parallel" ? engine::FormKind::Parallel
                                   : engine::FormKind::Master;
    // The checker needs no "e" for Inside (the groups do not depend on it).
    const int e = fk == engine::FormKind::Inside ? -1 : st.at("e").get<int>();
    auto g = engine::form_groups(h, st.at("slice").get<int>(), fk, e);
    if (s == goal) return false;
    if (!s.apply(engine::parse_collective(st.at("collective").get<std::string>()), g, next)) return false;
    s = next;
  }
  return s == goal;
}

}  // namespace

TEST_CASE("certificates round-trip through the checker (hierarchies (d), (a), (c))") {
  Fixture d("node=2,gpu=4", {2, 4}, {{1, 2}, {2, 2}}, {1}, engine::HierarchyKind::ReductionAxes, "d");
  for (const auto& f : d.files) {
    auto v = checker::check_certificate_file(f);
    CHECK_MESSAGE(v.ok, f << ": " << v.reason);
    auto c = json::parse(read(f));
    CHECK(c["facts"]["found_by"].size() == 2);
    // One closure fact per solver (docs/formats.md), naming the solver's version and settings; on
    // this [1 2 2] hierarchy the default (--encoding auto) is the per-level encoding's closure.
    REQUIRE(c["facts"]["complete"].size() == 2);
    for (const auto& fact : c["facts"]["complete"]) {
      CHECK(fact["method"] == "symbolic-closure");
      CHECK(fact["result"] == "unsat");
      CHECK(fact["states"].get<int>() > 0);
      CHECK(fact["settings"].get<std::string>().find("logic=") != std::string::npos);
    }
  }
  // The per-level closure's conclusion names the model's section 4 (docs/model.md); certificates
  // written before that move say "SPEC section 4" and are still accepted; any other text is not.
  REQUIRE_FALSE(d.files.empty());
  // Certificates of that time named the per-level form without summed levels (the shorter query);
  // with the summed-levels query only the current conclusion is read.
  const std::string summed = ", each device's columns those of the devices that agree with it outside a set of levels";
  auto conclusion_as = [&](const std::string& from, const std::string& to, bool keep_summed = false) {
    json c = json::parse(read(d.files[0]));
    for (auto& fact : c["facts"]["complete"]) {
      auto text = fact["conclusion"].get<std::string>();
      const auto at = text.find(from);
      REQUIRE(at != std::string::npos);
      fact["conclusion"] = text.replace(at, from.size(), to);
      auto query = fact["query"].get<std::string>();
      const auto qs = query.find(summed);
      REQUIRE(qs != std::string::npos);
      if (!keep_summed) fact["query"] = query.erase(qs, summed.size());
    }
    const std::string out = d.dir + "/conclusion-" + std::to_string(to.size()) + ".json";
    std::ofstream(out) << c.dump(2);
    return checker::check_certificate_file(out);
  };
  CHECK(json::parse(read(d.files[0]))["facts"]["complete"][0]["conclusion"].get<std::string>().find(
            "docs/model.md section 4") != std::string::npos);
  CHECK(conclusion_as("docs/model.md section 4", "SPEC section 4").ok);
  CHECK_FALSE(conclusion_as("docs/model.md section 4", "SPEC section 4", true).ok);
  const auto other = conclusion_as("docs/model.md section 4", "docs/model.md section 5");
  CHECK_FALSE(other.ok);
  CHECK(other.reason.find("conclusion") != std::string::npos);
  Fixture a("node=2,gpu=2", {2, 2}, {{1, 2}, {2, 1}}, {0}, engine::HierarchyKind::System, "a");
  for (const auto& f : a.files) CHECK(checker::check_certificate_file(f).ok);
  Fixture c("node=2,gpu=2", {2, 2}, {{2, 1}, {1, 2}}, {1}, engine::HierarchyKind::RowBased, "c");
  for (const auto& f : c.files) CHECK(checker::check_certificate_file(f).ok);
  CHECK_FALSE(checker::check_certificate_file(d.dir + "/does-not-exist.json").ok);
}

TEST_CASE("certificate formats: the strict reader round-trips what encodings writes and names bad fields") {
  Fixture d("node=2,gpu=4", {2, 4}, {{1, 2}, {2, 2}}, {1}, engine::HierarchyKind::ReductionAxes, "format");
  for (const auto& f : d.files) {
    const json j = json::parse(read(f));
    const auto c = engine::certificate_from_json(j, f);
    CHECK(engine::to_json(c) == j);
    CHECK(c.steps.size() == c.lowered.size());
    CHECK(c.states.size() == c.steps.size() + 1);
    CHECK(c.facts.complete.size() == 2);
    CHECK(std::holds_alternative<engine::Certificate>(engine::any_certificate_from_json(j, f)));
  }
  const auto sys = engine::parse_system_arg("node=64,gpu=8");
  const auto shape =
      engine::make_shape(sys.cardinalities(), sys.level_names(), {{64, 8}}, {0}, engine::HierarchyKind::ReductionAxes);
  engine::SynthOptions opt;
  opt.max_size = 3;
  const auto r = engine::synthesize_shape(shape, opt);
  encodings::CertifyOptions co;
  co.dir = d.dir + "-shape";
  const auto res = encodings::certify_shape_programs(sys, shape, r, opt, co);
  REQUIRE(!res.files.empty());
  const json sj = json::parse(read(res.files.back()));
  const auto sc = engine::shape_certificate_from_json(sj, "s.json");
  CHECK(engine::to_json(sc) == sj);
  CHECK(sc.axes == std::vector<std::int64_t>{512});
  CHECK(sc.instance.hierarchy_cards == std::vector<int>{1, 2, 2});
  // Refusals name the file and the JSON path.
  auto refused = [](const json& j) {
    try {
      (void)engine::any_certificate_from_json(j, "c.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  json t = sj;
  t["instance"]["facts"]["complete"][0]["solvers"] = "z3";
  CHECK(refused(t).find("c.json: instance.facts.complete[0].solvers: unknown field") == 0);
  t = sj;
  t["instance"]["program"].erase("notation");
  CHECK(refused(t).find("c.json: instance.program.notation: missing") == 0);
  t = sj;
  t["steps"][0]["group_size"] = "8";
  CHECK(refused(t).find("c.json: steps[0].group_size: expected an integer") == 0);
  t = sj;
  t["steps"][0]["collective"] = "AllToAll";
  CHECK(refused(t).find("c.json: steps[0].collective:") == 0);
  t = sj;
  t["format"] = "p2v-shape-certificate/2";
  CHECK(refused(t).find("not a version this p2v reads") != std::string::npos);
  t["format"] = "p2v-synth/2";
  CHECK(refused(t).find("c.json: format: expected \"p2v-certificate/1\" or") == 0);
}

TEST_CASE("checker: interconnect bandwidths under their unit name or the deprecated one, never both") {
  Fixture fx("node=2,gpu=4", {2, 4}, {{1, 2}, {2, 2}}, {1}, engine::HierarchyKind::ReductionAxes, "units");
  const json base = json::parse(read(fx.files.at(0)));
  auto verdict = [&](const json& ic) {
    json c = base;
    c["system"]["levels"][0]["interconnect"] = ic;
    return checker::check_certificate(c.dump());
  };
  CHECK(verdict({{"kind", "nic"}, {"bandwidth_GBps", 12.5}, {"latency_us", 5}, {"flow_bandwidth_GBps", 1}}).ok);
  CHECK(verdict({{"kind", "nic"}, {"bandwidth_gbps", 12.5}, {"latency_us", 5}, {"flow_bandwidth_gbps", 1}}).ok);
  const auto both = verdict({{"kind", "nic"}, {"bandwidth_GBps", 1}, {"bandwidth_gbps", 1}, {"latency_us", 5}});
  CHECK(!both.ok);
  CHECK(both.reason.find("deprecated name 'bandwidth_gbps'") != std::string::npos);
  const auto none = verdict({{"kind", "nic"}, {"latency_us", 5}});
  CHECK(!none.ok);
  CHECK(none.reason.find("missing field 'bandwidth_GBps'") != std::string::npos);
  // What the engine writes is the new name.
  engine::System s = engine::parse_system_json(
      R"({"levels": [{"name": "n", "cardinality": 2, "interconnect": {"kind": "nic", "bandwidth_gbps": 3, "latency_us": 1}}]})",
      "s.json");
  CHECK(engine::system_to_json(s).find("\"bandwidth_GBps\": 3") != std::string::npos);
}

TEST_CASE("tampered certificates are rejected with a reason") {
  Fixture fx("node=2,gpu=4", {2, 4}, {{1, 2}, {2, 2}}, {1}, engine::HierarchyKind::ReductionAxes, "tamper");
  // A program of 3 steps (Reduce ; AllReduce Master ; Broadcast or similar).
  json base;
  for (const auto& f : fx.files) {
    auto c = json::parse(read(f));
    if (c["program"]["size"] == 3 && c["program"]["notation"].get<std::string>().find("Master") != std::string::npos) {
      base = c;
      break;
    }
  }
  REQUIRE(!base.is_null());
  REQUIRE(checker::check_certificate(base.dump()).ok);
  auto rejected = [&](const std::string& what, auto mutate, const std::string& expect) {
    json c = base;
    mutate(c);
    auto v = checker::check_certificate(c.dump());
    CHECK_MESSAGE(!v.ok, what);
    CHECK_MESSAGE(v.reason.find(expect) != std::string::npos, what << ": reason was '" << v.reason << "'");
  };
  rejected(
      "changed collective",
      [](json& c) {
        auto& s = c["program"]["steps"][1];
        s["collective"] = s["collective"] == "AllReduce" ? "Reduce" : "AllReduce";
      },
      "step");  // "program.steps[1]: ..." or "state after step 2: ..."
  rejected(
      "swapped steps", [](json& c) { std::swap(c["program"]["steps"][0], c["program"]["steps"][2]); }, "step");
  rejected(
      "dropped step",
      [](json& c) {
        c["program"]["steps"].erase(2);
        c["program"]["size"] = 2;
        c["lowered"].erase(2);
        c["states"].erase(3);
      },
      "goal");
  rejected(
      "changed group",
      [](json& c) { std::swap(c["program"]["steps"][0]["groups"][0][0], c["program"]["steps"][0]["groups"][1][0]); },
      "groups");
  rejected(
      "changed lowered group", [](json& c) { c["lowered"][0]["groups"][0][0] = 7; }, "lowered");
  rejected(
      "changed slice",
      [](json& c) {
        auto& s = c["program"]["steps"][0];
        s["slice"] = s["slice"] == 0 ? 1 : 0;
      },
      "program.steps[0]");
  rejected(
      "changed state", [](json& c) { c["states"][2][0] = "0-3:0"; }, "state after step 2");
  rejected(
      "changed final state", [](json& c) { c["states"][3][1] = "0-3:0-2"; }, "state after step 3");
  rejected(
      "changed matrix",
      [](json& c) {
        c["matrix"] = json::array({json::array({2, 1}), json::array({1, 4})});
      },
      "hierarchy");
  rejected(
      "matrix not a parallelism matrix", [](json& c) { c["matrix"][0][0] = 3; }, "matrix");
  rejected(
      "changed reduction axes", [](json& c) { c["reduce"] = json::array({0}); }, "");
  rejected(
      "changed goal",
      [](json& c) {
        c["goal_groups"] = json::array({json::array({0, 1}), json::array({2, 3})});
      },
      "goal");
  rejected(
      "changed hierarchy",
      [](json& c) {
        c["hierarchy"]["cards"] = json::array({1, 4, 2});
      },
      "hierarchy");
  rejected(
      "changed levels",
      [](json& c) {
        c["levels"] = json::array({4, 2});
      },
      "");
  rejected(
      "wrong format", [](json& c) { c["format"] = "p2v-certificate/0"; }, "format");
  rejected(
      "Master with Reduce",
      [](json& c) {
        for (auto& s : c["program"]["steps"])
          if (s["form"] == "Master") s["collective"] = "Reduce";
      },
      "Master carries AllReduce only");
  rejected(
      "not JSON", [](json& c) { c = "{"; }, "");
}

TEST_CASE("fuzz: random mutations of certificates never crash the checker nor pass an invalid program") {
  Fixture fx("node=2,gpu=4", {2, 4}, {{1, 2}, {2, 2}}, {1}, engine::HierarchyKind::ReductionAxes, "fuzz");
  std::vector<std::string> seeds;
  for (const auto& f : fx.files) {
    // Zero the solver times so that the mutations (and so this test) are deterministic.
    auto c = json::parse(read(f));
    for (auto& list : c["facts"])
      if (list.is_array())
        for (auto& e : list)
          if (e.is_object())
            for (auto& [key, val] : e.items())
              if (key.find("seconds") != std::string::npos) val = 0;
    seeds.push_back(c.dump(1));
  }
  std::mt19937_64 rng(12345);
  const char* tokens[] = {"0",    "1",   "2",     "7",    "-1",          "999999999999",  "\"\"",       "null",
                          "[]",   "{}",  ",",     ":",    "\"0-7:0-7\"", "\"AllReduce\"", "\"Master\"", "\"Parallel\"",
                          "true", "1e3", "\"d\"", "\"a\""};
  int accepted = 0, invalid_accepted = 0;
  const int iters = std::getenv("P2V_FUZZ_ITERS") ? std::atoi(std::getenv("P2V_FUZZ_ITERS")) : 3000;
  for (int it = 0; it < iters; ++it) {
    std::string s = seeds[rng() % seeds.size()];
    const int nmut = 1 + static_cast<int>(rng() % 3);
    for (int m = 0; m < nmut && !s.empty(); ++m) {
      const std::size_t pos = rng() % s.size();
      switch (rng() % 5) {
        case 0:
          s[pos] = static_cast<char>(rng() % 128);
          break;  // byte flip
        case 1:
          s.erase(pos, 1 + rng() % 8);
          break;  // delete
        case 2:
          s.insert(pos, tokens[rng() % std::size(tokens)]);
          break;  // insert token
        case 3:
          if (std::isdigit(static_cast<unsigned char>(s[pos]))) s[pos] = static_cast<char>('0' + rng() % 10);
          break;
        case 4:
          s.insert(pos, s.substr(rng() % s.size(), 1 + rng() % 16));
          break;  // duplicate a chunk
      }
    }
    auto v = checker::check_certificate(s);
    if (!v.ok) {
      CHECK(!v.reason.empty());
      continue;
    }
    ++accepted;
    // Accepted: the program it describes must be valid per the engine.
    bool valid = false;
    try {
      valid = engine_says_valid(json::parse(s));
    } catch (const std::exception&) {
      valid = false;
    }
    if (!valid) {
      ++invalid_accepted;
      FAIL_CHECK("checker accepted an invalid certificate: " << s);
    }
  }
  MESSAGE("fuzz: " << iters << " mutants, " << accepted << " accepted (all valid programs)");
  CHECK(invalid_accepted == 0);
}

#ifdef P2V_BIN
TEST_CASE("end to end: synth --certify with summed levels (default) and --column-sets, both accepted by p2v check") {
  const std::string bin = P2V_BIN;
  const std::string summed = "each device's columns those of the devices that agree with it outside a set of levels";
  long long states[2] = {0, 0};
  for (int sets = 0; sets < 2; ++sets) {
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("p2v-test-column-sets-" + std::to_string(sets))).string();
    std::filesystem::remove_all(dir);
    const std::string out = dir + ".out";
    auto run = [&](const std::string& args) {
      const int rc = std::system((bin + " " + args + " > " + out + " 2>&1").c_str());
      return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    };
    REQUIRE(run("synth --system rack=2,node=2,gpu=2 --axes 8 --reduce 0 --max-size 4 --certify " + dir +
                (sets ? " --column-sets" : "")) == 0);
    CHECK(run("check --quiet " + dir) == 0);
    const json c = json::parse(read(dir + "/m2-2-2-d-shape-p0000.json"));
    for (const auto& f : c["instance"]["facts"]["complete"]) {
      CHECK(f["method"] == "symbolic-closure");
      CHECK((f["query"].get<std::string>().find(summed) == std::string::npos) == (sets == 1));
      states[sets] = f["states"].get<long long>();
    }
    std::filesystem::remove_all(dir);
    std::filesystem::remove(out);
  }
  // The column sets close every reachable state with a per-level form: more than the summed levels.
  CHECK(states[1] > states[0]);
}

TEST_CASE("end to end: the checker re-derives the four-level shape's program count by its own enumeration") {
  // 16 devices at L = 4: the checker's brute force applies about 69,000 instructions (552,000 work
  // units), more than its budget allowed before it kept one memo entry per state. So the count,
  // the shortest length and minimality are re-derived, and with them the closure's premise that
  // every state outside the encoding's form is a dead end.
  const std::string bin = P2V_BIN;
  const std::string dir = (std::filesystem::temp_directory_path() / "p2v-test-four-level-count").string();
  std::filesystem::remove_all(dir);
  const std::string out = dir + ".out";
  auto run = [&](const std::string& args) {
    const int rc = std::system((bin + " " + args + " > " + out + " 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  REQUIRE(run("synth --system pod=2,rack=2,node=2,gpu=2 --axes 16 --reduce 0 --max-size 4 --solver z3 --certify " +
              dir) == 0);
  const json good = json::parse(read(dir + "/m2-2-2-2-d-shape-p0000.json"));
  const long long programs = good["instance"]["facts"]["enumerator"]["programs"].get<long long>();
  const auto v = checker::check_certificate(good.dump());
  INFO(v.reason, v.summary);
  REQUIRE(v.ok);
  CHECK(v.summary.find("with " + std::to_string(programs) + " programs (re-derived by enumeration)") !=
        std::string::npos);
  // One program fewer, consistently in the enumerator's and the solver's facts: only the checker's
  // own count can tell.
  json t = good;
  t["instance"]["facts"]["enumerator"]["programs"] = programs - 1;
  for (auto& f : t["instance"]["facts"]["complete"]) {
    f["programs"] = programs - 1;
    std::string c = f["conclusion"].get<std::string>();
    const std::string n = "the " + std::to_string(programs) + " listed";
    if (const auto at = c.find(n); at != std::string::npos)
      c.replace(at, n.size(), "the " + std::to_string(programs - 1) + " listed");
    f["conclusion"] = c;
  }
  const auto bad = checker::check_certificate(t.dump());
  INFO(bad.reason);
  CHECK_FALSE(bad.ok);
  CHECK(bad.reason.find("the checker's enumeration finds " + std::to_string(programs)) != std::string::npos);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(out);
}

TEST_CASE("shape certificates: relies_on[1] is re-derived; a claim upgraded to proved is refused") {
  // --master-collectives all on the depth-3 shape of [4 4 5]: unequal cardinalities, so a program
  // with a Master Reduce is "checked, not proved" (docs/shape.md §3.3, §3.5).
  const std::string bin = P2V_BIN;
  const std::string dir = (std::filesystem::temp_directory_path() / "p2v-test-relies-on").string();
  std::filesystem::remove_all(dir);
  const std::string out = dir + ".out";
  const int rc = std::system((bin +
                              " synth --system rack=4,node=4,gpu=5 --axes 80 --reduce 0 --master-collectives "
                              "all --max-size 3 --solver z3 --certify " +
                              dir + " > " + out + " 2>&1")
                                 .c_str());
  REQUIRE(WIFEXITED(rc));
  REQUIRE(WEXITSTATUS(rc) == 0);
  json good;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename() == "MANIFEST.json") continue;
    const json j = json::parse(read(e.path().string()));
    if (j["program"] == "AllReduce@(rack,Inside) ; Reduce@(rack,Master(root)) ; Broadcast@(root,Inside)") good = j;
  }
  REQUIRE(good.is_object());
  const std::string unproved_valid =
      "valid on every instance of the shape: checked, not proved, section 3.2 (--master-collectives all)";
  const std::string unproved_complete =
      "no other program on any instance: checked, not proved, section 3.3 (--master-collectives all)";
  REQUIRE(good["relies_on"][1] == "docs/shape.md: " + unproved_valid + "; " + unproved_complete);
  const auto v = checker::check_certificate(good.dump());
  INFO(v.reason);
  CHECK(v.ok);
  auto refused = [&](const std::string& from, const std::string& to) {
    json t = good;
    std::string text = t["relies_on"][1].get<std::string>();
    text.replace(text.find(from), from.size(), to);
    t["relies_on"][1] = text;
    const auto r = checker::check_certificate(t.dump());
    INFO(to, " -> ", r.reason);
    CHECK_FALSE(r.ok);
    CHECK(r.reason.find("relies_on[1]: not the shape theorem's basis") != std::string::npos);
  };
  refused(unproved_complete,
          "no other program on any instance: proved (section 3.4: --master-collectives all at "
          "depth <= 2, the tuple model M; depth 3)");
  refused(unproved_valid,
          "valid on every instance of the shape: proved (section 3.4: --master-collectives all at "
          "depth <= 2, the tuple model M; depth 3)");
  refused(unproved_valid,
          "valid on this instance: proved (section 3.5, Theorem 4: --master-collectives all at depth 3 on the "
          "instances whose three cardinalities >= 2 are equal, the tuple model M3; this instance: 4 4 5); " +
              unproved_valid);
  refused("section 3.2 (--master-collectives all)", "section 3.2 (depth 3 > 5)");
  // §3.3's G' replay: the checker replays the program on the smallest instance itself. The program
  // above leaves G' there (its Reduce over the Master group empties part of a class), so claiming
  // it is refused; a program that stays in G' is accepted, its basis re-derived.
  const std::string g1_valid =
      "valid on every instance of the shape: proved (section 3.3, Lemmas 3' and 2(b)': every state of this "
      "program on the smallest instance is in G' with Lemma 1's rows)";
  refused(unproved_valid, g1_valid);
  json g1;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename() == "MANIFEST.json") continue;
    const json j = json::parse(read(e.path().string()));
    if (j["relies_on"][1].get<std::string>().find(g1_valid) != std::string::npos) g1 = j;
  }
  REQUIRE_MESSAGE(g1.is_object(), "no certificate of [4 4 5] up to 3 steps claims the G' replay");
  INFO(g1["program"]);
  const auto vg = checker::check_certificate(g1.dump());
  INFO(vg.reason);
  CHECK(vg.ok);
  {
    json t = g1;
    std::string text = t["relies_on"][1].get<std::string>();
    text.replace(text.find(g1_valid), g1_valid.size(), unproved_valid);
    t["relies_on"][1] = text;
    CHECK_FALSE(checker::check_certificate(t.dump()).ok);  // under-claiming is a mismatch too
  }
  std::filesystem::remove_all(dir);
  std::filesystem::remove(out);
}

TEST_CASE("end to end: p2v verify --certify, p2v check, exit codes") {
  const std::string dir = (std::filesystem::temp_directory_path() / "p2v-test-e2e-certs").string();
  std::filesystem::remove_all(dir);
  const std::string bin = P2V_BIN;
  const std::string out = dir + ".out";
  auto run = [&](const std::string& args) {
    const int rc = std::system((bin + " " + args + " > " + out + " 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  CHECK(run("verify --system node=2,gpu=4 --axes 2,4 --reduce 1 --max-size 3 --certify " + dir) == 0);
  CHECK(read(out).find("verified: 2 matrices") != std::string::npos);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename() != checker::kManifestName) files.push_back(e.path().string());
  REQUIRE(files.size() > 2);
  std::string all;
  for (const auto& f : files) all += " " + f;
  CHECK(run("check --quiet" + all) == 0);
  // Tamper one: every collective AllReduce -> Broadcast.
  std::string t = read(files[0]);
  for (std::size_t p; (p = t.find("\"AllReduce\"")) != std::string::npos;) t.replace(p, 11, "\"Broadcast\"");
  std::ofstream(dir + "/tampered.json") << t;
  CHECK(run("check " + dir + "/tampered.json" + all) == 1);
  CHECK(read(out).find("REJECTED") != std::string::npos);
  // The minimality query, one job at a time.
  CHECK(run("verify --system node=2,gpu=4 --axes 2,4 --reduce 1 --max-size 3 --minimal --jobs 1") == 0);
  CHECK(read(out).find("agree on the shortest program's length") != std::string::npos);
  CHECK(run("verify --system node=2,gpu=4 --axes 2,4 --reduce 1 --minimal --certify " + dir) == 2);
  // A problem beyond the machine's memory is refused up front, naming the size.
  CHECK(run("verify --system a=16,b=16 --axes 256 --reduce 0 --max-size 5 --encoding concrete") == 2);
  CHECK(read(out).find("256 local devices and 5 steps need about") != std::string::npos);
  CHECK(read(out).find("verified:") == std::string::npos);
  // The same problem on its shape (4 device classes) is verified in well under a second.
  CHECK(run("verify --system a=16,b=16 --axes 256 --reduce 0 --max-size 5") == 0);
  CHECK(read(out).find("verified:") != std::string::npos);
  CHECK(read(out).find("smallest instance") != std::string::npos);
  // A time limit is an error (exit 2), never "verified".
  CHECK(run("verify --system node=2,gpu=4 --axes 2,4 --reduce 1 --max-size 4 --timeout 0.001 --encoding concrete") ==
        2);
  CHECK(read(out).find("verified:") == std::string::npos);
  CHECK(read(out).find("unknown") != std::string::npos);
}

// A certificate directory is accepted only as a whole run (each certificate checked alone first):
// a program's certificate removed, or another copied over it, with the manifest rewritten to match,
// is refused; so is a key written twice, an integer beyond 2^63, a symbolic link; and a field's text
// cannot put a line of its own into the output.
TEST_CASE("end to end: p2v check DIR holds the directory to one whole run and reads strictly") {
  namespace fs = std::filesystem;
  const fs::path base = fs::temp_directory_path() / ("p2v-test-wholerun-" + std::to_string(::getpid()));
  fs::remove_all(base);
  const std::string bin = P2V_BIN, out = (base / "out.txt").string(), run0 = (base / "run").string();
  fs::create_directories(base);
  auto run = [&](const std::string& args) {
    const int rc = std::system((bin + " " + args + " > " + out + " 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  REQUIRE(run("synth --system node=2,gpu=2 --axes 4 --reduce 0 --concrete --max-size 3 --jobs 1 --certify " + run0) ==
          0);
  CHECK(run("check --quiet " + run0) == 0);
  std::vector<std::string> certs;
  for (const auto& e : fs::directory_iterator(run0))
    if (e.path().filename() != checker::kManifestName) certs.push_back(e.path().filename().string());
  std::sort(certs.begin(), certs.end());
  REQUIRE(certs.size() > 3);
  // A copy of the run, edited by `edit`, with a manifest that lists what is there now.
  auto variant = [&](const std::string& name, const std::function<void(const fs::path&)>& edit) {
    const fs::path d = base / name;
    fs::copy(run0, d);
    edit(d);
    auto m = checker::parse_manifest(read((d / checker::kManifestName).string()));
    m.files.clear();
    for (const auto& f : certs)
      if (fs::exists(d / f)) {
        const std::string t = read((d / f).string());
        m.files.push_back({f, checker::sha256_hex(t), t.size()});
      }
    std::ofstream(d / checker::kManifestName) << checker::manifest_text(m);
    return d.string();
  };
  const std::string missing = variant("missing", [&](const fs::path& d) { fs::remove(d / certs[1]); });
  CHECK(run("check --quiet " + missing) == 1);
  CHECK(read(out).find("the directory is not a whole run") != std::string::npos);
  const std::string twice = variant("twice", [&](const fs::path& d) {
    fs::copy_file(d / certs[1], d / certs[2], fs::copy_options::overwrite_existing);
  });
  CHECK(run("check --quiet " + twice) == 1);
  CHECK(read(out).find("certify the same program") != std::string::npos);
  const std::string dupkey = variant("dupkey", [&](const fs::path& d) {
    std::string t = read((d / certs[0]).string());
    const auto at = t.find("\"notation\":");
    REQUIRE(at != std::string::npos);
    t.insert(at, "\"notation\": \"Reduce@(root,Inside)\", ");
    std::ofstream(d / certs[0]) << t;
  });
  CHECK(run("check --quiet " + dupkey) == 1);
  CHECK(read(out).find("the key \"notation\" appears twice") != std::string::npos);
  const std::string wrap = variant("wrap", [&](const fs::path& d) {
    std::string t = read((d / certs[0]).string());
    const auto at = t.find("\"e\": -1");
    REQUIRE(at != std::string::npos);
    t.replace(at, 7, "\"e\": 18446744073709551615");  // 2^64 - 1, -1 once wrapped to a long long
    std::ofstream(d / certs[0]) << t;
  });
  CHECK(run("check --quiet " + wrap) == 1);
  CHECK(read(out).find("18446744073709551615 out of range") != std::string::npos);
  const std::string forged = variant("forged", [&](const fs::path& d) {
    auto j = nlohmann::json::parse(read((d / certs[0]).string()));
    j["states"][1][0] = "x\nok       forged.json: fine\n1 of 1 certificates accepted\n";
    std::ofstream(d / certs[0]) << j.dump(1);
  });
  CHECK(run("check --quiet " + forged) == 1);
  CHECK(read(out).find("\nok ") == std::string::npos);
  CHECK(read(out).find("\n1 of 1") == std::string::npos);
  CHECK(read(out).find("x\\x0aok") != std::string::npos);
  const std::string linked = variant("linked", [&](const fs::path& d) {
    fs::rename(d / certs[0], base / "elsewhere.json");
    fs::create_symlink(base / "elsewhere.json", d / certs[0]);
  });
  CHECK(run("check --quiet " + linked) == 1);
  CHECK(read(out).find("a symbolic link") != std::string::npos);
  // A format this p2v does not read is said to be one (not "missing field ...").
  {
    auto j = nlohmann::json::parse(read(run0 + "/" + certs[0]));
    j["format"] = "p2v-certificate/2";
    std::ofstream(base / "v2.json") << j.dump();
    CHECK(run("check " + (base / "v2.json").string()) == 1);
    CHECK(read(out).find("format \"p2v-certificate/2\": not a certificate format this p2v reads") != std::string::npos);
  }
  // rules prove writes certificates for catalogue rules only: an equation with --certify is an error,
  // not exit 0 with no directory.
  CHECK(run("rules prove --system node=2,gpu=2 --axes 4 --reduce 0 --lhs AllReduce --rhs \"ReduceScatter ; "
            "AllGather\" --certify " +
            (base / "eq").string()) == 2);
  CHECK(read(out).find("--certify: rule certificates are written for the catalogue's rules") != std::string::npos);
  CHECK(!fs::exists(base / "eq"));
  // The run itself named twice is checked once.
  CHECK(run("check --quiet " + run0 + " " + run0 + "/MANIFEST.json") == 0);
  CHECK(read(out).find(std::to_string(certs.size()) + " of " + std::to_string(certs.size())) != std::string::npos);
  fs::remove_all(base);
}
#endif
#endif

#ifdef P2V_HAVE_CHECKER
// Certificates at any size (docs/shape.md): 131,072 devices, checked without per-device work;
// every kind of tampering refused.
TEST_CASE("shape certificates: 131072 devices round-trip; tampering is refused") {
  const auto sys = engine::parse_system_arg("node=16384,gpu=8");
  const std::vector<std::string> names = sys.level_names();
  const engine::ParallelismMatrix x{{16384, 8}};
  const auto shape = engine::make_shape(sys.cardinalities(), names, x, {0}, engine::HierarchyKind::ReductionAxes);
  engine::SynthOptions opt;
  opt.max_size = 4;
  const auto r = engine::synthesize_shape(shape, opt);
  const std::string dir = (std::filesystem::temp_directory_path() / "p2v-test-shape-certs").string();
  std::filesystem::remove_all(dir);
  encodings::CertifyOptions c;
  c.dir = dir;
  const auto res = encodings::certify_shape_programs(sys, shape, r, opt, c);
  REQUIRE(res.files.size() == r.programs.size());
  for (const auto& f : res.files) {
    const auto v = checker::check_certificate_file(f);
    INFO(f, ": ", v.reason);
    CHECK(v.ok);
    CHECK(v.summary.find("131072 devices") != std::string::npos);
  }
  // A three-step program to tamper with: RS(node,Inside) ; AR(node,Parallel(root)) ; AG(node,Inside).
  std::string target;
  for (const auto& f : res.files)
    if (read(f).find("\"program\": \"ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; "
                     "AllGather@(node,Inside)\"") != std::string::npos)
      target = f;
  REQUIRE(!target.empty());
  const json good = json::parse(read(target));
  auto rejected = [](const json& j, const std::string& why) {
    const auto v = checker::check_certificate(j.dump());
    INFO("tampering: ", why, " -> ", v.reason);
    CHECK_FALSE(v.ok);
    return v.reason;
  };
  json t = good;
  t["steps"][1]["collective"] = "ReduceScatter";
  rejected(t, "collective of the real program");
  // Without the solvers' word a valid program is not certified.
  t = good;
  t["instance"].erase("facts");
  CHECK(rejected(t, "no facts").find("instance: missing field 'facts'") != std::string::npos);
  t = good;
  t["instance"]["facts"]["found_by"] = json::array();
  CHECK(rejected(t, "no solver accepted it").find("does not accept the program") != std::string::npos);
  t = good;
  t["instance"]["facts"]["complete"][0]["result"] = "unknown";
  CHECK(rejected(t, "completeness not proved").find("expected \"unsat\"") != std::string::npos);
  t = good;
  t["instance"]["program"]["steps"][1]["collective"] = "AllGather";
  rejected(t, "collective of the instance");
  t = good;
  t["steps"][0]["slice"] = "root";
  rejected(t, "level");
  t = good;
  std::swap(t["steps"][0], t["steps"][2]);
  rejected(t, "step order");
  t = good;
  std::swap(t["instance"]["program"]["steps"][0], t["instance"]["program"]["steps"][2]);
  std::swap(t["steps"][0], t["steps"][2]);
  rejected(t, "step order in both");
  t = good;
  t["instance"]["states"][1][0] = "0-3:0-3";
  rejected(t, "state");
  t = good;
  t["steps"][0]["num_groups"] = 1;
  rejected(t, "group count");
  t = good;
  t["system"]["levels"][0]["cardinality"] = 8192;
  rejected(t, "system alone");
  t = good;  // a consistent but different system: the recorded patterns no longer follow from it
  t["system"]["levels"][0]["cardinality"] = 8192;
  t["matrix"][0][0] = 8192;
  t["axes"][0] = 65536;
  CHECK(rejected(t, "system, matrix and axes").find("does not follow from the placement") != std::string::npos);
  t = good;
  t["shape"]["levels"][1]["cardinality"] = 2;
  rejected(t, "shape");
  t = good;
  t["instance"]["levels"] = json::array({1, 2, 4});
  rejected(t, "not the smallest instance");
}
#endif
