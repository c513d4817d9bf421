// End-to-end tests of the p2v binary, run as a user would.
#include <doctest/doctest.h>

#include "cli_run.hpp"

#include <sys/wait.h>
#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include <map>
#include <set>
#include "naive.hpp"

namespace {

struct Run {
  int code;
  std::string out, err;
};

Run run(const std::string& args) {
  const auto c = p2v_test::run_cli(args);
  return Run{c.code, c.out, c.err};
}

// The rest of the line that starts (after spaces) with `key`, trimmed.
std::string line_of(const std::string& out, const std::string& key) {
  auto at = out.find(key);
  if (at == std::string::npos) return "<absent>";
  auto end = out.find('\n', at);
  std::string rest = out.substr(at + key.size(), end - at - key.size());
  rest.erase(0, rest.find_first_not_of(' '));
  return rest;
}

const std::string kSys = std::string(P2V_SOURCE_DIR) + "/examples/systems/";

}  // namespace

TEST_CASE("p2v matrices: Example 2.2 in JSON and as a table") {
  auto r = run("matrices --system " + kSys + "a100-4node.json --axes 4,16 --json");
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["matrices"].size() == 3);
  CHECK(j["matrices"][0] == nlohmann::json::parse("[[1,4],[4,4]]"));
  auto t = run("matrices --system node=4,gpu=16 --axes 4,16");
  CHECK(t.code == 0);
  CHECK(t.out.find("[[2 2] [2 8]]") != std::string::npos);
}

TEST_CASE("p2v groups reproduces Table 2") {
  auto r = run("groups --system rack=1,server=2,cpu=2,gpu=4 --axes 16 --reduce 0 --hierarchy a");
  REQUIRE(r.code == 0);
  CHECK(line_of(r.out, "(cpu,Parallel(server))") == "{0,4}{1,5}{2,6}{3,7}{8,12}{9,13}{10,14}{11,15}");
  CHECK(line_of(r.out, "(cpu,Master(rack))") == "{0,4,8,12}");
  CHECK(line_of(r.out, "(cpu,Parallel(rack))") == "{0,4,8,12}{1,5,9,13}{2,6,10,14}{3,7,11,15}");
  CHECK(line_of(r.out, "(server,Parallel(rack))") == "{0,8}{1,9}{2,10}{3,11}{4,12}{5,13}{6,14}{7,15}");
  CHECK(line_of(r.out, "(server,Inside)") == "{0,1,2,3,4,5,6,7}{8,9,10,11,12,13,14,15}");
}

TEST_CASE("p2v synth --json: schema, lowered groups, and every program valid on the system") {
  auto r = run("synth --system " + kSys + "a100-2node.json --axes 2,16 --reduce 0 --json --lowered");
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["axes"] == nlohmann::json::parse("[2,16]"));
  CHECK(j["reduce"] == nlohmann::json::parse("[0]"));
  CHECK(j["system"]["levels"].size() == 2);
  REQUIRE(j["results"].size() == 2);  // [[1 2],[2 8]] and [[2 1],[1 16]]
  std::size_t programs = 0;
  for (const auto& res : j["results"]) {
    CHECK(res["hierarchy"][0] == 1);
    for (const auto& prog : res["programs"]) {
      ++programs;
      // Replay the lowered groups on all 32 devices with the naive semantics.
      auto s = naive::initial(32);
      for (const auto& si : prog["steps"]) {
        const auto& st = res["instructions"][si.get<int>()];
        CHECK(st["group_size"].get<int>() * st["num_groups"].get<int>() == (st["master"].get<bool>() ? 2 * 16 : 32));
        auto c = p2v::engine::parse_collective(st["collective"].get<std::string>());
        REQUIRE(naive::step(s, c, st["groups"].get<std::vector<std::vector<int>>>()));
      }
      // Goal: reduction groups over axis 0 (devices sharing the axis-1 coordinate).
      std::vector<std::vector<int>> goal_groups;
      std::map<std::vector<int>, std::vector<int>> by;  // group of device d: from the first step's covering
      (void)by;
      bool at_goal = true;
      for (int d = 0; d < 32; ++d) {
        const auto& cols = s[d].begin()->second;
        at_goal &= s[d].size() == 32 && cols.size() == 2;  // axis 0 has size 2
        for (const auto& [row, c] : s[d]) at_goal &= c == cols && c.count(d);
      }
      CHECK(at_goal);
    }
  }
  CHECK(programs > 3);
}

