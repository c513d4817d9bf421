// The tamper suite (docs/formats.md, end): real certificates of every kind, produced here on small systems,
// each field mutated in every way the walk knows (delete, change the value, change the type, add
// an unknown sibling, flip a boolean, +-1 an integer, splice the value of another certificate of
// the same kind at the same path). The walk enumerates the fields of the certificates themselves,
// so a field added to a format is covered without changing this file. Every mutated certificate
// must be refused, except where the checker reports the mutated field as "recorded" (a claim it
// states it did not re-check: solver versions, times, statistics); untampered certificates must
// all be accepted. The numbers per kind are printed.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <unistd.h>

#include <fmt/core.h>

#include <sys/wait.h>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "p2v/encodings/certificate.hpp"
#include "p2v/encodings/rules.hpp"
#include "p2v/encodings/symbolic.hpp"
#include "p2v/engine/replay.hpp"
#include "p2v/engine/rules.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

#ifdef P2V_HAVE_CHECKER
#include "p2v/checker/checker.hpp"

using namespace p2v;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
// Per-process directory names: concurrent runs of this test must not remove each other's files.
std::string unique() { return "." + std::to_string(::getpid()); }

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A checker for one kind: accepted?, reason, claims (path, how).
struct Outcome {
  bool ok;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> claims;
};
using Check = std::function<Outcome(const std::string&)>;

Outcome program_check(const std::string& text) {
  const auto v = checker::check_certificate(text);
  Outcome o{v.ok, v.reason, {}};
  for (const auto& c : v.claims) o.claims.push_back({c.path, c.how});
  return o;
}

Outcome rule_check(const std::string& text) {
  std::string summary;
  std::vector<std::array<std::string, 3>> claims;
  const std::string why = encodings::check_rule_certificate(text, &summary, &claims);
  Outcome o{why.empty(), why, {}};
  for (const auto& c : claims) o.claims.push_back({c[0], c[2]});
  return o;
}

// "facts.found_by[0].version" with indices as "[]" (rule claims name fields across elements so).
std::string wildcard(const std::string& p) {
  std::string out;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '[') {
      out += "[]";
      i = p.find(']', i);
    } else {
      out += p[i];
    }
  }
  return out;
}

// Is `path` (or a field inside it) a claim the checker reports as recorded, not re-checked?
bool recorded(const Outcome& untampered, const std::string& path) {
  for (const auto& [claim, how] : untampered.claims) {
    if (how != "recorded" || claim.empty()) continue;  // "" is the certificate as a whole: never an excuse
    for (const auto& [c, p] : {std::pair{claim, path}, std::pair{wildcard(claim), wildcard(path)}})
      if (p == c || (p.rfind(c, 0) == 0 && (p[c.size()] == '.' || p[c.size()] == '['))) return true;
  }
  return false;
}

// The dotted paths where `b` differs from `a` (JSON patch paths, "/a/0/b" -> "a[0].b").
std::vector<std::string> changed_paths(const json& a, const json& b) {
  std::vector<std::string> out;
  for (const auto& op : json::diff(a, b)) {
    const json::json_pointer ptr(op["path"].get<std::string>());
    std::string path;
    json::json_pointer at;
    for (const auto& token : [&] {
           std::vector<std::string> t;
           for (auto q = ptr; !q.empty(); q = q.parent_pointer()) t.insert(t.begin(), q.back());
           return t;
         }()) {
      const bool index = a.contains(at) && a.at(at).is_array();
      path += index ? "[" + token + "]" : (path.empty() ? "" : ".") + token;
      at /= token;
    }
    out.push_back(path);
  }
  return out;
}

struct Mutation {
  std::string path, what;
  json doc;
};

// Every path of `j`, in dotted form, with its JSON pointer.
void walk(const json& j, const json::json_pointer& ptr, const std::string& path,
          std::vector<std::tuple<json::json_pointer, std::string, bool>>& out, bool in_array) {
  if (!ptr.empty()) out.emplace_back(ptr, path, in_array);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it)
      walk(it.value(), ptr / it.key(), path.empty() ? it.key() : path + "." + it.key(), out, false);
  else if (j.is_array())
    for (std::size_t i = 0; i < j.size(); ++i) walk(j[i], ptr / i, path + "[" + std::to_string(i) + "]", out, true);
}

