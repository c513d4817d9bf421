// The fidelity suite's accuracy numbers built into p2v (sim/fidelity.hpp, sim/data/fidelity.json):
// the file's reader, the note commands print beside a preset's prediction, and its place in the CLI.
// Whether the shipped numbers are the suite's own is CTest fidelity_accuracy (run.py regenerates them).
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "helpers.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/sim/fidelity.hpp"

using namespace p2v;
using namespace p2v::sim;

namespace {

std::string file(const std::string& rows) {
  return R"({"format": "p2v-fidelity/1", "points": 20, "logs": 2, "what": "test", "rows": [)" + rows + "]}";
}

const std::string kRow = R"({"preset": "dgx-h100", "scope": "several nodes", "regime": "1-64 MiB", "points": 20,
  "logs": 2, "nodes": [2, 8], "median": 0.93, "within_1_25": 0.8, "within_2": 0.95, "min": 0.4, "max": 1.1})";

}  // namespace

TEST_CASE("fidelity: the accuracy file is read, and a wrong one is refused naming what is wrong") {
  const auto a = parse_accuracy(file(kRow), "t.json");
  REQUIRE(a.rows.size() == 1);
  CHECK(a.points == 20);
  CHECK(a.rows[0].multi_node);
  CHECK(a.rows[0].nodes == std::vector<int>{2, 8});
  CHECK(a.rows[0].within_1_25 == simtest::rel(0.8));
  auto refused = [](const std::string& text, const std::string& what) {
    CAPTURE(text);
    try {
      (void)parse_accuracy(text, "t.json");
      FAIL("accepted");
    } catch (const Error& e) {
      const std::string m = e.what();
      CHECK(m.find("t.json") != std::string::npos);
      CHECK(m.find(what) != std::string::npos);
    }
  };
  refused("{", "not a p2v-fidelity/1 file");
  refused(R"({"format": "p2v-fidelity/2", "points": 1, "logs": 1, "rows": []})", "is not p2v-fidelity/1");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string r = kRow;
    r.replace(r.find(from), from.size(), to);
    return file(r);
  };
  refused(with(R"("within_1_25": 0.8)", R"("within_1_25": 1.5)"), "is not a share");
  refused(with(R"("scope": "several nodes")", R"("scope": "racks")"), "scope 'racks'");
  refused(with(R"("regime": "1-64 MiB")", R"("regime": "huge")"), "unknown size regime 'huge'");
  refused(with(R"("median": 0.93)", R"("median": 2.0)"), "is inconsistent");
  refused(with(R"("points": 20,)", ""), R"("points" missing)");
  refused(with(R"("points": 20,)", R"("points": 20.5,)"), "must be an integer");
  refused(with(R"("median": 0.93)", R"("median": "0.93")"), "must be a number");
  refused(with(R"("max": 1.1)", R"("max": 1.1, "mean": 1.0)"), R"(unknown field "mean")");
  refused(with(R"("preset": "dgx-h100")", R"("preset": "a100")"), "is not a preset's name");
  refused(with(R"("nodes": [2, 8])", R"("nodes": [1, 8])"), "does not fit scope 'several nodes'");
  refused(with(R"("nodes": [2, 8])", R"("nodes": [])"), "non-empty array");
  refused(file(kRow + "," + kRow), "a second row for dgx-h100 / several nodes / 1-64 MiB");
  refused(R"({"format": "p2v-fidelity/1", "points": 20, "logs": 2, "what": "t", "rows": {"a": 1}})",
          R"("rows" must be an array)");
  refused(R"({"format": "p2v-fidelity/1", "points": 21, "logs": 2, "what": "t", "rows": [)" + kRow + "]}",
          "the rows hold 20 points");
}

TEST_CASE("fidelity: the note gives the preset's share within 1.25x and median per regime, or says none checks it") {
  const auto a = parse_accuracy(file(kRow), "t.json");
  const auto note = accuracy_note(a, "dgx-h100", 4);
  CHECK(note.find("preset dgx-h100 uncalibrated against 20 published nccl-tests points (2,8 nodes") !=
        std::string::npos);
  CHECK(note.find("1-64 MiB 80% of 20 within 1.25x (median 0.93, range 0.40-1.10)") != std::string::npos);
  // Regimes without points are named, not left out.
  CHECK(note.find("<= 1 MiB unchecked (no point), 1-64 MiB") != std::string::npos);
  CHECK(note.find(">= 128 MiB unchecked (no point)") != std::string::npos);
  // One node is another scope: no row of it here.
  CHECK(accuracy_note(a, "dgx-h100", 1).find("no published measurement") != std::string::npos);
  CHECK(accuracy_rows(a, "dgx-h100", false).empty());
  // Aliases resolve to the preset's name (a100 is p2-a100, not dgx-a100).
  CHECK(accuracy_note(a, "a100", 2).find("preset p2-a100") != std::string::npos);
  CHECK_THROWS_AS((void)accuracy_note(a, "no-such-preset", 2), Error);
}

