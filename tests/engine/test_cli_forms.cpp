// The command line's shared vocabulary (README "Commands"; the dispatcher, docs/architecture.md): every
// command that takes a system takes a file, an inline hierarchy and --preset; dtype spellings;
// usage errors exit 2; the companion executable is chosen from all flags; simulate prices given
// programs; calibrate refuses measurements of another system.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli_run.hpp"

namespace {
// Relative comparison: doctest::Approx's default scale makes its tolerance an absolute 1.2e-5 near
// zero, which any two times in seconds at the microsecond scale pass.
doctest::Approx rel_approx(double v) { return v == 0 ? doctest::Approx(v) : doctest::Approx(v).scale(0); }
}  // namespace

namespace {

using nlohmann::json;
using p2v_test::run_cli;

const std::string kSys = std::string(P2V_SOURCE_DIR) + "/examples/systems/";
const std::string kModels = std::string(P2V_SOURCE_DIR) + "/examples/models/";

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/p2v_forms_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

// The three forms of a 2-node, 8-GPU-per-node system, and a preset alone (one node).
struct Form {
  std::string what;
  std::string args;
  int devices;
};
const Form kForms[] = {
    {"file", "--system " + kSys + "v100-2node.json", 16},
    {"inline", "--system node=2,gpu=8", 16},
    {"inline with preset", "--system node=2,gpu=8 --preset dgx-a100", 16},
    {"preset alone", "--preset dgx-h100", 8},
};

}  // namespace

TEST_CASE("system forms: matrices, groups, synth, simulate and explore take a file, an inline hierarchy, a preset") {
  for (const auto& f : kForms) {
    CAPTURE(f.what);
    const std::string axes = " --axes " + std::to_string(f.devices);
    auto m = run_cli("matrices " + f.args + axes + " --json");
    REQUIRE(m.code == 0);
    int n = 1;
    const auto mj = json::parse(m.out);
    for (int c : mj["levels"]) n *= c;
    CHECK(n == f.devices);
    CHECK(run_cli("groups " + f.args + axes + " --reduce 0").code == 0);
    auto s = run_cli("synth " + f.args + axes + " --reduce 0 --json");
    REQUIRE(s.code == 0);
    CHECK(!json::parse(s.out)["results"].empty());
    auto sim = run_cli("simulate " + f.args + axes + " --reduce 0 --json --bytes 1M");
    REQUIRE(sim.code == 0);
    const auto sj = json::parse(sim.out);
    CHECK(!sj["results"].empty());
    // Every level of more than one instance has an interconnect: from the file or a preset.
    for (const auto& l : sj["system"]["levels"])
      if (l["cardinality"].get<int>() > 1) CHECK(l.contains("interconnect"));
    auto e = run_cli("explore " + f.args + axes + " --reduction 0@1 --json --bytes 1M");
    REQUIRE(e.code == 0);
    CHECK(!json::parse(e.out)["results"].empty());
  }
}

TEST_CASE("system forms: explore --preset and --system node=4,gpu=8 (cases that once failed)") {
  auto a = run_cli("explore --system node=4,gpu=8 --axes 32 --reduce 0 --preset dgx-h100");
  CHECK(a.code == 0);
  CHECK(a.out.find("preset dgx-h100") != std::string::npos);
  auto b = run_cli("explore --system node=4,gpu=8 --axes 8,4 --reduction 0@1 --reduction 1@2");
  CHECK(b.code == 0);
  CHECK(b.out.find("preset h100") != std::string::npos);  // the default preset, named
}

