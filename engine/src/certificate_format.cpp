// The certificate formats (certificate_format.hpp): to_json and the strict readers.
#include "p2v/engine/certificate_format.hpp"

#include <nlohmann/json.hpp>

#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/json_reader.hpp"

namespace p2v::engine {

using json_read::At;
using json_read::Object;
using nlohmann::json;

namespace {

json to_json(const SolverFact& f) {
  json j{{"solver", f.solver}, {"version", f.version}, {"settings", f.settings}, {"bound", f.bound},
         {"method", f.method}, {"query", f.query},     {"result", f.result}};
  if (f.seconds) j["seconds"] = *f.seconds;
  if (f.bound_seconds) j["bound_seconds"] = *f.bound_seconds;
  if (f.programs) j["programs"] = *f.programs;
  if (f.states) j["states"] = *f.states;
  if (f.steps) j["steps"] = *f.steps;
  if (f.conclusion) j["conclusion"] = *f.conclusion;
  return j;
}

json to_json(const std::vector<SolverFact>& fs) {
  json a = json::array();
  for (const auto& f : fs) a.push_back(to_json(f));
  return a;
}

json to_json(const CertificateFacts& f) {
  json j{{"enumerator", {{"found", true}, {"programs", f.enumerator_programs}, {"nodes", f.enumerator_nodes}}},
         {"found_by", to_json(f.found_by)},
         {"shortest", f.shortest},
         {"minimal", f.minimal},
         {"no_shorter", to_json(f.no_shorter)},
         {"complete_up_to", f.complete_up_to},
         {"complete", to_json(f.complete)}};
  if (!f.proofs.empty()) j["proofs"] = f.proofs;
  return j;
}

SolverFact fact_from_json(const At& at) {
  Object o(at);
  SolverFact f;
  f.solver = o["solver"].string();
  f.version = o["version"].string();
  f.settings = o["settings"].string();
  f.bound = o["bound"].int32();
  f.method = o["method"].string();
  if (f.method != "enumerate" && f.method != "confirm" && f.method != "closure" && f.method != "symbolic-closure")
    o.at().fail("method: expected enumerate, confirm, closure or symbolic-closure, got \"" + f.method + "\"");
  f.query = o["query"].string();
  f.result = o["result"].string();
  if (auto v = o.optional("seconds")) f.seconds = v->number();
  if (auto v = o.optional("bound_seconds")) f.bound_seconds = v->number();
  if (auto v = o.optional("programs")) f.programs = v->integer();
  if (auto v = o.optional("states")) f.states = v->integer();
  if (auto v = o.optional("steps")) f.steps = v->integer();
  if (auto v = o.optional("conclusion")) f.conclusion = v->string();
  o.finish();
  return f;
}

std::vector<SolverFact> facts_from_json(const At& at) {
  std::vector<SolverFact> out;
  at.each([&](const At& f) { out.push_back(fact_from_json(f)); });
  return out;
}

CertificateFacts certificate_facts_from_json(const At& at) {
  Object o(at);
  CertificateFacts f;
  {
    Object e(o["enumerator"]);
    if (!e["found"].boolean()) e.at().fail("found: a certificate is only written for a program the enumerator found");
    f.enumerator_programs = e["programs"].integer();
    f.enumerator_nodes = e["nodes"].integer();
    e.finish();
  }
  f.found_by = facts_from_json(o["found_by"]);
  f.shortest = o["shortest"].int32();
  f.minimal = o["minimal"].boolean();
  f.no_shorter = facts_from_json(o["no_shorter"]);
  f.complete_up_to = o["complete_up_to"].int32();
  f.complete = facts_from_json(o["complete"]);
  if (auto p = o.optional("proofs")) p->each([&](const At& s) { f.proofs.push_back(s.string()); });
  o.finish();
  return f;
}

std::vector<std::string> strings(const At& at) {
  std::vector<std::string> out;
  at.each([&](const At& s) { out.push_back(s.string()); });
  return out;
}

Certificate certificate_from(const At& at) {
  Object o(at);
  json_read::check_format(o, "p2v-certificate", 1);
  Certificate c;
  c.system =
      system_from_json(o["system"].raw(), at.origin() + ": " + (at.path().empty() ? "system" : at.path() + ".system"));
  c.levels = o["levels"].ints();
  c.axes = o["axes"].ints();
  c.reduce = o["reduce"].ints();
  c.matrix = o["matrix"].int_rows();
  c.master = json_read::master_collectives(o["master_collectives"]);
  c.max_size = o["max_size"].int32();
  {
    Object h(o["hierarchy"]);
    c.hierarchy_kind = json_read::hierarchy_kind(h["kind"]);
    c.hierarchy_cards = h["cards"].ints();
    c.hierarchy_names = strings(h["names"]);
    h.finish();
  }
  c.goal_groups = o["goal_groups"].int_rows();
  {
    Object p(o["program"]);
    c.notation = p["notation"].string();
    p["steps"].each([&](const At& s) {
      Object so(s);
      CertificateStep st;
      st.name = so["name"].string();
      st.collective = json_read::collective(so["collective"]);
      st.slice = so["slice"].int32();
      st.form = so["form"].string();
      st.e = so["e"].int32();
      st.groups = so["groups"].int_rows();
      so.finish();
      c.steps.push_back(std::move(st));
    });
    const At size = p["size"];
    if (size.integer() != static_cast<std::int64_t>(c.steps.size()))
      size.fail("the program has " + std::to_string(c.steps.size()) + " steps");
    p.finish();
  }
  o["lowered"].each([&](const At& s) {
    Object so(s);
    c.lowered.push_back({json_read::collective(so["collective"]), so["groups"].int_rows()});
    so.finish();
  });
  o["states"].each([&](const At& s) { c.states.push_back(strings(s)); });
  c.facts = certificate_facts_from_json(o["facts"]);
  o.finish();
  return c;
}

ShapeCertificate shape_certificate_from(const At& at) {
  Object o(at);
  json_read::check_format(o, "p2v-shape-certificate", 1);
  ShapeCertificate c;
  c.system = system_from_json(o["system"].raw(), at.origin() + ": system");
  o["axes"].each([&](const At& a) { c.axes.push_back(a.integer()); });
  c.reduce = o["reduce"].ints();
  c.matrix = o["matrix"].int_rows();
  c.hierarchy_kind = json_read::hierarchy_kind(o["hierarchy_kind"]);
  {
    Object s(o["shape"]);
    c.signature = s["signature"].string();
    s["levels"].each([&](const At& l) {
      Object lo(l);
      c.shape_levels.emplace_back(lo["name"].string(), lo["cardinality"].integer());
      lo.finish();
    });
    s.finish();
  }
  c.notation = o["program"].string();
  o["steps"].each([&](const At& s) {
    Object so(s);
    ShapeCertificateStep st;
    st.collective = json_read::collective(so["collective"]);
    st.slice = so["slice"].string();
    st.form = so["form"].string();
    so["vary"].each([&](const At& d) {
      Object dob(d);
      st.vary.push_back({dob["axis"].int32(), dob["level"].int32(), dob["factor"].int32()});
      dob.finish();
    });
    st.master = so["master"].boolean();
    st.group_size = so["group_size"].integer();
    st.num_groups = so["num_groups"].integer();
    so.finish();
    c.steps.push_back(std::move(st));
  });
  c.relies_on = strings(o["relies_on"]);
  c.instance = certificate_from(o["instance"]);
  o.finish();
  return c;
}

}  // namespace

json to_json(const Certificate& c) {
  json steps = json::array(), lowered = json::array(), states = json::array();
  for (const auto& s : c.steps)
    steps.push_back({{"name", s.name},
                     {"collective", to_string(s.collective)},
                     {"slice", s.slice},
                     {"form", s.form},
                     {"e", s.e},
                     {"groups", s.groups}});
  for (const auto& s : c.lowered) lowered.push_back({{"collective", to_string(s.collective)}, {"groups", s.groups}});
  for (const auto& s : c.states) states.push_back(s);
  return json{{"format", kCertificateFormat},
              {"system", system_json(c.system)},
              {"levels", c.levels},
              {"axes", c.axes},
              {"reduce", c.reduce},
              {"matrix", c.matrix},
              {"master_collectives", to_string(c.master)},
              {"max_size", c.max_size},
              {"hierarchy",
               {{"kind", to_string(c.hierarchy_kind)}, {"cards", c.hierarchy_cards}, {"names", c.hierarchy_names}}},
              {"goal_groups", c.goal_groups},
              {"program", {{"size", c.steps.size()}, {"notation", c.notation}, {"steps", steps}}},
              {"lowered", lowered},
              {"states", states},
              {"facts", to_json(c.facts)}};
}

json to_json(const ShapeCertificate& c) {
  json levels = json::array(), steps = json::array();
  for (const auto& [name, card] : c.shape_levels) levels.push_back({{"name", name}, {"cardinality", card}});
  for (const auto& s : c.steps) {
    json vary = json::array();
    for (const auto& d : s.vary) vary.push_back({{"axis", d[0]}, {"level", d[1]}, {"factor", d[2]}});
    steps.push_back({{"collective", to_string(s.collective)},
                     {"slice", s.slice},
                     {"form", s.form},
                     {"vary", vary},
                     {"master", s.master},
                     {"group_size", s.group_size},
                     {"num_groups", s.num_groups}});
  }
  return json{{"format", kShapeCertificateFormat},
              {"system", system_json(c.system)},
              {"axes", c.axes},
              {"reduce", c.reduce},
              {"matrix", c.matrix},
              {"hierarchy_kind", to_string(c.hierarchy_kind)},
              {"shape", {{"signature", c.signature}, {"levels", levels}}},
              {"program", c.notation},
              {"steps", steps},
              {"relies_on", c.relies_on},
              {"instance", to_json(c.instance)}};
}

Certificate certificate_from_json(const json& j, const std::string& origin) {
  return certificate_from(At(j, origin, ""));
}

ShapeCertificate shape_certificate_from_json(const json& j, const std::string& origin) {
  return shape_certificate_from(At(j, origin, ""));
}

std::variant<Certificate, ShapeCertificate> any_certificate_from_json(const json& j, const std::string& origin) {
  const At top(j, origin, "");
  top.expect(j.is_object(), "a certificate object");
  const auto f = j.find("format");
  const std::string format = f != j.end() && f->is_string() ? f->get<std::string>() : "";
  if (format.rfind("p2v-shape-certificate/", 0) == 0) return shape_certificate_from(top);
  if (format.rfind("p2v-certificate/", 0) == 0) return certificate_from(top);
  At(f != j.end() ? *f : j, origin, "format")
      .fail(fmt::format("expected \"{}\" or \"{}\", got {}", kCertificateFormat, kShapeCertificateFormat,
                        f != j.end() ? json_brief(*f) : std::string("no format field")));
}

}  // namespace p2v::engine