TEST_CASE("fidelity: the built-in numbers cover the suite's five presets, one node and several") {
  const auto& a = published_accuracy();
  REQUIRE(a.error.empty());
  CHECK(a.points > 500);
  for (const char* p : {"dgx-a100", "dgx-h100", "a3-mega", "p4d", "p5"}) {
    CAPTURE(p);
    CHECK(!accuracy_rows(a, p, true).empty());
  }
  for (const char* p : {"dgx-a100", "dgx-h100", "p5"}) {
    CAPTURE(p);
    CHECK(!accuracy_rows(a, p, false).empty());
  }
  CHECK(accuracy_rows(a, "h100", true).empty());
  CHECK(accuracy_rows(a, "p2-v100", false).empty());
}

TEST_CASE("fidelity: commands print the accuracy line for a preset, not for a system file") {
  const auto inline_sys = simtest::run("simulate --system node=2,gpu=8 --preset dgx-h100 --axes 16 --reduce 0 --top 1");
  CHECK(inline_sys.code == 0);
  CHECK(inline_sys.out.find("accuracy: preset dgx-h100 uncalibrated") != std::string::npos);
  CHECK(inline_sys.out.find("nodes;") != std::string::npos);  // the multi-node numbers
  const auto alone = simtest::run("simulate --preset p5 --axes 8 --reduce 0 --top 1");
  CHECK(alone.code == 0);
  CHECK(alone.out.find("accuracy: preset p5 uncalibrated") != std::string::npos);
  CHECK(alone.out.find("(1 node;") != std::string::npos);
  const auto unchecked = simtest::run("simulate --preset h100 --axes 8 --reduce 0 --top 1");
  CHECK(unchecked.out.find("no published measurement in p2v's fidelity suite checks preset h100") != std::string::npos);
  const auto file_sys = simtest::run("simulate --system " + std::string(P2V_SOURCE_DIR) +
                                     "/examples/systems/a100-2node.json --axes 16,2 --reduce 0 --top 1");
  CHECK(file_sys.code == 0);
  CHECK(file_sys.out.find("accuracy:") == std::string::npos);
  // A file written from a preset and then edited is the user's system: no accuracy line for it.
  const auto edited = simtest::run("simulate --preset dgx-a100 --axes 8 --reduce 0 --top 1 --json");
  REQUIRE(edited.code == 0);
  auto j = nlohmann::json::parse(edited.out).at("system");
  j["levels"][0]["interconnect"]["bandwidth_GBps"] = 100;
  const std::string path = "test_fidelity_edited_system.json";
  {
    std::ofstream f(path);
    f << j.dump();
  }
  const auto mine = simtest::run("simulate --system " + path + " --preset dgx-a100 --axes 8 --reduce 0 --top 1");
  CHECK(mine.code == 0);
  CHECK(mine.out.find("accuracy:") == std::string::npos);
  const auto mine_json =
      simtest::run("simulate --system " + path + " --preset dgx-a100 --axes 8 --reduce 0 --top 1 --json");
  REQUIRE(mine_json.code == 0);
  CHECK_FALSE(nlohmann::json::parse(mine_json.out).contains("accuracy"));
  j["levels"][0]["interconnect"]["bandwidth_GBps"] =
      nlohmann::json::parse(edited.out).at("system").at("levels")[0].at("interconnect").at("bandwidth_GBps");
  {
    std::ofstream f(path);
    f << j.dump();
  }
  // The same file unedited is the preset alone.
  const auto same = simtest::run("simulate --system " + path + " --preset dgx-a100 --axes 8 --reduce 0 --top 1");
  CHECK(same.out.find("accuracy: preset dgx-a100 uncalibrated") != std::string::npos);
  std::remove(path.c_str());
  // --json output stays JSON only: the line is the "accuracy" object's "note".
  const auto js = simtest::run("simulate --preset p5 --axes 8 --reduce 0 --top 1 --json");
  REQUIRE(js.code == 0);
  const auto parsed = nlohmann::json::parse(js.out);
  CHECK(parsed.at("accuracy").at("note").get<std::string>().rfind("accuracy: preset p5 uncalibrated", 0) == 0);
}

