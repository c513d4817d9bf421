// The reshard certificate format (see p2v/reshard/certificate.hpp).
#include "p2v/reshard/certificate.hpp"

#include <fmt/core.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "p2v/engine/error.hpp"
#include "p2v/engine/json_reader.hpp"

namespace p2v::reshard {

namespace jr = engine::json_read;
using nlohmann::json;

std::string certificate_text(const Plan& p, const std::optional<SmtFacts>& smt) {
  json cert = to_json(p, /*full=*/true);
  cert["format"] = fmt::format("{}/{}", kCertificateFamily, kCertificateVersion);
  if (smt) {
    json steps = json::array();
    for (const auto& f : smt->steps) {
      json j = {{"step", f.step}, {"op", f.op}};
      for (const auto& s : f.unsat) j[s] = "unsat";
      steps.push_back(j);
    }
    cert["smt"] = {{"claim", smt->claim}, {"steps", steps}};
  }
  return cert.dump();
}

std::string certificate_file_name(const Plan& p) {
  std::string name = to_string(p.from, p.mesh) + "-" + to_string(p.to, p.mesh);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return "reshard-" + name.substr(0, 120) + ".json";
}

namespace {

std::vector<std::int64_t> int64s(const jr::At& at) {
  std::vector<std::int64_t> v;
  at.each([&](const jr::At& e) { v.push_back(e.integer()); });
  return v;
}

CertificateProgram read_program(const jr::At& at, bool topology) {
  jr::Object o(at);
  CertificateProgram pr;
  o["steps"].each([&](const jr::At& e) {
    jr::Object s(e);
    CertificateStep st;
    st.op = s["op"].string();
    if (st.op != "allgather" && st.op != "alltoall" && st.op != "dynslice" && st.op != "allpermute")
      s.at().fail(fmt::format("op \"{}\" is not allgather, alltoall, dynslice or allpermute", st.op));
    st.text = s["text"].string();
    st.type = s["type"].string();
    st.local = int64s(s["local"]);
    st.cost = s["cost"].integer();
    st.bytes = s["bytes"].integer();
    st.group_size = s["group_size"].int32();
    st.num_groups = s["num_groups"].int32();
    if (st.op != "allpermute") {
      st.dims = s["dims"].ints();
      s["axes"].each([&](const jr::At& a) { st.axes.push_back(a.string()); });
    }
    if (st.op == "allpermute") st.sources = int64s(s["sources"]);
    if (st.op == "dynslice") st.slice = int64s(s["slice"]);
    if (st.op == "allgather" || st.op == "alltoall")
      s["groups"].each([&](const jr::At& g) { st.groups.push_back(int64s(g)); });
    if (auto r = s.optional("relabelled")) {
      st.relabelled = r->boolean();
      if (!st.relabelled) r->fail("true or absent");
    }
    if (topology) {
      st.time_s = s["time_s"].number();
      st.level = s["level"].string();
    }
    s.finish();
    pr.steps.push_back(std::move(st));
  });
  pr.cost = o["cost"].integer();
  pr.peak = o["peak"].integer();
  pr.bound = o["bound"].integer();
  if (topology) pr.time_s = o["time_s"].number();
  o.finish();
  return pr;
}

}  // namespace

Certificate read_certificate(const std::string& text, const std::string& origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(fmt::format("{}: not JSON: {}", origin, e.what()));
  }
  jr::Object o(jr::At(doc, origin, ""));
  Certificate c;
  c.version = jr::check_format(o, kCertificateFamily, kCertificateVersion);
  c.cost_model = o["cost_model"].string();
  if (c.cost_model != "paper" && c.cost_model != "topology")
    o.at().fail(fmt::format("cost_model \"{}\" is not paper or topology", c.cost_model));
  const bool topology = c.cost_model == "topology";
  o["mesh_axes"].each([&](const jr::At& a) {
    a.expect(a.raw().is_array() && a.raw().size() == 2, "[name, size]");
    c.mesh_axes.emplace_back(jr::At(a.raw()[0], origin, a.path() + "[0]").string(),
                             jr::At(a.raw()[1], origin, a.path() + "[1]").int32());
  });
  {
    jr::Object m(o["mesh"]);
    for (const auto& [name, size] : c.mesh_axes)
      if (m[name.c_str()].int32() != size) m.at().fail(fmt::format("axis {} differs from mesh_axes", name));
    m.finish();
  }
  c.from = o["from"].string();
  c.to = o["to"].string();
  c.limit = o["limit"].integer();
  c.states = o["states"].integer();
  c.bytes_per_element = o["bytes_per_element"].int32();
  // The program's fields sit at the top level beside the problem's.
  json prog = json::object();
  for (const char* k : {"steps", "cost", "peak", "bound", "time_s"})
    if (doc.contains(k)) prog[k] = doc[k];
  for (const char* k : {"steps", "cost", "peak", "bound"}) (void)o[k];
  if (topology) (void)o["time_s"];
  c.program = read_program(jr::At(prog, origin, ""), topology);
  c.baseline = read_program(o["baseline"], topology);
  if (auto s = o.optional("smt")) {
    jr::Object so(*s);
    SmtFacts f;
    f.claim = so["claim"].string();
    so["steps"].each([&](const jr::At& e) {
      SmtStepFact sf;
      for (auto it = e.raw().begin(); e.raw().is_object() && it != e.raw().end(); ++it)
        if (it.key() != "step" && it.key() != "op") {
          if (it.value() != "unsat") jr::At(it.value(), origin, e.path() + "." + it.key()).fail("expected \"unsat\"");
          sf.unsat.push_back(it.key());
        }
      jr::Object eo(e);
      sf.step = eo["step"].integer();
      sf.op = eo["op"].string();
      for (const auto& k : sf.unsat) (void)eo[k.c_str()];
      eo.finish();
      f.steps.push_back(std::move(sf));
    });
    so.finish();
    c.smt = std::move(f);
  }
  o.finish();
  return c;
}

}  // namespace p2v::reshard
