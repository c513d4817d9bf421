#include "p2v/engine/synth_format.hpp"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "json_util.hpp"
#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/shape.hpp"

namespace p2v::engine {

int check_format(ObjectReader& r, const std::string& family, int max_version) {
  const auto* f = r.json_opt("format");
  if (!f || !f->is_string())
    throw Error(fmt::format("{}: no \"format\" field; expected \"{}/{}\"", r.path(), family, max_version));
  const std::string s = f->get<std::string>();
  const std::string prefix = family + "/";
  if (s.rfind(prefix, 0) != 0)
    throw Error(fmt::format("{}: format \"{}\", expected \"{}/{}\"", r.path(), s, family, max_version));
  int v = 0;
  try {
    v = std::stoi(s.substr(prefix.size()));
  } catch (const std::exception&) {
  }
  if (v < 1 || v > max_version)
    throw Error(fmt::format("{}: format \"{}\" is not supported by this p2v (it reads {}/{})", r.path(), s, family,
                            max_version));
  return v;
}

namespace {

const char* master_name(MasterCollectives m) { return m == MasterCollectives::All ? "all" : "allreduce"; }

nlohmann::json to_json(const InstructionRecord& in) {
  nlohmann::json j{{"name", in.name},
                   {"collective", to_string(in.collective)},
                   {"slice", in.slice},
                   {"form", in.form}};
  if (in.pattern) {
    nlohmann::json vary = nlohmann::json::array();
    for (const auto& d : in.pattern->vary) vary.push_back({{"level", d.level}, {"axis", d.axis}, {"factor", d.factor}});
    j["vary"] = std::move(vary);
    j["master"] = in.pattern->master;
    j["group_size"] = in.pattern->group_size;
    j["num_groups"] = in.pattern->num_groups;
    j["pattern"] = in.pattern->text;
  }
  if (in.groups) j["groups"] = *in.groups;
  return j;
}

InstructionRecord instruction_from_json(const nlohmann::json& j, const std::string& path) {
  ObjectReader r(j, path);
  InstructionRecord in;
  in.name = r.get<std::string>("name");
  in.collective = parse_collective(r.get<std::string>("collective"));
  in.slice = r.get<std::string>("slice");
  in.form = r.get<std::string>("form");
  if (r.has("vary")) {
    PatternRecord p;
    const auto& vary = array_field(r, "vary");
    for (std::size_t i = 0; i < vary.size(); ++i) {
      ObjectReader d(vary[i], fmt::format("{}[{}]", r.at("vary"), i));
      p.vary.push_back({d.get<std::string>("level"), d.get<int>("axis"), d.get<int>("factor")});
      d.finish();
    }
    p.master = r.get<bool>("master");
    p.group_size = r.get<std::int64_t>("group_size");
    p.num_groups = r.get<std::int64_t>("num_groups");
    p.text = r.get<std::string>("pattern");
    in.pattern = std::move(p);
  }
  in.groups = r.get_opt<Groups>("groups");
  if (!in.pattern && !in.groups)
    throw Error(fmt::format("{}: an instruction needs a level pattern (\"vary\", ...) or explicit \"groups\"", path));
  r.finish();
  return in;
}

nlohmann::json to_json(const SynthResultRecord& res) {
  nlohmann::json j{{"matrix", res.matrix}, {"hierarchy", res.hierarchy}, {"hierarchy_names", res.hierarchy_names}};
  if (!res.shape.empty()) j["shape"] = res.shape;
  j["search_nodes"] = res.search_nodes;
  j["search_applied"] = res.search_applied;
  if (res.certificates) j["certificates"] = *res.certificates;
  nlohmann::json ins = nlohmann::json::array();
  for (const auto& in : res.instructions) ins.push_back(to_json(in));
  j["instructions"] = std::move(ins);
  return j;
}

SynthResultRecord result_from_json(const nlohmann::json& j, const std::string& path) {
  ObjectReader r(j, path);
  SynthResultRecord res;
  res.matrix = r.get<ParallelismMatrix>("matrix");
  res.hierarchy = r.get<std::vector<int>>("hierarchy");
  res.hierarchy_names = r.get<std::vector<std::string>>("hierarchy_names");
  if (res.hierarchy.size() != res.hierarchy_names.size())
    throw Error(fmt::format("{}: \"hierarchy\" has {} levels but \"hierarchy_names\" {}", path, res.hierarchy.size(),
                            res.hierarchy_names.size()));
  res.shape = r.get_or<std::string>("shape", "");
  res.search_nodes = r.get<std::int64_t>("search_nodes");
  res.search_applied = r.get<std::int64_t>("search_applied");
  res.certificates = r.get_opt<std::vector<std::string>>("certificates");
  const auto& ins = array_field(r, "instructions");
  for (std::size_t i = 0; i < ins.size(); ++i)
    res.instructions.push_back(instruction_from_json(ins[i], fmt::format("{}.instructions[{}]", path, i)));
  const auto& progs = array_field(r, "programs");
  for (std::size_t i = 0; i < progs.size(); ++i) {
    const std::string pp = fmt::format("{}.programs[{}]", path, i);
    ObjectReader p(progs[i], pp);
    ProgramRecord pr{p.get<std::string>("notation"), p.get<std::vector<int>>("steps")};
    if (p.get<std::size_t>("size") != pr.steps.size())
      throw Error(fmt::format("{}: \"size\" is {} but the program has {} steps", pp, p.get<std::size_t>("size"),
                              pr.steps.size()));
    for (int s : pr.steps)
      if (s < 0 || static_cast<std::size_t>(s) >= res.instructions.size())
        throw Error(fmt::format("{}: step {} is not an index into the {} instructions", pp, s, res.instructions.size()));
    std::string notation;
    for (std::size_t k = 0; k < pr.steps.size(); ++k)
      notation += (k ? " ; " : "") + res.instructions[static_cast<std::size_t>(pr.steps[k])].name;
    if (notation != pr.notation)
      throw Error(fmt::format("{}: \"notation\" \"{}\" does not match its steps ({})", pp, pr.notation, notation));
    p.finish();
    res.programs.push_back(std::move(pr));
  }
  r.finish();
  return res;
}

}  // namespace

std::vector<InstructionRecord> instruction_records(const SynthResult& r, const Shape* shape, bool lowered) {
  std::vector<InstructionRecord> out;
  out.reserve(r.instructions.size());
  for (const auto& in : r.instructions) {
    InstructionRecord rec{instruction_name(r.hierarchy, in), in.collective, r.hierarchy.names[in.grouping.slice],
                          form_name(r.hierarchy, in.grouping), std::nullopt, std::nullopt};
    if (shape) {
      const auto g = group_pattern(*shape, in.grouping.slice, in.grouping.form, in.grouping.e);
      PatternRecord p;
      for (const auto& d : g.vary) p.vary.push_back({shape->system_names[d.level], d.axis, d.factor});
      p.master = g.master;
      p.group_size = g.group_size;
      p.num_groups = g.num_groups;
      p.text = describe(g, *shape);
      rec.pattern = std::move(p);
      if (lowered) rec.groups = lower_pattern(g, *shape);
    } else {
      rec.groups = lower_groups(r.hierarchy, in.grouping.groups);
    }
    out.push_back(std::move(rec));
  }
  return out;
}

std::vector<ProgramRecord> program_records(const SynthResult& r) {
  std::vector<std::string> names;
  names.reserve(r.instructions.size());
  for (const auto& in : r.instructions) names.push_back(instruction_name(r.hierarchy, in));
  std::vector<ProgramRecord> out;
  out.reserve(r.programs.size());
  for (const auto& prog : r.programs) {
    ProgramRecord p;
    for (std::size_t k = 0; k < prog.size(); ++k) p.notation += (k ? " ; " : "") + names[static_cast<std::size_t>(prog[k])];
    p.steps.assign(prog.begin(), prog.end());
    out.push_back(std::move(p));
  }
  return out;
}

std::string programs_json(const std::vector<ProgramRecord>& programs) {
  // Written by hand (one line per program): notations hold no quotes or backslashes.
  std::string t = "[";
  for (std::size_t i = 0; i < programs.size(); ++i) {
    const auto& p = programs[i];
    t += i ? ",\n    {\"notation\": \"" : "\n    {\"notation\": \"";
    t += p.notation;
    t += "\", \"size\": " + std::to_string(p.steps.size()) + ", \"steps\": [";
    for (std::size_t k = 0; k < p.steps.size(); ++k) t += (k ? ", " : "") + std::to_string(p.steps[k]);
    t += "]}";
  }
  return t + "]";
}

SynthWriter::SynthWriter(std::FILE* out, const SynthHeader& h) : out_(out) {
  const nlohmann::json head{{"format", kSynthFormat},
                            {"system", system_json(h.system)},
                            {"axes", h.axes},
                            {"reduce", h.reduce},
                            {"hierarchy_kind", to_string(h.kind)},
                            {"max_size", h.max_size},
                            {"master_collectives", master_name(h.master)}};
  const std::string s = head.dump(1);
  fmt::print(out_, "{},\n \"results\": [", s.substr(0, s.size() - 2));
}

void SynthWriter::result(const SynthResultRecord& res, const std::string& programs) {
  const std::string rt = to_json(res).dump();
  fmt::print(out_, "{}\n  {},\n   \"programs\": {}}}", n_++ ? "," : "", rt.substr(0, rt.size() - 1), programs);
}

void SynthWriter::finish() { fmt::print(out_, "]\n}}\n"); }

SynthFile parse_synth_file(const std::string& text, const std::string& origin) {
  const nlohmann::json j = parse_json_object(text, origin);
  ObjectReader r(j, origin);
  check_format(r, "p2v-synth", 2);
  SynthFile f;
  f.header.system = parse_system_json(r.json("system").dump(), r.at("system"));
  f.header.axes = r.get<std::vector<int>>("axes");
  f.header.reduce = r.get<std::vector<int>>("reduce");
  f.header.kind = parse_hierarchy_kind(r.get<std::string>("hierarchy_kind"));
  f.header.max_size = r.get<int>("max_size");
  f.header.master = parse_master_collectives(r.get<std::string>("master_collectives"));
  const auto& results = array_field(r, "results");
  for (std::size_t i = 0; i < results.size(); ++i)
    f.results.push_back(result_from_json(results[i], fmt::format("{}: results[{}]", origin, i)));
  r.finish();
  return f;
}

std::optional<LoweredProgram> lowered_program(const SynthResultRecord& r, const ProgramRecord& p) {
  LoweredProgram out;
  for (int s : p.steps) {
    const auto& in = r.instructions.at(static_cast<std::size_t>(s));
    if (!in.groups) return std::nullopt;
    out.push_back({in.collective, *in.groups});
  }
  return out;
}

}  // namespace p2v::engine
