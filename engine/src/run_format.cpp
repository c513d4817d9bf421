#include "p2v/engine/run_format.hpp"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/json_util.hpp"

namespace p2v::engine {

using nlohmann::json;

json to_json(const RunTiming& t) {
  json j{{"what", t.what},
         {"groups", t.groups},
         {"group_size", t.group_size},
         {"num_groups", t.num_groups},
         {"bytes", t.bytes},
         {"min_s", t.min_s},
         {"median_s", t.median_s},
         {"max_s", t.max_s},
         {"algbw_GBps", t.algbw_GBps},
         {"busbw_GBps", t.busbw_GBps}};
  if (!t.group_list.empty()) j["group_list"] = t.group_list;
  return j;
}

json to_json(const RunProgram& p) {
  json j{{"program", p.program}, {"matrix", p.matrix}, {"bytes", p.bytes}, {"ok", p.ok}};
  if (!p.ok) {
    j["failure"] = p.failure;
    return j;
  }
  j["steps"] = json::array();
  for (const auto& t : p.steps) j["steps"].push_back(to_json(t));
  if (p.total) j["total"] = to_json(*p.total);
  if (p.baseline) j["baseline"] = to_json(*p.baseline);
  return j;
}

json to_json(const RunFile& f) {
  json j{{"format", fmt::format("{}/{}", kRunFormat, f.version)},
         {"system", f.system},
         {"levels", f.levels},
         {"ranks", f.ranks},
         {"backend", f.backend},
         {"axes", f.axes},
         {"reduce", f.reduce},
         {"dtype", f.dtype},
         {"bytes", f.bytes},
         {"iters", f.iters},
         {"warmup", f.warmup},
         {"verified", f.verified},
         {"programs", json::array()}};
  for (const auto& p : f.programs) j["programs"].push_back(to_json(p));
  return j;
}

namespace {

using json_read::At;

RunTiming timing_from(const At& at) {
  json_read::Object o(at);
  RunTiming t;
  t.what = o["what"].string();
  t.groups = o["groups"].string();
  if (const auto g = o.optional("group_list")) t.group_list = g->string();
  t.group_size = o["group_size"].int32();
  t.num_groups = o["num_groups"].int32();
  t.bytes = o["bytes"].integer();
  t.min_s = o["min_s"].number();
  t.median_s = o["median_s"].number();
  t.max_s = o["max_s"].number();
  t.algbw_GBps = o["algbw_GBps"].number();
  t.busbw_GBps = o["busbw_GBps"].number();
  o.finish();
  return t;
}

RunProgram program_from(const At& at) {
  json_read::Object o(at);
  RunProgram p;
  p.program = o["program"].string();
  p.matrix = o["matrix"].int_rows();
  p.bytes = o["bytes"].integer();
  p.ok = o["ok"].boolean();
  if (!p.ok) {
    p.failure = o["failure"].string();
  } else {
    o["steps"].each([&](const At& s) { p.steps.push_back(timing_from(s)); });
    p.total = timing_from(o["total"]);
    if (const auto b = o.optional("baseline")) p.baseline = timing_from(*b);
  }
  o.finish();
  return p;
}

}  // namespace

RunFile run_file_from_json(const json& j, const std::string& origin) {
  const At root(j, origin, "");
  json_read::Object o(root);
  RunFile f;
  f.version = json_read::check_format(o, kRunFormat, kRunVersion);
  f.system = o["system"].string();
  f.levels = o["levels"].ints();
  f.ranks = o["ranks"].integer();
  f.backend = o["backend"].string();
  f.axes = o["axes"].ints();
  f.reduce = o["reduce"].ints();
  f.dtype = o["dtype"].string();
  f.bytes = o["bytes"].integer();
  f.iters = o["iters"].int32();
  f.warmup = o["warmup"].int32();
  f.verified = o["verified"].boolean();
  o["programs"].each([&](const At& p) { f.programs.push_back(program_from(p)); });
  o.finish();
  return f;
}

RunFile parse_run_file(const std::string& text, const std::string& origin) {
  return run_file_from_json(parse_json_object(text, origin), origin);
}

}  // namespace p2v::engine