TEST_CASE("system forms: a preset carries device numbers, so step works from a preset or inline system") {
  const std::string model = " --model " + kModels + "bert-large.json --no-choose --json";
  for (const std::string sys : {"--system node=2,gpu=8 --preset dgx-h100", "--preset dgx-h100"}) {
    CAPTURE(sys);
    auto r = run_cli("step " + sys + model + (sys.find("node=2") != std::string::npos ? " --axes 16" : " --axes 8"));
    REQUIRE(r.code == 0);
    const auto j = json::parse(r.out);
    // H100 SXM: 989 TFLOP/s dense bf16 (datasheet) x the preset's assumed efficiency 0.4.
    CHECK(j["compute"]["flops_per_s"].get<double>() == rel_approx(989e12 * 0.4));
  }
  // The default preset fills an inline system's device too, and says so.
  auto d = run_cli("step --system node=2,gpu=8 --axes 16 --model " + kModels + "bert-large.json --no-choose");
  CHECK(d.code == 0);
  CHECK(d.out.find("device H100-SXM5-80GB") != std::string::npos);
  // A system file keeps its own device (V100 here), whatever the default preset.
  auto v = run_cli("step --system " + kSys + "v100-2node.json --axes 16 --model " + kModels +
                   "bert-large.json --no-choose --json");
  REQUIRE(v.code == 0);
  CHECK(json::parse(v.out)["compute"]["flops_per_s"].get<double>() == rel_approx(15.7e12 * 0.7));
}

TEST_CASE("system forms: reshard --cost topology from an inline system with a preset") {
  const std::string p = "reshard --mesh x=2,y=8 --from '[8{y}64,32]' --to '[32{x}64,32]' --cost topology --json ";
  for (const std::string& sys :
       std::vector<std::string>{"--system node=2,gpu=8 --preset dgx-h100", "--system node=2,gpu=8",
                                "--system " + kSys + "v100-2node.json"}) {
    CAPTURE(sys);
    auto r = run_cli(p + sys);
    REQUIRE(r.code == 0);
    CHECK(json::parse(r.out)["time_s"].get<double>() > 0);
  }
}

TEST_CASE("system forms: one error text when no system is given, and an unknown preset is named") {
  for (const std::string cmd : {"matrices --axes 4", "synth --axes 4 --reduce 0", "simulate --axes 4 --reduce 0",
                                "explore --axes 4 --reduce 0", "calibrate --measurements x.csv",
                                "export --axes 4 --reduce 0 --program AllReduce -o /tmp/p2v_forms_unused.py"}) {
    CAPTURE(cmd);
    auto r = run_cli(cmd);
    CHECK(r.code == 2);
    CHECK(r.err.find("p2v: error: no system: give --system FILE (JSON), --system with an inline hierarchy") !=
          std::string::npos);
  }
  auto u = run_cli("simulate --system node=2,gpu=4 --axes 8 --reduce 0 --preset nosuch");
  CHECK(u.code == 2);
  CHECK(u.err.find("--preset 'nosuch': unknown") != std::string::npos);
  auto g = run_cli("matrices --system node=2,gpu=4 --axes 8 --preset nosuch");  // checked where not used too
  CHECK(g.code == 2);
}

TEST_CASE("calibrate refuses measurements taken on another number of ranks") {
  // p2v run --csv writes a ranks column: a 16-rank run does not calibrate a 32-device system.
  const auto csv = temp_file("cal16.csv",
                             "collective,groups,bytes,seconds,description,system,ranks\n"
                             "AllReduce,0-15,1048576,0.001,x,node=2;gpu=8,16\n");
  auto r = run_cli("calibrate --system node=4,gpu=8 --measurements " + csv);
  CHECK(r.code == 2);
  CHECK(r.err.find("measured on 16 ranks, but the system has 32 devices") != std::string::npos);
  // The same file on the 16-device system it was taken on is accepted (inline and preset forms).
  auto ok = run_cli("calibrate --system node=2,gpu=8 --preset dgx-a100 --measurements " + csv + " --json");
  CHECK(ok.code == 0);
  std::remove(csv.c_str());
}

TEST_CASE("dtype: every spelling where a dtype is read") {
  const std::string rs = "reshard --mesh x=4 --from '[4{x}16]' --to '[16]' --json --dtype ";
  for (const char* d : {"f32", "float32", "float", "FP32", "i32", "int32", "int"}) {
    CAPTURE(d);
    auto r = run_cli(rs + d);
    REQUIRE(r.code == 0);
    CHECK(json::parse(r.out)["bytes_per_element"] == 4);  // whatever the spelling
  }
  CHECK(json::parse(run_cli(rs + "bfloat16").out)["bytes_per_element"] == 2);
  auto bad = run_cli(rs + "float128");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--dtype 'float128': unknown element type; the types are f64 (float64, double, fp64)") !=
        std::string::npos);
}