TEST_CASE("p2v synth table for Example 5.2 and the main job's example") {
  auto r = run("synth --system node=2,gpu=4 --axes 8 --reduce 0");
  REQUIRE(r.code == 0);
  CHECK(r.out.find("ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; AllGather@(node,Inside)") !=
        std::string::npos);
  auto m = run("synth --system " + kSys + "a100-4node.json --axes 4,16 --reduce 0 --matrix \"2 2;2 8\" --show 3");
  CHECK(m.code == 0);
  CHECK(m.out.find("more (use --show or --json)") != std::string::npos);
}

TEST_CASE("bad input fails cleanly with a non-zero exit and a message naming the problem") {
  const std::string bad = "/tmp/p2v_bad_system.json";
  {
    std::ofstream f(bad);
    f << "{\"levels\": [{\"name\": \"gpu\", \"cardinality\": 4}";
  }
  auto r = run("synth --system " + bad + " --axes 4 --reduce 0");
  CHECK(r.code == 2);
  CHECK(r.err.find("malformed JSON") != std::string::npos);
  CHECK(r.out.empty());
  r = run("synth --system node=4,gpu=16 --axes 4,8 --reduce 0");
  CHECK(r.code == 2);
  CHECK(r.err.find("product is 32 but the system has 64 devices") != std::string::npos);
  r = run("synth --system node=4,gpu=16 --axes 4,16 --reduce 2");
  CHECK(r.code == 2);
  CHECK(r.err.find("out of range") != std::string::npos);
  r = run("synth --system node=4,gpu=16 --axes 4,16 --reduce 0 --max-size 0");
  CHECK(r.code == 2);
  CHECK(r.err.find("--max-size 0") != std::string::npos);
  r = run("synth --system node=4,gpu=16 --axes 4,16 --reduce 0 --max-size 1000000");
  CHECK(r.code == 2);
  r = run("synth --system node=4,gpu=16 --axes 4,16 --reduce 0 --matrix \"1 4;2 4\"");
  CHECK(r.code == 2);
  CHECK(r.err.find("row 1 multiplies to 8") != std::string::npos);
  r = run("synth --system node=4,gpu=16 --axes 4,16 --reduce 0 --hierarchy z");
  CHECK(r.code == 2);
  // Too large for the concrete engine: the refusal names the limit, the size and the way out.
  r = run("synth --system gpu=1024 --axes 1024 --reduce 0 --concrete");
  CHECK(r.code == 2);
  CHECK(r.err.find("at most 512") != std::string::npos);
  CHECK(r.err.find("1024") != std::string::npos);
  CHECK(r.err.find("drop --concrete") != std::string::npos);
  r = run("synth --system gpu=1024 --axes 1024 --reduce 0 --hierarchy a");
  CHECK(r.code == 2);
  CHECK(r.err.find("use hierarchy (d)") != std::string::npos);
  r = run("synth --system gpu=1024 --axes 1024 --reduce 0 --lowered");
  CHECK(r.code == 0);  // 1024 devices: explicit lists are fine
  r = run("synth --system node=1024,gpu=128 --axes 131072 --reduce 0 --lowered");
  CHECK(r.code == 2);
  CHECK(r.err.find("at most 65536 devices") != std::string::npos);
  // The shape path at any size: same programs as the smallest instance.
  r = run("synth --system node=1024,gpu=128 --axes 131072 --reduce 0");
  CHECK(r.code == 0);
  CHECK(r.out.find("47 programs") != std::string::npos);
  r = run("synth --axes 4 --reduce 0");  // missing --system
  CHECK(r.code != 0);
  CHECK(r.err.find("--system") != std::string::npos);
  std::remove(bad.c_str());
}

