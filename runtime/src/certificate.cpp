#include "p2v/runtime/certificate.hpp"

#include <fmt/core.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "p2v/engine/error.hpp"
#ifdef P2V_HAVE_CHECKER
#include "p2v/checker/checker.hpp"
#endif

namespace p2v::runtime {

namespace {

// Runs the independent checker; empty string = accepted.
std::string run_checker(const std::string& path, const std::string& text);

}  // namespace

Certificate load_certificate(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error(fmt::format("--certificate '{}': cannot open it", path));
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  Certificate c;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    c.reason = fmt::format("not valid JSON: {}", e.what());
    return c;
  }
  try {
    if (j.contains("system")) {
      if (j["system"].is_object())
        c.system = engine::parse_system_json(j["system"].dump(), path);
      else if (j["system"].is_string())
        c.system = engine::parse_system_arg(j["system"].get<std::string>());
    }
    if (j.contains("axes")) c.axes = j["axes"].get<std::vector<int>>();
    for (const char* k : {"reduce", "reduction_axes"})
      if (j.contains(k)) c.reduce = j[k].get<std::vector<int>>();
    if (j.contains("matrix")) c.matrix = j["matrix"].get<engine::ParallelismMatrix>();
    const nlohmann::json& prog = j.contains("program") ? j["program"] : j;
    if (prog.is_string())
      c.notation = prog.get<std::string>();
    else if (prog.is_object() && prog.contains("notation"))
      c.notation = prog["notation"].get<std::string>();
    else if (j.contains("notation"))
      c.notation = j["notation"].get<std::string>();
    const nlohmann::json* steps = nullptr;
    for (const nlohmann::json* o : std::initializer_list<const nlohmann::json*>{&j, &prog})
      if (o->is_object())
        for (const char* k : {"lowered", "steps"})
          if (!steps && o->contains(k) && (*o)[k].is_array()) steps = &(*o)[k];
    if (steps)
      for (const auto& s : *steps) {
        if (!s.is_object() || !s.contains("collective") || !s.contains("groups")) {
          c.lowered.clear();
          break;
        }
        c.lowered.push_back(
            {engine::parse_collective(s["collective"].get<std::string>()), s["groups"].get<engine::Groups>()});
      }
  } catch (const std::exception& e) {
    c.reason = fmt::format("unexpected content: {}", e.what());
    return c;
  }
  c.reason = run_checker(path, text);
  c.checked = c.reason.empty();
  return c;
}

#ifdef P2V_HAVE_CHECKER

bool checker_available() { return true; }

namespace {
std::string run_checker(const std::string&, const std::string& text) {
  const auto v = p2v::checker::check_certificate(text);
  if (v.ok) return {};
  return v.reason.empty() ? std::string("rejected") : v.reason;
}
}  // namespace

#else

bool checker_available() { return false; }

namespace {
std::string run_checker(const std::string&, const std::string&) {
  return "this p2v was built without the certificate checker (proofs/checker)";
}
}  // namespace

#endif

}  // namespace p2v::runtime