TEST_CASE("run: --dtype spellings, --json, --preset, and the matrix found from --program") {
  // fig2a: the program fits one placement of axes 4,4 (reducing axis 1), so no --matrix is needed.
  const std::string prog =
      " --program 'ReduceScatter@(cpu,Inside) ; AllReduce@(cpu,Parallel(server)) ; AllGather@(cpu,Inside)'";
  const std::string base = "run --backend threads --system " + kSys + "fig2a.json --axes 4,4 --reduce 1" + prog +
                           " --bytes 4K --iters 1 --warmup 0 --json --dtype ";
  for (const auto& [d, canon] :
       {std::pair{"float", "float32"}, {"f32", "float32"}, {"int", "int32"}, {"i32", "int32"}, {"INT32", "int32"}}) {
    CAPTURE(d);
    auto r = run_cli(base + d);
    REQUIRE(r.code == 0);
    const auto j = json::parse(r.out);
    CHECK(j["format"] == "p2v-run/1");
    CHECK(j["dtype"] == canon);
    REQUIRE(j["programs"].size() == 1);
    CHECK(j["programs"][0]["ok"] == true);
    CHECK(j["programs"][0]["matrix"] == json::parse("[[1,2,1,2],[1,1,2,2]]"));
    CHECK(j["programs"][0]["total"]["busbw_GBps"].get<double>() > 0);
  }
  auto half = run_cli(base + "f16");
  CHECK(half.code == 2);
  CHECK(half.err.find("the run moves i32 (int32) or f32 (float32) elements, not f16") != std::string::npos);
  // A program that fits several placements: they are listed.
  auto many = run_cli(
      "run --backend threads --system node=2,gpu=4 --axes 8 --reduce 0 --program 'AllReduce' "
      "--bytes 4K --iters 1 --warmup 0");
  CHECK(many.code == 2);
  // --preset alone: one node of 8 devices.
  auto p = run_cli(
      "run --backend threads --preset dgx-h100 --axes 8 --reduce 0 --program 'AllReduce@(root,Inside)' "
      "--bytes 4K --iters 1 --warmup 0 --json");
  REQUIRE(p.code == 0);
  CHECK(json::parse(p.out)["levels"] == json::parse("[8]"));
}

TEST_CASE("--top N means the N best by predicted time: run --top N runs what simulate --top N lists") {
  const std::string problem = " --system " + kSys + "fig2a.json --axes 4,4 --reduce 1 --bytes 4K";
  auto all = run_cli("simulate" + problem + " --json");
  REQUIRE(all.code == 0);
  const std::string ranked = temp_file("ranked.json", all.out);
  auto listed = run_cli("simulate" + problem + " --json --top 2");
  REQUIRE(listed.code == 0);
  std::multiset<std::pair<std::string, std::string>> want, ran;
  const json lj = json::parse(listed.out);
  for (const auto& m : lj["results"]) {
    CHECK(m["programs"].size() <= 2);
    for (const auto& p : m["programs"]) want.insert({m["matrix"].dump(), p["program"].get<std::string>()});
  }
  REQUIRE(want.size() >= 4);  // fig2a's 4 placements, 2 each
  auto r = run_cli("run --backend threads --program-file " + ranked +
                   " --top 2 --bytes 4K --iters 1 --warmup 0 --no-baseline --json");
  REQUIRE(r.code == 0);
  const json rj = json::parse(r.out);
  for (const auto& p : rj["programs"]) {
    CHECK(p["ok"] == true);
    ran.insert({p["matrix"].dump(), p["program"].get<std::string>()});
  }
  CHECK(ran == want);
  // An unranked file (synth's) or no file: refused, saying why.
  auto synth = run_cli("synth --system " + kSys + "fig2a.json --axes 4,4 --reduce 1 --json");
  REQUIRE(synth.code == 0);
  const std::string unranked = temp_file("unranked.json", synth.out);
  auto u = run_cli("run --backend threads --program-file " + unranked + " --top 2 --bytes 4K --iters 1 --warmup 0");
  CHECK(u.code == 2);
  CHECK(u.err.find("does not rank its programs (it is p2v synth's output)") != std::string::npos);
  auto none = run_cli("run --backend threads --system " + kSys +
                      "fig2a.json --axes 4,4 --reduce 1 --program 'AllReduce@(root,Inside)' --top 2");
  CHECK(none.code == 2);
  CHECK(none.err.find("--top N picks the best programs of a --program-file") != std::string::npos);
  auto zero = run_cli("run --backend threads --program-file " + ranked + " --top 0 --bytes 4K");
  CHECK(zero.code == 2);
  CHECK(zero.err.find("--top 0: expected a number of programs (1 or more), or -1 for all") != std::string::npos);
  std::remove(ranked.c_str());
  std::remove(unranked.c_str());
}