std::vector<Mutation> mutations(const json& good, const std::vector<json>& others) {
  std::vector<std::tuple<json::json_pointer, std::string, bool>> paths;
  walk(good, json::json_pointer(), "", paths, false);
  std::vector<Mutation> out;
  auto add = [&](const std::string& path, const std::string& what, json doc) {
    if (doc != good) out.push_back({path, what, std::move(doc)});
  };
  for (const auto& [ptr, path, in_array] : paths) {
    const json& v = good.at(ptr);
    {  // delete
      json d = good;
      json& parent = d.at(ptr.parent_pointer());
      if (in_array)
        parent.erase(static_cast<std::size_t>(std::stoul(ptr.back())));
      else
        parent.erase(ptr.back());
      add(path, "delete", std::move(d));
    }
    auto set = [&](const std::string& what, json nv) {
      json d = good;
      d.at(ptr) = std::move(nv);
      add(path, what, std::move(d));
    };
    set("null", nullptr);
    if (v.is_boolean()) set("flip", !v.get<bool>());
    if (v.is_number_integer()) {
      set("+1", v.get<std::int64_t>() + 1);
      set("-1", v.get<std::int64_t>() - 1);
      set("as string", std::to_string(v.get<std::int64_t>()));
      set("as float", v.get<double>() + 0.5);
    }
    if (v.is_number_float()) {
      set("*2+1", v.get<double>() * 2 + 1);
      set("negative", -1.0 - v.get<double>());
    }
    if (v.is_string()) {
      set("changed", v.get<std::string>() + "x");
      set("empty", "");
      set("as number", 7);
    }
    if (v.is_array()) {
      set("emptied", json::array());
      if (!v.empty()) {
        json d = v;
        d.push_back(v.back());
        set("last repeated", d);
      }
      set("as object", json::object());
    }
    if (v.is_object()) {
      json d = v;
      d["unknown_field"] = 1;
      set("unknown field", d);
      set("as array", json::array());
    }
    for (std::size_t o = 0; o < others.size(); ++o)
      if (others[o].contains(ptr)) set("splice from another certificate", others[o].at(ptr));
  }
  json d = good;
  d["unknown_field"] = true;
  add("", "unknown top-level field", d);
  return out;
}

struct Tally {
  int mutations = 0, refused = 0, recorded_only = 0, false_refusals = 0;
};

// Runs the suite over `certs` (several certificates of one kind): each one is tampered with and
// the others are the splice sources.
Tally tamper_suite(const std::string& kind, const std::vector<std::string>& certs, const Check& check) {
  Tally t;
  std::vector<json> docs;
  for (const auto& c : certs) docs.push_back(json::parse(c));
  for (std::size_t i = 0; i < certs.size(); ++i) {
    const Outcome base = check(certs[i]);
    INFO(kind, " certificate ", i, " untampered: ", base.reason);
    CHECK(base.ok);
    if (!base.ok) {
      ++t.false_refusals;
      continue;
    }
    std::vector<json> others;
    for (std::size_t o = 0; o < docs.size(); ++o)
      if (o != i) others.push_back(docs[o]);
    for (const auto& m : mutations(docs[i], others)) {
      ++t.mutations;
      const Outcome r = check(m.doc.dump(1));
      if (!r.ok) {
        ++t.refused;
        continue;
      }
      // Accepted: only fields the checker reports as recorded, not re-checked, may differ.
      for (const auto& p : changed_paths(docs[i], m.doc)) {
        INFO(kind, ": ", m.what, " at ", m.path, " was accepted; it changes ", p);
        CHECK(recorded(base, p));
      }
      ++t.recorded_only;
    }
  }
  MESSAGE(
      fmt::format("tamper suite {}: {} certificates, {} mutations, {} refused ({:.1f}%), {} accepted on fields "
                  "reported as recorded (not re-checked), {} false refusals of untampered certificates",
                  kind, certs.size(), t.mutations, t.refused, t.mutations ? 100.0 * t.refused / t.mutations : 0.0,
                  t.recorded_only, t.false_refusals));
  return t;
}

