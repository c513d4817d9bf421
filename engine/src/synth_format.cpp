#include "p2v/engine/synth_format.hpp"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/shape.hpp"

namespace p2v::engine {

namespace {

nlohmann::json to_json(const InstructionRecord& in) {
  nlohmann::json j{{"name", in.name}, {"collective", to_string(in.collective)}, {"slice", in.slice}, {"form", in.form}};
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

using json_read::At;
using json_read::Object;

Groups groups_from_json(const At& at) {
  Groups g;
  at.each([&](const At& grp) { g.push_back(grp.ints()); });
  return g;
}

InstructionRecord instruction_from_json(const At& at) {
  Object o(at);
  InstructionRecord in;
  in.name = o["name"].string();
  in.collective = json_read::collective(o["collective"]);
  in.slice = o["slice"].string();
  in.form = o["form"].string();
  if (const auto vary = o.optional("vary")) {
    PatternRecord p;
    vary->each([&](const At& d) {
      Object od(d);
      p.vary.push_back({od["level"].string(), od["axis"].int32(), od["factor"].int32()});
      od.finish();
    });
    p.master = o["master"].boolean();
    p.group_size = o["group_size"].integer();
    p.num_groups = o["num_groups"].integer();
    p.text = o["pattern"].string();
    in.pattern = std::move(p);
  }
  if (const auto g = o.optional("groups")) in.groups = groups_from_json(*g);
  if (!in.pattern && !in.groups) at.fail("an instruction needs a level pattern (\"vary\", ...) or explicit \"groups\"");
  o.finish();
  return in;
}

ProgramRecord program_from_json(const At& at, const std::vector<InstructionRecord>& instructions) {
  Object o(at);
  ProgramRecord pr{o["notation"].string(), o["steps"].ints()};
  const At size = o["size"];
  if (size.integer() != static_cast<std::int64_t>(pr.steps.size()))
    size.fail(fmt::format("{}, but the program has {} steps", size.integer(), pr.steps.size()));
  std::string notation;
  for (std::size_t k = 0; k < pr.steps.size(); ++k) {
    const int s = pr.steps[k];
    if (s < 0 || static_cast<std::size_t>(s) >= instructions.size())
      at.fail(fmt::format("step {} is not an index into the {} instructions", s, instructions.size()));
    notation += (k ? " ; " : "") + instructions[static_cast<std::size_t>(s)].name;
  }
  if (notation != pr.notation)
    at.fail(fmt::format("\"notation\" \"{}\" does not match its steps ({})", pr.notation, notation));
  o.finish();
  return pr;
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

SynthResultRecord result_from_json(const At& at) {
  Object o(at);
  SynthResultRecord res;
  res.matrix = o["matrix"].int_rows();
  res.hierarchy = o["hierarchy"].ints();
  const At names = o["hierarchy_names"];
  names.each([&](const At& n) { res.hierarchy_names.push_back(n.string()); });
  if (res.hierarchy.size() != res.hierarchy_names.size())
    names.fail(
        fmt::format("{} names for the {} levels of \"hierarchy\"", res.hierarchy_names.size(), res.hierarchy.size()));
  if (const auto sh = o.optional("shape")) res.shape = sh->string();
  res.search_nodes = o["search_nodes"].integer();
  res.search_applied = o["search_applied"].integer();
  if (const auto c = o.optional("certificates")) {
    res.certificates.emplace();
    c->each([&](const At& f) { res.certificates->push_back(f.string()); });
  }
  o["instructions"].each([&](const At& in) { res.instructions.push_back(instruction_from_json(in)); });
  o["programs"].each([&](const At& p) { res.programs.push_back(program_from_json(p, res.instructions)); });
  o.finish();
  return res;
}

}  // namespace

std::vector<InstructionRecord> instruction_records(const SynthResult& r, const Shape* shape, bool lowered) {
  std::vector<InstructionRecord> out;
  out.reserve(r.instructions.size());
  for (const auto& in : r.instructions) {
    InstructionRecord rec{instruction_name(r.hierarchy, in),   in.collective, r.hierarchy.names[in.grouping.slice],
                          form_name(r.hierarchy, in.grouping), std::nullopt,  std::nullopt};
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
    for (std::size_t k = 0; k < prog.size(); ++k)
      p.notation += (k ? " ; " : "") + names[static_cast<std::size_t>(prog[k])];
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
                            {"master_collectives", to_string(h.master)}};
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
  Object o(At(j, origin, ""));
  json_read::check_format(o, "p2v-synth", 2);
  SynthFile f;
  f.header.system = system_from_json(o["system"].raw(), origin + ": system");
  f.header.axes = o["axes"].ints();
  f.header.reduce = o["reduce"].ints();
  f.header.kind = json_read::hierarchy_kind(o["hierarchy_kind"]);
  f.header.master = json_read::master_collectives(o["master_collectives"]);
  f.header.max_size = o["max_size"].int32();
  o["results"].each([&](const At& r) { f.results.push_back(result_from_json(r)); });
  o.finish();
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