TEST_CASE("p2v-run/1 has a reader: simulate --measurements and calibrate take run --json output") {
  const std::string sys = " --system " + kSys + "fig2a.json --axes 4,4 --reduce 1";
  auto r = run_cli("run --backend threads" + sys +
                   " --program 'ReduceScatter@(cpu,Inside) ; AllReduce@(cpu,Parallel(server)) ; AllGather@(cpu,Inside)'"
                   " --bytes 64K --iters 2 --warmup 0 --json");
  REQUIRE(r.code == 0);
  const auto rj = json::parse(r.out);
  REQUIRE(rj["programs"][0]["steps"].size() == 3);
  CHECK(rj["programs"][0]["steps"][0]["group_list"].get<std::string>().find('|') != std::string::npos);
  const std::string run = temp_file("run.json", r.out);
  // 3 steps and the baseline: 4 measured collectives, priced by the simulator.
  auto s = run_cli("simulate" + sys + " --bytes 64K --measurements " + run + " --json");
  REQUIRE(s.code == 0);
  CHECK(json::parse(s.out)["measurements"]["rows"].size() == 4);
  auto c = run_cli("calibrate --system " + kSys + "fig2a.json --measurements " + run + " --json");
  REQUIRE(c.code == 0);
  CHECK(json::parse(c.out)["measurements"] == 4);
  // Taken on 16 ranks: refused for a system of 32 devices, as the CSV is.
  auto other = run_cli("calibrate --system node=4,gpu=8 --preset dgx-a100 --measurements " + run);
  CHECK(other.code == 2);
  CHECK(other.err.find("measured on 16 ranks, but the system has 32 devices") != std::string::npos);
  std::remove(run.c_str());
}

TEST_CASE("export and step infer the matrix when one fits, and list the candidates when several do") {
  const std::string fig2a = " --system " + kSys + "fig2a.json --axes 4,4 --reduce 1";
  const std::string one =
      " --program 'ReduceScatter@(cpu,Inside) ; AllReduce@(cpu,Parallel(server)) ; AllGather@(cpu,Inside)'";
  const std::string out = temp_file("export.py", "");
  auto e = run_cli("export" + fig2a + one + " -o " + out + " --json");
  REQUIRE(e.code == 0);
  CHECK(json::parse(e.out)["matrix"] == json::parse("[[1,2,1,2],[1,1,2,2]]"));
  auto many = run_cli("export" + fig2a + " --program 'AllReduce@(rack,Inside)' -o " + out);
  CHECK(many.code == 2);
  CHECK(many.err.find("--program 'AllReduce@(rack,Inside)' fits 4 placements ([[1 1 1 4] [1 2 2 1]], ") !=
        std::string::npos);
  CHECK(many.err.find("pick one with --matrix") != std::string::npos);
  // run: the same selection and the same words (engine::infer_matrix).
  auto run_many = run_cli("run --backend threads" + fig2a + " --program 'AllReduce@(rack,Inside)' --bytes 4K");
  CHECK(run_many.code == 2);
  CHECK(run_many.err.find("--program 'AllReduce@(rack,Inside)' fits 4 placements ([[1 1 1 4] [1 2 2 1]], ") !=
        std::string::npos);
  auto all = run_cli("export" + fig2a + " --all-programs -o " + out);
  CHECK(all.code == 2);
  CHECK(all.err.find("--all-programs fits 4 placements") != std::string::npos);
  auto none = run_cli("export" + fig2a + " --program 'AllReduce@(server,Inside)' -o " + out);
  CHECK(none.code == 2);
  CHECK(none.err.find("is not a program of any of the 4 placements of the axes") != std::string::npos);
  // step: only the placements the program fits are planned.
  auto st = run_cli("step --model " + kModels + "bert-base.json" + fig2a + " --measured-step-ms 100" + one + " --json");
  REQUIRE(st.code == 0);
  CHECK(json::parse(st.out)["placements"].size() == 1);
  std::remove(out.c_str());
}