TEST_CASE("every executable's --help lists the same commands with the same descriptions") {
  const std::string bin = P2V_BIN;
  const std::string dir = bin.substr(0, bin.rfind('/'));
  auto commands = [](const std::string& help) { return help.substr(help.find("Subcommands:")); };
  const auto main_help = run("--help");
  REQUIRE(main_help.code == 0);
  CHECK(main_help.out.find("  run ") != std::string::npos);
  CHECK(main_help.out.find("  verify ") != std::string::npos);
  for (const char* exe : {"p2v-smt", "p2v-run"}) {
    std::FILE* f = std::fopen((dir + "/" + exe).c_str(), "r");
    if (!f) continue;  // not built here (no solvers / no MPI)
    std::fclose(f);
    CAPTURE(exe);
    std::string out;
    FILE* p = ::popen((dir + "/" + exe + " --help").c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf{};
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    CHECK(::pclose(p) == 0);
    CHECK(commands(out) == commands(main_help.out));
  }
}

TEST_CASE("p2v synth: where the shape theorem is not proved, exact on small systems, a warning on large ones") {
  // --master-collectives all at depth 3 with unequal cardinalities: "no other program" is checked, not
  // proved (docs/shape.md §3.3, §3.5; depth <= 2 is proved, §3.4, and depth 3 with equal ones, §3.5).
  const auto small = run("synth --system rack=2,node=2,gpu=3 --axes 12 --reduce 0 --master-collectives all --json");
  REQUIRE(small.code == 0);
  const auto js = nlohmann::json::parse(small.out);
  CHECK_FALSE(js["results"][0].contains("shape"));  // computed on the system
  const auto concrete =
      run("synth --system rack=2,node=2,gpu=3 --axes 12 --reduce 0 --master-collectives all --json --concrete");
  REQUIRE(concrete.code == 0);
  CHECK(nlohmann::json::parse(concrete.out)["results"][0]["programs"] == js["results"][0]["programs"]);
  CHECK(small.err.empty());
  const auto text = run("synth --system rack=2,node=2,gpu=3 --axes 12 --reduce 0 --master-collectives all");
  CHECK(text.out.find("on the system: the shape theorem is not proved for this shape") != std::string::npos);
  // Above 64 devices per reduction group: the shape's list, and a warning saying what it rests on.
  const auto large = run("synth --system rack=2,node=32,gpu=8 --axes 512 --reduce 0 --master-collectives all");
  REQUIRE(large.code == 0);
  CHECK(large.out.find("on the shape") != std::string::npos);
  CHECK(large.err.find("the shape theorem is not proved") != std::string::npos);
  CHECK(large.err.find("--concrete") != std::string::npos);
  // The default setting at depth <= 5 is proved: no warning, on the shape.
  const auto proved = run("synth --system pod=16,rack=32,node=32,gpu=8 --axes 131072 --reduce 0 --show 1");
  REQUIRE(proved.code == 0);
  CHECK(proved.err.empty());
  CHECK(proved.out.find("on the shape") != std::string::npos);
}

TEST_CASE("p2v simulate and p2v synth list the same programs where the shape theorem is not proved") {
  // --master-collectives all on 12 devices at depth 3, unequal cardinalities: synth computes on the system
  // (the exact fallback); both simulator models take their programs from the same engine::ProgramSource.
  const std::string problem = "--system rack=2,node=2,gpu=3 --axes 12 --reduce 0 --master-collectives all --json";
  const auto synth = run("synth " + problem);
  REQUIRE(synth.code == 0);
  std::multiset<std::string> want;
  const auto synth_json = nlohmann::json::parse(synth.out);
  for (const auto& p : synth_json["results"][0]["programs"]) want.insert(p["notation"].get<std::string>());
  REQUIRE(want.size() > 1);
  for (const char* model : {"levels", "graph"}) {
    CAPTURE(model);
    const auto sim = run("simulate " + problem + " --model " + model);
    REQUIRE(sim.code == 0);
    const auto r = nlohmann::json::parse(sim.out)["results"][0];
    std::multiset<std::string> got;
    for (const auto& p : r["programs"]) got.insert(p["program"].get<std::string>());
    CHECK(r["num_programs"].get<std::size_t>() == want.size());
    CHECK(got == want);
  }
}