// Certificates of two placements (hierarchies (d) and (a)): the first two of each.
std::vector<std::string> program_certificates(const std::string& tag) {
  std::vector<std::string> out;
  const auto sys = engine::parse_system_arg("node=2,gpu=2");
  engine::SynthOptions opt;
  opt.max_size = 3;
  for (auto [x, kind] : std::vector<std::pair<engine::ParallelismMatrix, engine::HierarchyKind>>{
           {{{2, 2}}, engine::HierarchyKind::ReductionAxes}, {{{2, 1}, {1, 2}}, engine::HierarchyKind::System}}) {
    std::vector<int> axes;
    for (const auto& row : x) axes.push_back(row[0] * row[1]);
    engine::Placement p(sys.cardinalities(), axes, x, {0});
    const auto r = engine::synthesize(p, sys.level_names(), kind, opt);
    encodings::CertifyOptions c;
    c.dir = (fs::temp_directory_path() / ("p2v-tamper-" + tag + std::to_string(out.size()) + unique())).string();
    fs::remove_all(c.dir);
    const auto files = encodings::certify_programs(sys, p, r, opt, c).files;
    REQUIRE(files.size() >= 2);
    for (std::size_t i = 0; i < 2; ++i) out.push_back(slurp(files[i]));
  }
  return out;
}

// Shape certificates with the facts of the per-level encoding (symbolic-closure, the default on
// the smallest instance) or of the concrete one.
std::vector<std::string> shape_certificates(encodings::EncodingChoice encoding = encodings::EncodingChoice::Auto) {
  std::vector<std::string> out;
  const auto sys = engine::parse_system_arg("node=64,gpu=8");
  const engine::ParallelismMatrix x{{64, 8}};
  const auto shape =
      engine::make_shape(sys.cardinalities(), sys.level_names(), x, {0}, engine::HierarchyKind::ReductionAxes);
  engine::SynthOptions opt;
  opt.max_size = 3;
  const auto r = engine::synthesize_shape(shape, opt);
  encodings::CertifyOptions c;
  c.dir = (fs::temp_directory_path() / ("p2v-tamper-shape" + std::string(encodings::to_string(encoding)) + unique()))
              .string();
  c.encoding = encoding;
  fs::remove_all(c.dir);
  for (const auto& f : encodings::certify_shape_programs(sys, shape, r, opt, c).files) out.push_back(slurp(f));
  return out;
}

int sh(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string text;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  const int st = pclose(p);
  if (out) *out = text;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

}  // namespace

TEST_CASE("tamper suite: program certificates (p2v-certificate/1)") {
  const auto certs = program_certificates("prog");
  REQUIRE(certs.size() == 4);
  const Tally t = tamper_suite("p2v-certificate/1", certs, program_check);
  CHECK(t.mutations > 500);
  CHECK(t.false_refusals == 0);
}

TEST_CASE("tamper suite: shape certificates (p2v-shape-certificate/1)") {
  for (auto enc : {encodings::EncodingChoice::Auto, encodings::EncodingChoice::Concrete}) {
    const auto certs = shape_certificates(enc);
    REQUIRE(certs.size() >= 2);
    // auto: the per-level encoding's facts on the smallest instance [1 2 2].
    const std::string method = enc == encodings::EncodingChoice::Auto ? "symbolic-closure" : "closure";
    REQUIRE(json::parse(certs[0])["instance"]["facts"]["complete"][0]["method"] == method);
    std::vector<std::string> sample(certs.begin(), certs.begin() + 2);
    const Tally t = tamper_suite(std::string("p2v-shape-certificate/1 (") + method + ")", sample, program_check);
    CHECK(t.false_refusals == 0);
  }
}