TEST_CASE("usage errors: an unknown flag exits 2 with p2v: error: for every command") {
  for (const char* cmd : {"matrices", "groups", "synth", "reshard", "verify", "check", "simulate", "explore",
                          "calibrate", "step", "export", "prove", "rules", "rewrite", "run"}) {
    CAPTURE(cmd);
    auto r = run_cli(std::string(cmd) + " --no-such-flag");
    CHECK(r.code == 2);
    CHECK(r.err.rfind("p2v: error: ", 0) == 0);
  }
}

TEST_CASE("dispatcher: reshard --certify with --run fails clearly in either order") {
  const std::string p = "reshard --mesh x=2 --from '[2{x}4]' --to '[4]' ";
  for (const std::string flags : {"--certify /tmp/p2v_forms_unused --run", "--run --certify /tmp/p2v_forms_unused",
                                  "--run --certify=/tmp/p2v_forms_unused", "--certificates /tmp/p2v_forms_x --run"}) {
    CAPTURE(flags);
    auto r = run_cli(p + flags);
    CHECK(r.code == 2);
    CHECK(r.err.find("--certify and --run do not go together") != std::string::npos);
    CHECK(r.err.find("not installed") == std::string::npos);
  }
}

TEST_CASE("simulate --program prices the given program only, on the placements it fits") {
  const std::string prob = "simulate --system " + kSys + "a100-2node.json --axes 2,16 --reduce 1 --bytes 64M --json";
  auto all = run_cli(prob);
  REQUIRE(all.code == 0);
  const auto aj = json::parse(all.out);
  // A program of the second-best rank of some matrix, priced alone: the same time, rank 1.
  std::string prog;
  double time = 0;
  json matrix;
  for (const auto& m : aj["results"])
    if (m["programs"].size() > 1) {
      prog = m["programs"][1]["program"];
      time = m["programs"][1]["time_s"];
      matrix = m["matrix"];
      break;
    }
  REQUIRE(!prog.empty());
  auto one = run_cli(prob + " --program '" + prog + "'");
  REQUIRE(one.code == 0);
  const auto oj = json::parse(one.out);
  bool seen = false;
  for (const auto& m : oj["results"]) {
    REQUIRE(m["programs"].size() == 1);
    CHECK(m["programs"][0]["program"] == prog);
    CHECK(m["programs"][0]["rank"] == 1);
    if (m["matrix"] == matrix) {
      seen = true;
      CHECK(m["programs"][0]["time_s"].get<double>() == rel_approx(time));
    }
  }
  CHECK(seen);
  // The same program from a file (one per line, spaces as typed differently).
  std::string squeezed;
  for (char c : prog)
    if (c != ' ') squeezed += c;
  const auto f = temp_file("progs.txt", "# a comment\n\n" + squeezed + "\n");
  auto fromfile = run_cli(prob + " --program-file " + f);
  REQUIRE(fromfile.code == 0);
  CHECK(json::parse(fromfile.out)["results"] == oj["results"]);
  std::remove(f.c_str());
  // A program that is none of the placements' is refused by name.
  auto bad = run_cli(prob + " --program 'AllGather@(gpu,Inside)'");
  CHECK(bad.code == 2);
  CHECK(bad.err.find("program 'AllGather@(gpu,Inside)' is not a valid program") != std::string::npos);
}

TEST_CASE("--json on every command, --preset on every command that takes a system") {
  for (const char* cmd : {"matrices", "groups", "synth", "reshard", "verify", "check", "simulate", "explore",
                          "calibrate", "step", "export", "prove", "rewrite", "run"}) {
    CAPTURE(cmd);
    auto r = run_cli(std::string(cmd) + " --help");
    REQUIRE(r.code == 0);
    CHECK(r.out.find("--json") != std::string::npos);
    if (std::string(cmd) != "check") CHECK(r.out.find("--preset") != std::string::npos);
  }
  for (const char* sub : {"prove", "derive"}) {
    auto r = run_cli(std::string("rules ") + sub + " --help");
    REQUIRE(r.code == 0);
    CHECK(r.out.find("--preset") != std::string::npos);
  }
}
