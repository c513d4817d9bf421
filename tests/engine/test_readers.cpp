// Every file reader refuses bad input with p2v::Error (the CLI: "p2v: error: <file>: <json
// path>: ...", exit 2): numbers beyond a double, deep nesting, values of the wrong type, files
// that never end (/dev/zero), directories. Inputs found by the fuzz targets (tests/fuzz) that
// crashed or said "internal error" are kept here as regression tests.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include "cli_run.hpp"

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/synth_format.hpp"
#include "p2v/engine/system.hpp"

namespace {

using namespace p2v::engine;

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const p2v::Error& e) {
    return e.what();
  }
  return "";
}

struct Cli {
  int code;
  std::string out, err;
};

Cli p2v_cli(const std::string& args) {
  const auto c = p2v_test::run_cli(args);
  return Cli{c.code, c.out, c.err};
}

std::string write_tmp(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/p2v_readers_test_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

const std::string kSystem = R"({"name":"t","levels":[{"name":"node","cardinality":2},{"name":"gpu","cardinality":4}]})";

}  // namespace

TEST_CASE("readers: a number beyond a double is refused naming the file and the JSON path") {
  const std::string e = error_of([] { parse_json(R"({"a":[1,{"b":1e400}]})", "x.json"); });
  CHECK(e.find("x.json: a[1].b: number 1e400 is out of range") != std::string::npos);
  CHECK(error_of([] { parse_json("-1e400", "x.json"); }).find("x.json: (top level): number -1e400") !=
        std::string::npos);
  std::string sys = kSystem;
  sys.replace(sys.find("\"cardinality\":4"), 15, "\"cardinality\":4e999");
  CHECK(error_of([&] { parse_system_json(sys, "s.json"); }).find("s.json: levels[1].cardinality: number 4e999") !=
        std::string::npos);
  // Syntax errors keep their position.
  CHECK(error_of([] { parse_json(R"({"a":[1,})", "x.json"); }).find("x.json: malformed JSON") != std::string::npos);
  // A very small number is a finite double (0), not an error.
  CHECK(parse_json("1e-400", "x.json").get<double>() == 0.0);
}

TEST_CASE("readers: an object holding a key twice is refused, naming where; the same key in two objects is not") {
  CHECK(error_of([] {
          parse_json(R"({"a":[1,{"b":1,"c":2,"b":3}]})", "x.json");
        }).find("x.json: a[1].b: the key appears twice in one object") != std::string::npos);
  std::string sys = kSystem;
  sys.replace(sys.find("\"cardinality\":4"), 15, "\"cardinality\":4,\"cardinality\":8");
  CHECK(error_of([&] {
          parse_system_json(sys, "s.json");
        }).find("s.json: levels[1].cardinality: the key appears twice") != std::string::npos);
  CHECK(parse_json(R"({"a":{"k":1},"b":{"k":2},"k":3})", "x.json")["b"]["k"] == 2);
}

TEST_CASE("readers: nesting deeper than the limit is refused before anything recursive sees it") {
  const std::string deep(100000, '[');
  CHECK(error_of([&] { parse_json(deep, "d.json"); }).find("nested deeper than 256 levels") != std::string::npos);
  std::string ok(kMaxJsonDepth, '[');
  ok += std::string(kMaxJsonDepth, ']');
  CHECK_NOTHROW(parse_json(ok, "d.json"));
  // A deeply nested value in the wrong place is shown cut, not printed whole.
  std::string wide = R"({"levels":")" + std::string(100000, 'x') + "\"}";
  const std::string e = error_of([&] { parse_system_json(wide, "w.json"); });
  CHECK(e.find("w.json") != std::string::npos);
  CHECK(e.size() < 300);
}

TEST_CASE("readers: input files are read with a size cap, whatever kind of file they are") {
  // /dev/zero never ends: refused at the cap instead of filling the memory.
  CHECK(error_of([] {
          read_text_file("/dev/zero", "system file", 1 << 20);
        }).find("system file '/dev/zero': larger than 1 MiB, the limit for input files") != std::string::npos);
  CHECK(error_of([] { read_text_file("/tmp", "system file"); }).find("it is a directory") != std::string::npos);
  CHECK(error_of([] { read_text_file("/no/such/file", "system file"); }).find("cannot open it") != std::string::npos);
  const std::string f = write_tmp("cap.txt", std::string(1000, 'a'));
  CHECK(read_text_file(f, "x", 1000).size() == 1000);
  CHECK(error_of([&] { read_text_file(f, "x", 999); }).find("larger than 999 bytes") != std::string::npos);
  std::remove(f.c_str());
  CHECK(kMaxInputBytes == std::size_t{256} << 20);
}

