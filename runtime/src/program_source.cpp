#include "p2v/runtime/program_source.hpp"

#include <fmt/core.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "p2v/engine/error.hpp"
#include "p2v/engine/notation.hpp"

namespace p2v::runtime {

engine::LoweredProgram resolve_program(const engine::SynthesisHierarchy& h, const std::string& notation) {
  return engine::resolve_program(h, notation);
}

engine::SynthesisHierarchy program_hierarchy(const engine::System& sys, const engine::Placement& p,
                                             engine::HierarchyKind kind) {
  const std::vector<std::string> names = sys.level_names();
  return engine::make_hierarchy(p, names, kind);
}

ProgramFile load_program_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error(fmt::format("--program-file '{}': cannot open it", path));
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  ProgramFile pf;
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    pf.is_json = true;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
      throw Error(fmt::format("--program-file '{}': not valid JSON: {}", path, e.what()));
    }
    try {
      if (j.contains("system")) {
        if (j["system"].is_object()) pf.system = engine::parse_system_json(j["system"].dump(), path);
        else if (j["system"].is_string()) pf.system = engine::parse_system_arg(j["system"].get<std::string>());
      }
      if (j.contains("hierarchy_kind") && j["hierarchy_kind"].is_string())
        pf.hierarchy_kind = j["hierarchy_kind"].get<std::string>();
      if (j.contains("axes")) pf.axes = j["axes"].get<std::vector<int>>();
      if (j.contains("reduce")) pf.reduce = j["reduce"].get<std::vector<int>>();
      if (!j.contains("results") || !j["results"].is_array())
        throw Error(fmt::format("--program-file '{}': no \"results\" array (expected the --json output of "
                                "p2v synth or p2v simulate)", path));
      for (const auto& r : j["results"]) {
        ProgramSet set;
        if (r.contains("matrix")) set.matrix = r["matrix"].get<engine::ParallelismMatrix>();
        if (r.contains("programs"))
          for (const auto& pj : r["programs"]) {
            NamedProgram np;
            // p2v synth: "notation" and steps with lowered "groups"; p2v simulate: "program" and
            // steps with a group count, so the notation is resolved instead.
            if (pj.contains("notation") && pj["notation"].is_string()) np.notation = pj["notation"].get<std::string>();
            else if (pj.contains("program") && pj["program"].is_string()) np.notation = pj["program"].get<std::string>();
            if (pj.contains("steps") && pj["steps"].is_array())
              for (const auto& sj : pj["steps"]) {
                if (!sj.contains("groups") || !sj["groups"].is_array() || !sj.contains("collective")) {
                  np.lowered.clear();
                  break;
                }
                np.lowered.push_back({engine::parse_collective(sj.at("collective").get<std::string>()),
                                      sj["groups"].get<engine::Groups>()});
              }
            if (np.notation.empty() && np.lowered.empty())
              throw Error(fmt::format("--program-file '{}': a program has neither notation nor steps", path));
            set.programs.push_back(std::move(np));
          }
        pf.sets.push_back(std::move(set));
      }
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(fmt::format("--program-file '{}': unexpected JSON content: {}", path, e.what()));
    }
    return pf;
  }
  ProgramSet set;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    NamedProgram np;
    np.notation = line.substr(line.find_first_not_of(" \t"));
    while (!np.notation.empty() && std::isspace(static_cast<unsigned char>(np.notation.back()))) np.notation.pop_back();
    set.programs.push_back(std::move(np));
  }
  if (set.programs.empty()) throw Error(fmt::format("--program-file '{}': no programs in it", path));
  pf.sets.push_back(std::move(set));
  return pf;
}

}  // namespace p2v::runtime