TEST_CASE("symbolic certificates: the encoding is named and its premise re-derived") {
  const auto certs = shape_certificates(encodings::EncodingChoice::PerLevel);
  REQUIRE(certs.size() >= 2);
  const json c = json::parse(certs[1]);
  const auto base = checker::check_certificate(c.dump());
  REQUIRE(base.ok);
  bool premise = false;
  for (const auto& cl : base.claims)
    premise |= cl.how == "re-derived" && cl.claim.find("per-level") != std::string::npos;
  CHECK(premise);
  // Claiming the concrete encoding's closure with the per-level facts' texts is refused, and so is
  // the other way round.
  json t = c;
  for (auto& f : t["instance"]["facts"]["complete"]) f["method"] = "closure";
  CHECK_FALSE(checker::check_certificate(t.dump()).ok);
  for (auto& f : t["instance"]["facts"]["found_by"]) f["method"] = "closure";
  for (auto& f : t["instance"]["facts"]["no_shorter"]) f["method"] = "closure";
  CHECK_FALSE(checker::check_certificate(t.dump()).ok);
  const auto conc = shape_certificates(encodings::EncodingChoice::Concrete);
  json u = json::parse(conc[1]);
  for (const char* list : {"found_by", "no_shorter", "complete"})
    for (auto& f : u["instance"]["facts"][list]) f["method"] = "symbolic-closure";
  CHECK_FALSE(checker::check_certificate(u.dump()).ok);
}

