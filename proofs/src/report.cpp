#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>

#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/workers.hpp"
#include "p2v/proofs/prove_run.hpp"

namespace p2v::proofs {

std::vector<std::string> parse_solvers(const std::string& s) {
  std::vector<std::string> v;
  if (s == "both")
    v = {"z3", "cvc5"};
  else if (s == "z3" || s == "cvc5")
    v = {s};
  else if (s != "none")
    throw Error(fmt::format("--solver '{}': expected z3, cvc5, both or none", s));
  if (!v.empty() && !have_smt()) throw Error("this p2v was built without the SMT encodings; use --solver none");
  return v;
}

namespace {

using Clock = std::chrono::steady_clock;

// Known failures (documented deviations) must fail, and nothing else may.
bool apply_expectations(CaseRun& run, const ProveOptions& opt) {
  bool ok = true;
  auto& checks = run.report.checks;
  for (auto& ch : checks) {
    const bool expected = run.expect_fail.count(ch.id) > 0;
    if (ch.status == Status::Unknown) ok = false;
    if (ch.status == Status::Fails && !expected) ok = false;
    if (expected && ch.status == Status::Fails) ch.detail += " [expected: " + run.expect_fail.at(ch.id) + "]";
    if (expected && ch.status != Status::Fails) {
      ok = false;
      ch.detail += " [UNEXPECTED: the suite expects this check to fail: " + run.expect_fail.at(ch.id) + "]";
    }
  }
  for (const auto& [id, why] : run.expect_fail) {
    bool present = false;
    for (const auto& ch : checks) present |= ch.id == id;
    bool skipped = id.rfind("smt:", 0) == 0;  // an SMT check of a solver not asked for
    for (const auto& s : opt.solvers)
      if (id.rfind("smt:" + s + ":", 0) == 0) skipped = false;
    if (!present && !skipped) {
      ok = false;
      checks.push_back({id, "expected failure", Status::Fails,
                        "the suite expects check '" + id + "' but no such check ran", 0, "-"});
    }
  }
  return ok;
}

}  // namespace

ProveResult run_cases(const std::vector<SuiteCase>& cases, ProveOptions opt, const ProveProgress& progress) {
  ProveResult res;
  res.options = opt;
  ProveCache cache;
  // One work item per (case, matrix), results in that order whatever order they finish in.
  std::vector<std::pair<const SuiteCase*, const engine::ParallelismMatrix*>> work;
  for (const auto& c : cases)
    for (const auto& x : c.matrices) work.emplace_back(&c, &x);
  const std::size_t total = work.size();
  std::vector<CaseRun> runs(total);
  std::mutex lock;  // progress and `done`
  std::size_t done = 0;
  auto run_one = [&](std::size_t i) {
    const SuiteCase& c = *work[i].first;
    const auto& x = *work[i].second;
    ProveOptions o = opt;
    o.max_size = c.max_size;
    CaseRun run{c.name, c.system.name, c.axes, c.reduce, c.max_size, c.expect_fail, {}, 0, true};
    const auto tc = Clock::now();
    try {
      run.report = prove(c.system, c.axes, c.reduce, x, o, &cache);
    } catch (const Error& e) {
      if (total == 1) throw;
      run.report.matrix = x;
      run.report.checks.push_back(
          {"shape", "the placement can be proved on its smallest instance", Status::Unknown, e.what(), 0, "-"});
    }
    run.seconds = std::chrono::duration<double>(Clock::now() - tc).count();
    run.ok = apply_expectations(run, o);
    runs[i] = std::move(run);
    std::lock_guard<std::mutex> g(lock);
    ++done;
    if (progress) progress(done, total, runs[i]);
  };
  const auto t0 = Clock::now();
  // Workers take the next item; the first error other than p2v::Error (which run_one turns into
  // an 'unknown' check) stops the others and is rethrown here once every worker is joined.
  engine::parallel_for(total, engine::worker_count(opt.jobs), run_one);
  for (auto& run : runs) {
    res.ok &= run.ok;
    for (const auto& ch : run.report.checks) ++res.totals[to_string(ch.status)];
    res.runs.push_back(std::move(run));
  }
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

namespace {

// The lemma x case table's columns: label -> check id (a trailing ':' matches a prefix).
const std::vector<std::pair<std::string, std::string>>& columns() {
  static const std::vector<std::pair<std::string, std::string>> c{
      {"b>=a", "thm:b>=a"}, {"c>=b", "thm:c>=b"}, {"d>=c", "thm:d>=c"}, {"d>=b", "thm:d>=b"},
      {"d>=a", "thm:d>=a"}, {"c>=a", "thm:c>=a"}, {"B.1", "B.1"},       {"B.2", "B.2"},
      {"B.3", "B.3"},       {"B.4", "B.4"},       {"B.5", "B.5"},       {"B.6", "B.6"},
      {"B.7", "B.7"},       {"B.8", "B.8"},       {"z3", "smt:z3:"},    {"cvc5", "smt:cvc5:"}};
  return c;
}

// '+' holds, 'x' fails as the suite expects, 'X' fails, '?' unknown, '-' not run.
std::string table_row(const CaseRun& run) {
  std::string row =
      fmt::format("{:<34.34} {:>7.3f}s ", run.name + " " + engine::format_matrix(run.report.matrix), run.seconds);
  auto rank = [](char v) { return v == '?' ? 4 : v == 'X' ? 3 : v == 'x' ? 2 : v == '+' ? 1 : 0; };
  for (const auto& [label, id] : columns()) {
    char mark = '-';
    for (const auto& ch : run.report.checks) {
      const bool match = id.back() == ':' ? ch.id.rfind(id, 0) == 0 : ch.id == id;
      if (!match) continue;
      const char m = ch.status == Status::Unknown   ? '?'
                     : ch.status != Status::Fails   ? '+'
                     : run.expect_fail.count(ch.id) ? 'x'
                                                    : 'X';
      if (rank(m) > rank(mark)) mark = m;
    }
    row += fmt::format(" {:^{}}", std::string(1, mark), label.size());
  }
  return row;
}

std::string run_text(const CaseRun& run, bool verbose) {
  const auto& rep = run.report;
  std::string counts;
  for (const auto& [h, n] : rep.program_counts) counts += fmt::format(" {}={}", h, n);
  std::string s = fmt::format(
      "{} {} axes [{}] reduce [{}] matrix {} L={}: {} ({:.3f} s; programs{})\n", run.name, run.system_name,
      fmt::join(run.axes, " "), fmt::join(run.reduce, " "), engine::format_matrix_brackets(rep.matrix), run.max_size,
      run.ok ? (rep.ok() ? "all hold" : "as expected (known failures)") : "FAILED", run.seconds, counts);
  if (rep.shape)
    s += fmt::format("  on the smallest instance: {} matrix {} ({} devices for {}); relies on {}\n",
                     engine::format_matrix_brackets(rep.shape->instance.x), fmt::join(rep.shape->instance.axes, ","),
                     rep.shape->instance.devices, rep.shape->instance.real_devices, rep.shape->relies_on);
  for (const auto& ch : rep.checks) {
    const bool show = verbose || ch.status == Status::Fails || ch.status == Status::Unknown ||
                      ch.status == Status::Info || ch.detail.find("strict") != std::string::npos ||
                      ch.where == "closed form";
    s += fmt::format("  {:<22} {:<7} {:>8.4f}s{}\n", ch.id, to_string(ch.status), ch.seconds,
                     show ? "  " + ch.detail : "");
  }
  return s;
}

}  // namespace

std::string print_table(const ProveResult& r, bool verbose) {
  std::string s;
  for (const auto& run : r.runs) s += run_text(run, verbose);
  std::string head = fmt::format("{:<34} {:>8} ", "case", "time");
  for (const auto& [label, id] : columns()) head += " " + label;
  s += "\n" + head + "\n";
  for (const auto& run : r.runs) s += table_row(run) + "\n";
  s += "('+' holds, 'x' fails as recorded in the suite, 'X' fails, '?' unknown, '-' not run; z3/cvc5: the "
       "instruction-twin queries)\n";
  auto total = [&](const char* k) { return r.totals.count(k) ? r.totals.at(k) : 0; };
  s += fmt::format("checks: {} holds, {} fails, {} unknown, {} info; {:.2f} s\n", total("holds"), total("fails"),
                   total("unknown"), total("info"), r.seconds);
  return s;
}

std::string to_json(const ProveResult& r) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& run : r.runs) {
    const auto& rep = run.report;
    nlohmann::json jc{{"case", run.name},
                      {"system", run.system_name},
                      {"axes", run.axes},
                      {"reduce", run.reduce},
                      {"matrix", rep.matrix},
                      {"max_size", run.max_size},
                      {"seconds", run.seconds},
                      {"ok", run.ok},
                      {"expect_fail", run.expect_fail},
                      {"computed_on", rep.shape ? "smallest instance" : "system"}};
    for (const auto& [h, n] : rep.program_counts) jc["programs"][h] = n;
    if (rep.shape) {
      const auto& in = rep.shape->instance;
      jc["smallest_instance"] = {{"levels", in.system.cardinalities()},
                                 {"axes", in.axes},
                                 {"matrix", in.x},
                                 {"devices", in.devices},
                                 {"real_devices", in.real_devices},
                                 {"relies_on", rep.shape->relies_on}};
    }
    for (const auto& ch : rep.checks)
      jc["checks"].push_back({{"id", ch.id},
                              {"title", ch.title},
                              {"status", to_string(ch.status)},
                              {"detail", ch.detail},
                              {"where", ch.where},
                              {"seconds", ch.seconds}});
    out.push_back(std::move(jc));
  }
  return nlohmann::json{{"cases", out}, {"ok", r.ok}, {"seconds", r.seconds}, {"on", to_string(r.options.mode)}}.dump(
      2);
}

}  // namespace p2v::proofs
