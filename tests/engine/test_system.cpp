#include <doctest/doctest.h>

#include <map>

#include <string>

#include "p2v/engine/dtype.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/engine/units.hpp"

using namespace p2v::engine;

namespace {
std::string error_of(const std::string& json) {
  try {
    parse_system_json(json, "t.json");
  } catch (const p2v::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("bundled system files load with the docs/model.md §8 bandwidths") {
  const std::string dir = std::string(P2V_SOURCE_DIR) + "/examples/systems/";
  auto f = load_system_file(dir + "fig2a.json");
  CHECK(f.cardinalities() == std::vector<int>{1, 2, 2, 4});
  CHECK(f.num_devices() == 16);
  CHECK_FALSE(f.root_implied());
  auto a = load_system_file(dir + "a100-4node.json");
  CHECK(a.cardinalities() == std::vector<int>{4, 16});
  CHECK(a.root_implied());
  CHECK(a.hierarchy_cardinalities() == std::vector<int>{1, 4, 16});
  CHECK(a.hierarchy_names() == std::vector<std::string>{"root", "node", "gpu"});
  REQUIRE(a.levels[0].interconnect);
  CHECK(a.levels[0].interconnect->kind == LinkKind::Nic);
  CHECK(a.levels[0].interconnect->bandwidth_gbps == 8);
  CHECK(a.levels[1].interconnect->bandwidth_gbps == 270);
  auto v = load_system_file(dir + "v100-2node.json");
  CHECK(v.cardinalities() == std::vector<int>{2, 8});
  CHECK(v.levels[1].interconnect->bandwidth_gbps == 135);
  CHECK(load_system_file(dir + "a100-2node.json").num_devices() == 32);
  CHECK(load_system_file(dir + "v100-4node.json").num_devices() == 32);
}

TEST_CASE("system JSON round-trips") {
  auto a = load_system_file(std::string(P2V_SOURCE_DIR) + "/examples/systems/a100-4node.json");
  auto b = parse_system_json(system_to_json(a), "rt");
  CHECK(b.cardinalities() == a.cardinalities());
  CHECK(b.levels[0].interconnect->latency_us == a.levels[0].interconnect->latency_us);
}

TEST_CASE("inline systems") {
  auto s = parse_system_inline("rack=1,server=2,cpu=2,gpu=4");
  CHECK(s.cardinalities() == std::vector<int>{1, 2, 2, 4});
  CHECK(parse_system_arg("node=4,gpu=16").num_devices() == 64);
  CHECK_THROWS_WITH_AS(parse_system_inline("node=4,gpu"), doctest::Contains("not name=cardinality"), p2v::Error);
  CHECK_THROWS_WITH_AS(parse_system_inline("node=0"), doctest::Contains("between 1 and"), p2v::Error);
  CHECK_THROWS_WITH_AS(parse_system_inline("node=x"), doctest::Contains("not an integer"), p2v::Error);
  CHECK_THROWS_WITH_AS(parse_system_inline("a=2,a=2"), doctest::Contains("duplicate level name"), p2v::Error);
  CHECK_THROWS_WITH_AS(parse_system_arg("/no/such/file.json"), doctest::Contains("no such file"), p2v::Error);
}

TEST_CASE("bad system files name the field and the problem") {
  CHECK(error_of("{\"levels\": [").find("malformed JSON") != std::string::npos);
  CHECK(error_of("[]").find("top level must be a JSON object") != std::string::npos);
  CHECK(error_of("{}").find("levels: missing") != std::string::npos);
  CHECK(error_of("{\"levels\": []}").find("at least one level") != std::string::npos);
  CHECK(error_of("{\"levels\": [{\"name\":\"gpu\",\"cardinality\":-3}]}").find("levels[0].cardinality") !=
        std::string::npos);
  CHECK(error_of("{\"levels\": [{\"name\":\"gpu\",\"cardinality\":2.5}]}")
            .find("levels[0].cardinality: expected an integer, got 2.5") != std::string::npos);
  CHECK(error_of("{\"levels\": [{\"cardinality\":2}]}").find("levels[0].name") != std::string::npos);
  CHECK(error_of("{\"levels\": [{\"name\":\"n\",\"cardinality\":2,\"interconnect\":{\"kind\":\"wifi\","
                 "\"bandwidth_gbps\":1,\"latency_us\":1}}]}")
            .find("unknown interconnect kind 'wifi'") != std::string::npos);
  CHECK(error_of("{\"levels\": [{\"name\":\"n\",\"cardinality\":2,\"interconnect\":{\"kind\":\"nic\","
                 "\"bandwidth_gbps\":0,\"latency_us\":1}}]}")
            .find("levels[0].interconnect.bandwidth_gbps") != std::string::npos);
  CHECK(error_of("{\"levels\": [{\"name\":\"n\",\"cardinality\":2}], \"extra\": 1}")
            .find("extra: unknown field (this format has description, device, levels, name, nccl, topology here)") !=
        std::string::npos);
  CHECK(error_of("{\"levels\": [{\"name\":\"a\",\"cardinality\":2048},{\"name\":\"b\",\"cardinality\":2048}]}")
            .find("more than") != std::string::npos);
  CHECK(error_of("{\"levels\": [{\"name\":\"gpu\",\"cardinality\":4}]}").empty());
}

TEST_CASE("system files: device peaks per dtype and bandwidths that name their unit, read strictly") {
  const System s = parse_system_json(
      R"({"levels": [{"name": "gpu", "cardinality": 2, "interconnect": {"kind": "switch", "bandwidth_GBps": 300,
          "latency_us": 1, "flow_bandwidth_GBps": 100}}],
          "device": {"name": "X", "peak_tflops": 10, "peak_tflops_by_dtype": {"float32": 5, "bfloat16": 10},
                     "source": "a datasheet"}})",
      "d.json");
  CHECK(s.levels[0].interconnect->bandwidth_gbps == 300);
  CHECK(s.levels[0].interconnect->flow_bandwidth_gbps == 100);
  // dtype keys in any spelling, stored under the canonical short name.
  CHECK(s.device->peak_tflops_by_dtype == std::map<std::string, double>{{"f32", 5}, {"bf16", 10}});
  // Written and read back: the same system.
  const System t = parse_system_json(system_to_json(s), "t.json");
  CHECK(t.device->peak_tflops_by_dtype == s.device->peak_tflops_by_dtype);
  CHECK(t.device->source == "a datasheet");
  CHECK(t.levels[0].interconnect->bandwidth_gbps == 300);
  CHECK(error_of(R"({"levels": [{"name": "g", "cardinality": 2, "interconnect": {"kind": "nic", "bandwidth_GBps": 1,
                  "bandwidth_gbps": 1, "latency_us": 1}}]})")
            .find("levels[0].interconnect.bandwidth_gbps: give \"bandwidth_GBps\" or its deprecated name") !=
        std::string::npos);
  CHECK(error_of(R"({"levels": [{"name": "g", "cardinality": 2}], "device": {"peak_tflops_by_dtype": {"f33": 1}}})")
            .find("device.peak_tflops_by_dtype: dtype 'f33': unknown element type") != std::string::npos);
  CHECK(error_of(R"({"levels": [{"name": "g", "cardinality": 2}], "device": {"peak_tflops_by_dtype": {"f32": -1}}})")
            .find("device.peak_tflops_by_dtype.f32: must be a positive number") != std::string::npos);
}

