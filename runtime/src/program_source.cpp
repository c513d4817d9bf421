#include "p2v/runtime/program_source.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/notation.hpp"
#include "p2v/engine/synth_format.hpp"
#include "p2v/sim/simulate.hpp"

namespace p2v::runtime {

engine::LoweredProgram resolve_program(const engine::SynthesisHierarchy& h, const std::string& notation) {
  return engine::resolve_program(h, notation);
}

engine::SynthesisHierarchy program_hierarchy(const engine::System& sys, const engine::Placement& p,
                                             engine::HierarchyKind kind) {
  const std::vector<std::string> names = sys.level_names();
  return engine::make_hierarchy(p, names, kind);
}

namespace {

// `p2v synth --json`: notation, and explicit steps when the file lists groups (--lowered).
ProgramFile from_synth(const engine::SynthFile& f) {
  ProgramFile pf;
  pf.is_json = true;
  pf.system = f.header.system;
  pf.axes = f.header.axes;
  pf.reduce = f.header.reduce;
  pf.hierarchy_kind = engine::to_string(f.header.kind);
  for (const auto& r : f.results) {
    ProgramSet set;
    set.matrix = r.matrix;
    for (const auto& p : r.programs) {
      auto lowered = engine::lowered_program(r, p);
      set.programs.push_back({p.notation, lowered ? std::move(*lowered) : engine::LoweredProgram{}});
    }
    pf.sets.push_back(std::move(set));
  }
  return pf;
}

// `p2v simulate --json`: the ranked programs' notation, resolved on each placement by the caller.
ProgramFile from_simulate(const sim::SimulateReport& rep) {
  ProgramFile pf;
  pf.is_json = true;
  pf.system = rep.system;
  pf.axes = rep.axes;
  pf.reduce = rep.reduce;
  pf.ranked = true;
  for (const auto& m : rep.results) {
    ProgramSet set;
    set.matrix = m.matrix;
    auto ranked = m.programs;  // best first: the order --top takes them in
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.rank < y.rank; });
    for (const auto& p : ranked) set.programs.push_back({p.program, {}});
    pf.sets.push_back(std::move(set));
  }
  return pf;
}

}  // namespace

ProgramFile load_program_file(const std::string& path) {
  const std::string origin = "--program-file '" + path + "'";
  const std::string text = engine::read_text_file(path, "--program-file");
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    // JSON: the format field says whose output it is; each format has its strict reader.
    const nlohmann::json j = engine::parse_json_object(text, origin);
    const auto f = j.find("format");
    const std::string format = f != j.end() && f->is_string() ? f->get<std::string>() : "";
    if (format.rfind("p2v-synth/", 0) == 0) return from_synth(engine::parse_synth_file(text, origin));
    if (format.rfind(std::string(sim::kSimulateFormat) + "/", 0) == 0)
      return from_simulate(sim::simulate_report_from_json(j, origin));
    throw Error(
        fmt::format("{}: format \"{}\": expected the --json output of p2v synth (p2v-synth/2) or p2v "
                    "simulate ({}/{}), or a text file with one program per line",
                    origin, format, sim::kSimulateFormat, sim::kSimulateVersion));
  }
  ProgramFile pf;
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
