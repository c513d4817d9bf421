#include "p2v/encodings/rewrite_certificate.hpp"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "p2v/encodings/rules.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/notation.hpp"
#include "p2v/engine/rules.hpp"

namespace p2v::encodings {

using nlohmann::json;
namespace jr = engine::json_read;

json to_json(const RewriteCertificate& c) {
  json j = json::object();
  j["format"] = fmt::format("{}/{}", kRewriteCertificateFormat, kRewriteCertificateVersion);
  j["system"] = engine::system_json(c.system);
  j["axes"] = c.axes;
  j["reduce"] = c.reduce;
  j["matrix"] = c.matrix;
  for (const auto& [key, value] : {std::pair{"input", &c.input},
                                   {"output", &c.output},
                                   {"verdict", &c.verdict},
                                   {"query_hash", &c.query_hash},
                                   {"smtlib", &c.smtlib},
                                   {"problem", &c.problem}})
    j[key] = *value;
  j["answers"] = json::array();
  for (const auto& a : c.answers)
    j["answers"].push_back({{"solver", a.solver}, {"version", a.version}, {"answer", a.answer}, {"ms", a.ms}});
  return j;
}

RewriteCertificate rewrite_certificate_from_json(const json& j, const std::string& origin) {
  const jr::At root(j, origin, "");
  jr::Object o(root);
  jr::check_format(o, kRewriteCertificateFormat, kRewriteCertificateVersion);
  RewriteCertificate c;
  const jr::At system = o["system"];
  system.expect(system.raw().is_object(), "a system object");
  c.system = engine::system_from_json(system.raw(), origin + ": system");
  c.axes = o["axes"].ints();
  c.reduce = o["reduce"].ints();
  c.matrix = o["matrix"].int_rows();
  c.input = o["input"].string();
  c.output = o["output"].string();
  const jr::At verdict = o["verdict"];
  c.verdict = verdict.string();
  if (c.verdict != "equal" && c.verdict != "differ" && c.verdict != "unknown")
    verdict.fail(fmt::format("expected equal, differ or unknown, got \"{}\"", c.verdict));
  c.query_hash = o["query_hash"].string();
  c.smtlib = o["smtlib"].string();
  c.problem = o["problem"].string();
  o["answers"].each([&](const jr::At& at) {
    jr::Object a(at);
    RewriteAnswer r{a["solver"].string(), a["version"].string(), a["answer"].string(), a["ms"].number()};
    if (r.answer != "sat" && r.answer != "unsat" && r.answer != "unknown")
      a["answer"].fail(fmt::format("expected sat, unsat or unknown, got \"{}\"", r.answer));
    a.finish();
    c.answers.push_back(std::move(r));
  });
  o.finish();
  return c;
}

RewriteCertificate parse_rewrite_certificate(const std::string& text, const std::string& origin) {
  return rewrite_certificate_from_json(engine::parse_json_object(text, origin), origin);
}

bool same_certificate(const RewriteCertificate& a, const RewriteCertificate& b) {
  return engine::system_to_json(a.system) == engine::system_to_json(b.system) && a.axes == b.axes &&
         a.reduce == b.reduce && a.matrix == b.matrix && a.input == b.input && a.output == b.output &&
         a.verdict == b.verdict && a.query_hash == b.query_hash && a.smtlib == b.smtlib && a.problem == b.problem &&
         a.answers == b.answers;
}

namespace {

// A program of the placement's (d) hierarchy from its notation ("AllReduce" alone: the single
// AllReduce over the reduction groups, as `p2v rewrite --program AllReduce` reads it).
engine::LoweredProgram resolve(const engine::SynthesisHierarchy& h, const engine::Placement& pl,
                               const std::string& notation) {
  if (notation == "AllReduce") return {engine::LoweredStep{engine::Collective::AllReduce, pl.reduction_groups()}};
  return engine::resolve_program(h, notation);
}

// The checks; throws p2v::Error with the reason.
void check(const RewriteCertificate& c, std::vector<std::array<std::string, 3>>& cl, bool resolve_queries) {
  const auto levels = c.system.cardinalities();
  engine::check_axes(levels, c.axes);
  const auto reduce = engine::check_reduce(c.reduce, c.axes.size());
  if (reduce != c.reduce) throw Error("reduce: the reduction axes must be listed in increasing order");
  engine::check_matrix(c.matrix, levels, c.axes);
  cl.push_back({"system.levels, axes, reduce, matrix", "the placement", "read; checked to multiply out"});
  cl.push_back({"system (other fields)", "the system's name and cost-model data", "recorded"});
  const engine::Placement pl(levels, c.axes, c.matrix, c.reduce);
  const auto h = engine::make_hierarchy(pl, c.system.level_names(), engine::HierarchyKind::ReductionAxes);
  Equation eq;
  eq.k = pl.num_devices();
  try {
    eq.lhs = resolve(h, pl, c.input);
  } catch (const Error& e) {
    throw Error(fmt::format("input: {}", e.what()));
  }
  try {
    eq.rhs = resolve(h, pl, c.output);
  } catch (const Error& e) {
    throw Error(fmt::format("output: {}", e.what()));
  }
  cl.push_back(
      {"input, output", "programs of the placement's (d) hierarchy", "re-derived (resolved to device groups)"});
  if (c.verdict != "equal") throw Error(fmt::format("verdict {} certifies nothing", c.verdict));
  if (!c.problem.empty()) throw Error("problem: must be empty when the verdict is equal");
  const auto diff = engine::compare_counting(engine::run_lowered_side(eq.k, {}, eq.lhs),
                                             engine::run_lowered_side(eq.k, {}, eq.rhs), engine::RuleCompare::Equal);
  if (diff) throw Error("the counting replay finds input and output different: " + diff->describe());
  cl.push_back({"verdict", "output = input under the counting semantics", "replayed (counting semantics)"});
  const std::string query = equation_query(eq);
  if (c.smtlib != query) throw Error("smtlib: not the query of input = output on this placement");
  if (c.query_hash != fnv1a64_hex(query)) throw Error("query_hash: not the hash of the query");
  cl.push_back({"smtlib, query_hash", "the query (rebuilt from the placement and both programs)", "re-derived"});
  if (c.answers.size() != 2 || c.answers[0].solver != "z3" || c.answers[1].solver != "cvc5")
    throw Error("answers: one answer of z3, then one of cvc5 expected");
  for (std::size_t i = 0; i < c.answers.size(); ++i) {
    if (c.answers[i].answer != "unsat")
      throw Error(fmt::format("answers[{}]: {} answered {}, not unsat", i, c.answers[i].solver, c.answers[i].answer));
    if (!(c.answers[i].ms >= 0)) throw Error(fmt::format("answers[{}].ms: must not be negative", i));
  }
  if (resolve_queries) {
    const auto res = solve_equation(eq, {smt::SolverKind::Z3, smt::SolverKind::Cvc5}, 0);
    for (std::size_t i = 0; i < res.runs.size(); ++i)
      if (res.runs[i].result != smt::Result::unsat)
        throw Error(
            fmt::format("--resolve: {} now answers {}", res.runs[i].solver, smt::to_string(res.runs[i].result)));
  }
  cl.push_back({"answers[].answer", "z3 and cvc5 answer unsat", resolve_queries ? "re-solved" : "recorded"});
  cl.push_back({"answers[].version, ms", "solver versions and times", "recorded"});
}

}  // namespace

std::string check_rewrite_certificate(const std::string& text, std::string* summary,
                                      std::vector<std::array<std::string, 3>>* claims, bool resolve) {
  std::vector<std::array<std::string, 3>> cl;
  try {
    const RewriteCertificate c = parse_rewrite_certificate(text, "certificate");
    check(c, cl, resolve);
    if (summary)
      *summary = fmt::format(
          "rewrite {} -> {} on matrix {}: equal under the counting semantics (replayed); query re-derived and "
          "hashed; solver answers {}",
          c.input, c.output, engine::format_matrix(c.matrix), resolve ? "re-solved" : "recorded");
  } catch (const Error& e) {
    return e.what();
  }
  if (claims) *claims = std::move(cl);
  return "";
}

}  // namespace p2v::encodings
