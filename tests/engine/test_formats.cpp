// The p2v-synth/2 format: what SynthWriter writes, parse_synth_file reads back unchanged, and the
// reader refuses anything else naming the field (docs/formats.md).
#include <doctest/doctest.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/run_format.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/synth_format.hpp"
#include "p2v/engine/system.hpp"

using namespace p2v;
using namespace p2v::engine;

namespace {

struct Written {
  std::string text;
  std::vector<SynthResultRecord> records;
};

// Writes the synthesis of every matrix of (system, axes, reduce) the way `p2v synth --json` does.
Written write_all(const std::string& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                  bool shape_path, bool lowered, int max_size = 3) {
  const System sys = parse_system_arg(system);
  SynthOptions opt;
  opt.max_size = max_size;
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = ::open_memstream(&buf, &len);
  REQUIRE(f != nullptr);
  Written w;
  {
    SynthWriter out(f, {sys, axes, reduce, HierarchyKind::ReductionAxes, opt.max_size, opt.master});
    for (const auto& x : enumerate_matrices(sys.cardinalities(), axes)) {
      SynthResultRecord rec;
      SynthResult r;
      std::optional<Shape> s;
      if (shape_path) {
        s = make_shape(sys.cardinalities(), sys.level_names(), x, reduce, HierarchyKind::ReductionAxes);
        r = synthesize_shape(*s, opt);
        rec.shape = s->signature();
        for (auto c : s->cards()) rec.hierarchy.push_back(static_cast<int>(c));
      } else {
        r = synthesize(Placement(sys.cardinalities(), axes, x, reduce), sys.level_names(), HierarchyKind::ReductionAxes,
                       opt);
        rec.hierarchy = r.hierarchy.cards;
      }
      rec.matrix = x;
      rec.hierarchy_names = r.hierarchy.names;
      rec.search_nodes = r.nodes;
      rec.search_applied = r.applied;
      rec.instructions = instruction_records(r, s ? &*s : nullptr, lowered);
      const auto progs = program_records(r);
      out.result(rec, programs_json(progs));
      rec.programs = progs;
      w.records.push_back(std::move(rec));
    }
    out.finish();
  }
  std::fclose(f);
  w.text.assign(buf, len);
  std::free(buf);
  return w;
}

std::string refusal(const std::string& text) {
  try {
    parse_synth_file(text, "t.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("p2v-synth/2 round trip: shape and concrete paths, with and without explicit groups") {
  for (const bool shape_path : {true, false})
    for (const bool lowered : {false, true}) {
      CAPTURE(shape_path);
      CAPTURE(lowered);
      const auto w = write_all("node=2,gpu=4", {2, 4}, {1}, shape_path, lowered);
      const SynthFile f = parse_synth_file(w.text, "t.json");
      CHECK(f.header.system.name == "node=2,gpu=4");
      CHECK(f.header.axes == std::vector<int>{2, 4});
      CHECK(f.header.reduce == std::vector<int>{1});
      CHECK(f.header.max_size == 3);
      REQUIRE(f.results.size() == w.records.size());
      for (std::size_t i = 0; i < w.records.size(); ++i) CHECK(f.results[i] == w.records[i]);
      // Explicit steps exactly when groups were written, and then equal to the engine's lowering.
      for (const auto& res : f.results)
        for (const auto& p : res.programs) CHECK(lowered_program(res, p).has_value() == (lowered || !shape_path));
    }
}

TEST_CASE("p2v-synth/2 explicit steps equal the engine's lowering") {
  const auto w = write_all("node=2,gpu=2", {4}, {0}, /*shape_path=*/false, false);
  const SynthFile f = parse_synth_file(w.text, "t.json");
  const System sys = parse_system_arg("node=2,gpu=2");
  const auto x = f.results.at(0).matrix;
  SynthOptions opt;
  opt.max_size = 3;
  const auto r =
      synthesize(Placement(sys.cardinalities(), {4}, x, {0}), sys.level_names(), HierarchyKind::ReductionAxes, opt);
  REQUIRE(f.results[0].programs.size() == r.programs.size());
  for (std::size_t i = 0; i < r.programs.size(); ++i)
    CHECK(*lowered_program(f.results[0], f.results[0].programs[i]) == lower(r, r.programs[i]));
}

TEST_CASE("p2v-synth/2 reader refuses malformed files, naming the field") {
  const auto w = write_all("node=2,gpu=2", {4}, {0}, true, false, 2);
  const nlohmann::json good = nlohmann::json::parse(w.text);
  auto edited = [&](auto&& edit) {
    nlohmann::json j = good;
    edit(j);
    return refusal(j.dump());
  };
  CHECK(refusal(w.text) == "(accepted)");
  CHECK(refusal("{").find("t.json: malformed JSON") != std::string::npos);
  CHECK(edited([](auto& j) { j.erase("format"); }).find("t.json: format: missing") != std::string::npos);
  CHECK(edited([](auto& j) { j["format"] = "p2v-synth/3"; }).find("\"p2v-synth/3\" is not a version this p2v reads") !=
        std::string::npos);
  CHECK(edited([](auto& j) { j["format"] = "p2v-simulate/1"; }).find("expected \"p2v-synth/2\"") != std::string::npos);
  CHECK(edited([](auto& j) { j["extra"] = 1; }).find("t.json: extra: unknown field") != std::string::npos);
  CHECK(edited([](auto& j) { j["results"][0].erase("matrix"); }).find("t.json: results[0].matrix: missing") !=
        std::string::npos);
  CHECK(edited([](auto& j) { j["results"][0]["instructions"][1]["collective"] = "AllSum"; }).find("AllSum") !=
        std::string::npos);
  CHECK(edited([](auto& j) {
          j["results"][0]["instructions"][0]["vary"][0]["levle"] = "x";
        }).find("t.json: results[0].instructions[0].vary[0].levle: unknown field") != std::string::npos);
  CHECK(edited([](auto& j) {
          j["results"][0]["programs"][0]["steps"] = {999};
        }).find("t.json: results[0].programs[0]: step 999 is not an index") != std::string::npos);
  CHECK(edited([](auto& j) {
          j["results"][0]["programs"][0]["size"] = 7;
        }).find("results[0].programs[0].size: 7, but the program has 1 steps") != std::string::npos);
  CHECK(edited([](auto& j) {
          j["results"][0]["programs"][1]["steps"] = {2, 1};
        }).find("does not match its steps") != std::string::npos);
  CHECK(edited([](auto& j) { j["axes"] = "4"; }).find("t.json: axes: expected an array") != std::string::npos);
}

TEST_CASE("p2v-run/1 round trip, and the strict reader refuses what it does not know") {
  RunFile f;
  f.system = "fig2a";
  f.levels = {2, 8};
  f.ranks = 16;
  f.backend = "threads";
  f.axes = {4, 4};
  f.reduce = {1};
  f.dtype = "float32";
  f.bytes = 4096;
  f.iters = 3;
  f.warmup = 1;
  f.verified = true;
  RunTiming step{"ReduceScatter", "4 groups of 4", "0-3|4-7|8-11|12-15", 4, 4, 4096, 1e-5, 2e-5, 3e-5, 0.2, 0.15};
  RunTiming total = step;
  total.what = "total";
  RunTiming base = step;
  base.what = "AllReduce";
  base.group_list.clear();  // written without the list: still read
  f.programs.push_back(
      {"ReduceScatter@(cpu,Inside)", {{1, 2, 1, 2}, {1, 1, 2, 2}}, 4096, true, "", {step}, total, base});
  f.programs.push_back({"AllReduce",
                        {{1, 2, 1, 2}, {1, 1, 2, 2}},
                        4096,
                        false,
                        "rank 3: chunk 2 is 7, expected 8",
                        {},
                        std::nullopt,
                        std::nullopt});
  const nlohmann::json j = to_json(f);
  CHECK(j["format"] == "p2v-run/1");
  CHECK(j["programs"][0]["steps"][0]["busbw_GBps"] == 0.15);
  CHECK(!j["programs"][0]["baseline"].contains("group_list"));
  CHECK(parse_run_file(j.dump(), "run.json") == f);
  auto refused = [&](auto&& edit) {
    nlohmann::json e = j;
    edit(e);
    try {
      parse_run_file(e.dump(), "run.json");
    } catch (const p2v::Error& x) {
      return std::string(x.what());
    }
    return std::string("(accepted)");
  };
  CHECK(refused([](auto& e) { e["format"] = "p2v-run/2"; }).find("not a version this p2v reads") != std::string::npos);
  CHECK(refused([](auto& e) { e["format"] = "p2v-synth/2"; }).find("expected \"p2v-run/1\"") != std::string::npos);
  CHECK(refused([](auto& e) {
          e["programs"][0]["steps"][0]["median"] = 1;
        }).find("run.json: programs[0].steps[0].median: unknown field") != std::string::npos);
  CHECK(refused([](auto& e) { e["programs"][0].erase("total"); }).find("run.json: programs[0].total: missing") !=
        std::string::npos);
  CHECK(refused([](auto& e) { e["programs"][1].erase("failure"); }).find("programs[1].failure: missing") !=
        std::string::npos);
  CHECK(refused([](auto& e) { e["ranks"] = "16"; }).find("run.json: ranks: expected") != std::string::npos);
  // The bandwidths are only ever written with their unit in the name: the _gbps spelling is unknown here.
  CHECK(refused([](auto& e) {
          auto& t = e["programs"][0]["steps"][0];
          t["busbw_gbps"] = t["busbw_GBps"];
          t.erase("busbw_GBps");
        }).find("busbw_GBps: missing") != std::string::npos);
}