TEST_CASE("readers: the CLI says p2v: error and exits 2 on every kind of bad input file") {
  // Each: a file p2v reads, the command that reads it, and what the error must say.
  const std::string big = write_tmp("big.json", R"({"levels":[{"name":"gpu","cardinality":1e400}]})");
  const std::string suite = write_tmp("suite.json", R"([{"system":"node=2,gpu=4","axes":[8],"reduce":["0"]}])");
  const std::string suite_big = write_tmp("suite_big.json", R"([{"system":"node=2,gpu=4","axes":[8],"reduce":[0],)"
                                                            R"("max_size":1e400}])");
  const std::string suite_int = write_tmp("suite_int.json", R"([{"system":"node=2,gpu=4","axes":[8],"reduce":[0],)"
                                                            R"("max_size":4294967300}])");
  const std::string suite_name = write_tmp("suite_name.json", R"([{"name":7,"system":"node=2,gpu=4","axes":[8],)"
                                                              R"("reduce":[0]}])");
  const std::string suite_unknown = write_tmp("suite_unknown.json", R"([{"system":"node=2,gpu=4","axes":[8],)"
                                                                    R"("reduce":[0],"maxsize":3}])");
  const std::string model = write_tmp("model.json", R"({"name":"m","layers":[{"name":"l","params":1e400}]})");
  const std::string synth = write_tmp("synth.json", R"({"format":"p2v-synth/2","max_size":1e400})");
  const std::string cert = write_tmp("cert.json", R"({"format":"p2v-certificate/1","max_size":1e400})");
  struct Case {
    std::string args, want;
  };
  const Case cases[] = {
      {"matrices --system " + big + " --axes 4", big + ": levels[0].cardinality: number 1e400 is out of range"},
      {"matrices --system /dev/zero --axes 4", "larger than 256 MiB, the limit for input files"},
      {"matrices --system /tmp --axes 4", "it is a directory"},
      {"prove --solver none --suite " + suite, suite + ": [0].reduce[0]: expected an integer, got \"0\""},
      {"prove --solver none --suite " + suite_big, suite_big + ": [0].max_size: number 1e400 is out of range"},
      {"prove --solver none --suite " + suite_int, suite_int + ": [0].max_size: 4294967300 is out of range"},
      {"prove --solver none --suite " + suite_name, suite_name + ": [0].name: expected a string, got 7"},
      {"prove --solver none --suite " + suite_unknown, suite_unknown + ": [0].maxsize: unknown field"},
      {"step --model " + model + " --system node=2,gpu=4 --axes 8", ": layers[0].params: number 1e400 is out of range"},
      {"step --model /dev/zero --system node=2,gpu=4 --axes 8", "larger than 256 MiB"},
      {"export --format torch --system node=2,gpu=4 --axes 8 --reduce 0 --program-file " + synth +
           " -o /tmp/p2v_readers_never.py",
       ": max_size: number 1e400 is out of range"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const Cli r = p2v_cli(c.args);
    CAPTURE(r.err);
    CHECK(r.code == 2);
    CHECK(r.err.rfind("p2v: error: ", 0) == 0);
    CHECK(r.err.find(c.want) != std::string::npos);
    CHECK(r.err.find("internal error") == std::string::npos);
  }
  // p2v check reports unreadable and malformed certificates as rejected (exit 1), never crashes.
  for (const std::string& f : {cert, std::string("/dev/zero"), std::string("/tmp")}) {
    CAPTURE(f);
    const Cli r = p2v_cli("check " + f);
    CHECK(r.code == 1);
    CHECK(r.out.find("REJECTED " + f) != std::string::npos);
  }
  // A path that does not exist is the user's error (exit 2), named before anything is checked.
  {
    const Cli r = p2v_cli("check " + cert + " /no/such/certificate.json");
    CHECK(r.code == 2);
    CHECK(r.err.find("p2v: error: certificate '/no/such/certificate.json': no such file or directory") !=
          std::string::npos);
    CHECK(r.out.find("REJECTED") == std::string::npos);
  }
  // A reason that quotes an ill-formed UTF-8 byte of the file is still printed as JSON.
  const std::string utf8 = write_tmp("utf8.json", "{\"format\":\"\xff\"}");
  const Cli j = p2v_cli("check --json " + utf8);
  CHECK(j.code == 1);
  CHECK(j.err.find("internal error") == std::string::npos);
  CHECK(nlohmann::json::parse(j.out)[0]["ok"] == false);
  std::remove(utf8.c_str());
  // Found while fuzzing the rule-certificate reader (by reading it): a rule certificate whose max_devices is 2000000000
  // made p2v check list every grid shape up to 2e9 devices (no end, growing memory).
  const std::string rule = write_tmp(
      "rule.json",
      R"({"format":"p2v-rule-certificate/1","rule":"adj-ag-rs","lhs":"[layout: ReduceScatter{a}] AllGather{a}",)"
      R"("rhs":"ReduceScatter{a}","status":"proved","max_devices":2000000000,"shapes":[]})");
  const Cli rc = p2v_cli("check " + rule);
  CHECK(rc.code == 1);
  CHECK(rc.out.find("REJECTED") != std::string::npos);
  std::remove(rule.c_str());
  for (const auto& f : {big, suite, suite_big, suite_int, suite_name, suite_unknown, model, synth, cert})
    std::remove(f.c_str());
}