TEST_CASE("symbolic certificates over summed levels: the form is named, re-derived, and the checker's test agrees") {
  const auto certs = shape_certificates(encodings::EncodingChoice::PerLevel);
  REQUIRE(certs.size() >= 2);
  const json c = json::parse(certs[1]);
  const std::string form = ", each device's columns those of the devices that agree with it outside a set of levels";
  for (const auto& f : c["instance"]["facts"]["complete"])
    CHECK(f["query"].get<std::string>().find(form) != std::string::npos);
  const auto base = checker::check_certificate(c.dump());
  REQUIRE(base.ok);
  bool premise = false;
  for (const auto& cl : base.claims)
    premise |= cl.how == "re-derived" && cl.claim.find("agree with it outside a set of levels") != std::string::npos;
  CHECK(premise);
  // Without the phrase (certificates written before the summed levels): accepted, and the premise
  // re-derived is the per-level form alone; with the phrase changed: refused.
  auto with_query = [&](const std::string& from, const std::string& to) {
    json t = c;
    for (auto& f : t["instance"]["facts"]["complete"]) {
      auto q = f["query"].get<std::string>();
      q.replace(q.find(from), from.size(), to);
      f["query"] = q;
    }
    return checker::check_certificate(t.dump());
  };
  const auto before = with_query(form, "");
  CHECK(before.ok);
  for (const auto& cl : before.claims) CHECK(cl.claim.find("outside a set of levels") == std::string::npos);
  CHECK_FALSE(with_query("outside a set of levels", "outside one level").ok);
  // The checker's own test of the form and the encoder's agree on every state of every program of
  // [1 2 2 2] (all have summed levels), and both refuse columns of another form.
  const auto h = engine::make_plain_hierarchy({1, 2, 2, 2});
  engine::SynthOptions so;
  so.max_size = 4;
  std::vector<int> all(static_cast<std::size_t>(h.num_local()));
  for (std::size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int>(d);
  const auto r = engine::synthesize(h, {all}, so);
  const auto& coords = h.coords;  // one digit per level, the root's included
  auto dense = [](const engine::StateSet& st) {
    std::vector<std::vector<std::vector<bool>>> out(static_cast<std::size_t>(st.k()));
    for (int d = 0; d < st.k(); ++d) {
      out[static_cast<std::size_t>(d)].assign(static_cast<std::size_t>(st.k()),
                                              std::vector<bool>(static_cast<std::size_t>(st.k()), false));
      for (int row : st.rows(d))
        for (int j : st.columns(d, row))
          out[static_cast<std::size_t>(d)][static_cast<std::size_t>(row)][static_cast<std::size_t>(j)] = true;
    }
    return out;
  };
  int states = 0;
  for (const auto& prog : r.programs)
    for (const auto& st : engine::replay(r, prog).states) {
      const auto pl = encodings::per_level_state(st);
      REQUIRE(pl.has_value());
      CHECK(encodings::summed_levels(*pl).has_value());
      CHECK(checker::summed_levels_form(dense(st), coords));
      ++states;
    }
  CHECK(states > 100);
  engine::StateSet odd = engine::StateSet::initial(8);
  odd.set(0, 0, 3);  // device 0: columns {0, 3} on every row
  for (int row = 1; row < 8; ++row) odd.set(0, row, 3);
  const auto pl = encodings::per_level_state(odd);
  REQUIRE(pl.has_value());
  CHECK_FALSE(encodings::summed_levels(*pl).has_value());
  CHECK_FALSE(checker::summed_levels_form(dense(odd), coords));
}

TEST_CASE("symbolic certificates: the steps' query, one for all steps (unsat) or per step as written before (sat)") {
  const auto certs = shape_certificates(encodings::EncodingChoice::PerLevel);
  REQUIRE(certs.size() >= 2);
  const json c = json::parse(certs[1]);
  REQUIRE(checker::check_certificate(c.dump()).ok);
  // Written now: the one query over the listed programs' steps, refuted.
  for (const auto& f : c["instance"]["facts"]["found_by"]) {
    CHECK(f["result"] == "unsat");
    CHECK(f["query"].get<std::string>().find("step relation rejects") != std::string::npos);
  }
  // Written before: each step checked (sat), still read as it is.
  const std::string per_step =
      "each step of this program from its start state in the per-level encoding, with its successor's goal status";
  json old = c;
  for (auto& f : old["instance"]["facts"]["found_by"]) {
    f["query"] = per_step;
    f["result"] = "sat";
  }
  CHECK(checker::check_certificate(old.dump()).ok);
  // Each text with the other's answer is refused.
  json a = c, b = old;
  for (auto& f : a["instance"]["facts"]["found_by"]) f["result"] = "sat";
  for (auto& f : b["instance"]["facts"]["found_by"]) f["result"] = "unsat";
  CHECK_FALSE(checker::check_certificate(a.dump()).ok);
  CHECK_FALSE(checker::check_certificate(b.dump()).ok);
  // The per-step text is the per-level encoding's only: on a concrete closure's fact it is refused.
  json conc = json::parse(shape_certificates(encodings::EncodingChoice::Concrete)[1]);
  for (auto& f : conc["instance"]["facts"]["found_by"]) {
    f["query"] = c["instance"]["facts"]["found_by"][0]["query"];
    f["result"] = "unsat";
  }
  CHECK_FALSE(checker::check_certificate(conc.dump()).ok);
}

TEST_CASE("checker's prefix memo: two threads agree with one; a changed state behind a memoised prefix is refused") {
  const auto certs = shape_certificates();
  REQUIRE(certs.size() >= 2);
  std::vector<std::string> one;
  for (const auto& c : certs) {
    const auto v = checker::check_certificate(c);
    REQUIRE(v.ok);
    one.push_back(v.summary);
  }
  std::vector<std::string> two(certs.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next++) < certs.size();) two[i] = checker::check_certificate(certs[i]).summary;
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  CHECK(two == one);
  // Every state of these programs is memoised now: a recorded state that differs is still refused.
  for (const auto& text : certs) {
    json c = json::parse(text);
    for (std::size_t t = 0; t < c["instance"]["states"].size(); ++t) {
      json u = c;
      auto& cell = u["instance"]["states"][t][0];
      cell = cell.get<std::string>().empty() ? std::string("0:0") : std::string();
      const auto v = checker::check_certificate(u.dump());
      CHECK_FALSE(v.ok);
      CHECK(v.reason.find("state after step " + std::to_string(t)) != std::string::npos);
    }
  }
}

TEST_CASE("tamper suite: rule certificates (p2v-rule-certificate/1)") {
  std::vector<std::string> certs;
  for (const char* id : {"ar-hier", "neg-rs-ag-id", "ar-2d-rows-cols"}) {
    const auto& rule = engine::find_rule(id);
    certs.push_back(encodings::rule_certificate_json(
        rule, encodings::prove_rule(rule, 4, {encodings::smt::SolverKind::Z3, encodings::smt::SolverKind::Cvc5}, 60000,
                                    encodings::RuleEncoding::Auto, std::string(id) == "ar-hier")));  // with all_sizes
  }
  const Tally t = tamper_suite("p2v-rule-certificate/1", certs, rule_check);
  CHECK(t.false_refusals == 0);
}