TEST_CASE("fidelity: accuracy_json holds the note's numbers per regime") {
  const auto a = parse_accuracy(file(kRow), "t.json");
  const auto j = accuracy_json(a, "dgx-h100", 4);
  CHECK(j.at("preset") == "dgx-h100");
  CHECK(j.at("scope") == "several nodes");
  CHECK(j.at("points") == 20);
  CHECK(j.at("nodes") == nlohmann::json::array({2, 8}));
  REQUIRE(j.at("regimes").size() == 3);
  CHECK(j.at("regimes")[0] == nlohmann::json{{"regime", "<= 1 MiB"}, {"points", 0}});
  const auto& mid = j.at("regimes")[1];
  CHECK(mid.at("regime") == "1-64 MiB");
  CHECK(mid.at("points") == 20);
  CHECK(mid.at("within_1_25").get<double>() == doctest::Approx(0.8));
  CHECK(mid.at("median").get<double>() == doctest::Approx(0.93));
  CHECK(j.at("note").get<std::string>().find("1-64 MiB 80% of 20 within 1.25x (median 0.93, range 0.40-1.10)") !=
        std::string::npos);
  // No row for the scope: no counts, and the note says so.
  const auto one = accuracy_json(a, "dgx-h100", 1);
  CHECK(one.at("points") == 0);
  CHECK(one.at("note").get<std::string>().find("no published measurement") != std::string::npos);
  // An unreadable built-in file: the error, no counts.
  PublishedAccuracy broken;
  broken.error = "t.json: bad";
  const auto e = accuracy_json(broken, "p5", 2);
  CHECK(e.at("error") == "t.json: bad");
  CHECK_FALSE(e.contains("points"));
}

TEST_CASE("fidelity: --json outputs carry the accuracy object where the text prints the line") {
  const std::string sys = " --system node=2,gpu=8 --preset dgx-h100";
  const auto text = simtest::run("simulate" + sys + " --axes 16 --reduce 0 --top 1");
  REQUIRE(text.code == 0);
  const auto at = text.out.find("accuracy: ");
  REQUIRE(at != std::string::npos);
  const std::string line = text.out.substr(at, text.out.find('\n', at) - at);
  auto accuracy_of = [](const std::string& args) {
    const auto r = simtest::run(args);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    return j.is_array() ? j.at(0).at("accuracy") : j.at("accuracy");
  };
  const std::string path = "test_fidelity_simulate.json";
  const auto sim_json = simtest::run("simulate" + sys + " --axes 16 --reduce 0 --bytes 1MiB --json");
  REQUIRE(sim_json.code == 0);
  const auto acc = nlohmann::json::parse(sim_json.out).at("accuracy");
  CHECK(acc.at("note") == line);
  CHECK(acc.at("preset") == "dgx-h100");
  CHECK(acc.at("scope") == "several nodes");
  int sum = 0;
  for (const auto& r : acc.at("regimes")) sum += r.at("points").get<int>();
  CHECK(acc.at("points") == sum);
  CHECK(sum > 0);
  // The report stays readable by the strict reader (--program-file), the object beside it.
  {
    std::ofstream f(path);
    f << sim_json.out;
  }
  CHECK(simtest::run("simulate" + sys + " --axes 16 --reduce 0 --bytes 1MiB --program-file " + path).code == 0);
  {
    auto bad = nlohmann::json::parse(sim_json.out);
    bad["accuracy"] = 3;
    std::ofstream f(path);
    f << bad.dump();
  }
  const auto refused = simtest::run("simulate" + sys + " --axes 16 --reduce 0 --bytes 1MiB --program-file " + path);
  CHECK(refused.code != 0);
  CHECK(refused.out.find("accuracy") != std::string::npos);
  std::remove(path.c_str());
  // Sweeps, explore, step, rewrite and calibrate carry the same object.
  CHECK(accuracy_of("simulate" + sys + " --axes 16 --reduce 0 --bytes 1KiB:1MiB:x32 --json") == acc);
  CHECK(accuracy_of("explore" + sys + " --axes 16 --reduce 0 --json") == acc);
  CHECK(accuracy_of("explore" + sys + " --axes 16 --reduce 0 --bytes 1KiB:1MiB:x32 --json") == acc);
  const std::string model = " --model " + std::string(P2V_SOURCE_DIR) + "/examples/models/resnet50.json";
  CHECK(accuracy_of("step" + model + sys + " --axes 16 --json") == acc);
  CHECK(accuracy_of("step" + model + sys + " --axes 16 --buckets 1MiB:4MiB:x2 --json") == acc);
  CHECK(accuracy_of("rewrite" + sys + " --axes 16 --reduce 0 --program AllReduce --no-certify --json") == acc);
  CHECK(accuracy_of("calibrate" + sys + " --nccl-tests " + std::string(P2V_SOURCE_DIR) +
                    "/bench/fidelity/data/dgx-h100/allreduce_2n16g_xe9680.txt --predict-only --json") == acc);
}