TEST_CASE("one dtype parser: every spelling, one canonical name") {
  using p2v::engine::Dtype;
  using p2v::engine::parse_dtype;
  for (const char* s : {"f32", "float32", "float", "fp32", "F32", "Float"}) CHECK(parse_dtype(s) == Dtype::F32);
  for (const char* s : {"i32", "int32", "int"}) CHECK(parse_dtype(s) == Dtype::I32);
  for (const char* s : {"bf16", "bfloat16"}) CHECK(parse_dtype(s) == Dtype::BF16);
  CHECK(p2v::engine::dtype_info(parse_dtype("double")).bytes == 8);
  CHECK_THROWS_WITH_AS(parse_dtype("f33", "--dtype"), doctest::Contains("--dtype 'f33': unknown element type"),
                       p2v::Error);
}

TEST_CASE("one size parser: binary and decimal units, clear errors") {
  using p2v::engine::parse_size;
  CHECK(parse_size("1M", "--bytes") == 1048576.0);
  CHECK(parse_size("64MiB", "--bytes") == 64.0 * 1048576);
  CHECK(parse_size("1e9", "--bytes") == 1e9);
  CHECK(parse_size("8GB", "--bytes") == 8e9);
  CHECK(parse_size("2 KiB", "--bytes") == 2048.0);
  CHECK(parse_size("3k", "--bytes") == 3072.0);
  CHECK_THROWS_WITH_AS(parse_size("1Q", "--bytes"), doctest::Contains("unknown unit 'Q'"), p2v::Error);
  CHECK_THROWS_WITH_AS(parse_size("-5", "--bytes"), doctest::Contains("must be positive"), p2v::Error);
  CHECK_THROWS_WITH_AS(parse_size("lots", "--memory"), doctest::Contains("--memory 'lots'"), p2v::Error);
  CHECK_THROWS_AS(parse_size("2T", "--bytes", 1e12), p2v::Error);
}