#ifdef P2V_BIN
TEST_CASE("tamper suite: reshard certificates (p2v-reshard-certificate/1), written by p2v reshard --certify") {
  std::vector<std::string> certs;
  int i = 0;
  for (const char* problem : {"--mesh x=2,y=2 --from '[4{x}8,8]' --to '[8,4{y}8]'",
                              "--mesh x=2,y=2 --from '[2{x,y}8,8]' --to '[8,2{y,x}8]'"}) {
    const std::string dir =
        (fs::temp_directory_path() / ("p2v-tamper-reshard" + std::to_string(i++) + unique())).string();
    fs::remove_all(dir);
    std::string out;
    REQUIRE(sh(std::string(P2V_BIN) + " reshard " + problem + " --certify " + dir, &out) == 0);
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename() != checker::kManifestName) certs.push_back(slurp(e.path().string()));
  }
  REQUIRE(certs.size() == 2);
  const Tally t = tamper_suite("p2v-reshard-certificate/1", certs, program_check);
  CHECK(t.false_refusals == 0);
}

TEST_CASE("certificate directories: the manifest, --force, and p2v check DIR") {
  const std::string dir = (fs::temp_directory_path() / ("p2v-tamper-dir" + unique())).string();
  fs::remove_all(dir);
  const std::string synth = std::string(P2V_BIN) + " synth --system node=2,gpu=2 --axes 4 --reduce 0 --max-size 3 ";
  std::string out;
  REQUIRE(sh(synth + "--certify " + dir, &out) == 0);
  INFO(out);
  REQUIRE(fs::exists(fs::path(dir) / checker::kManifestName));
  CHECK(sh(std::string(P2V_BIN) + " check " + dir, &out) == 0);
  CHECK(out.find("manifest") != std::string::npos);
  CHECK(out.find("not re-checked") != std::string::npos);
  CHECK(out.find("proved") == std::string::npos);
  // A used directory is refused without --force (exit 2, nothing written).
  CHECK(sh(synth + "--certify " + dir, &out) == 2);
  CHECK(out.find("p2v: error: --certify") != std::string::npos);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename().string());
  REQUIRE(files.size() >= 3);
  // The checker refuses: a file changed, a file added, a file missing, a certificate swapped in.
  const std::string cert = (fs::path(dir) / (files[0] == checker::kManifestName ? files[1] : files[0])).string();
  const std::string text = slurp(cert);
  std::ofstream(cert) << text << " ";
  CHECK(sh(std::string(P2V_BIN) + " check " + dir, &out) == 1);
  CHECK(out.find("SHA-256") != std::string::npos);
  std::ofstream(cert) << text;
  CHECK(sh(std::string(P2V_BIN) + " check " + dir, &out) == 0);
  std::ofstream(fs::path(dir) / "extra.json") << text;
  CHECK(sh(std::string(P2V_BIN) + " check " + dir, &out) == 1);
  CHECK(out.find("not in the manifest") != std::string::npos);
  fs::remove(fs::path(dir) / "extra.json");
  fs::rename(cert, cert + ".moved");
  CHECK(sh(std::string(P2V_BIN) + " check " + dir, &out) == 1);
  fs::rename(cert + ".moved", cert);
  // --force replaces exactly the old run's files; a stranger's file is never removed.
  std::ofstream(fs::path(dir) / "mine.txt") << "not p2v's";
  CHECK(sh(synth + "--certify " + dir + " --force", &out) == 2);
  CHECK(out.find("mine.txt") != std::string::npos);
  CHECK(fs::exists(fs::path(dir) / "mine.txt"));
  fs::remove(fs::path(dir) / "mine.txt");
  const std::string other = std::string(P2V_BIN) + " synth --system node=2,gpu=2 --axes 4 --reduce 0 --max-size 2 ";
  CHECK(sh(other + "--certify " + dir + " --force", &out) == 0);
  CHECK(sh(std::string(P2V_BIN) + " check " + dir, &out) == 0);
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  CHECK(n < files.size());  // the old run's longer programs are gone
}
#endif

#endif  // P2V_HAVE_CHECKER
