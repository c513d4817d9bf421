#pragma once
// p2v prove as a library call: run the checks over suite cases (or one placement), apply each
// case's expected failures, and render the result as a table or JSON (tools/cmd_prove.cpp only
// parses options).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "p2v/proofs/expressiveness.hpp"

namespace p2v::proofs {

// One (case, matrix) run.
struct CaseRun {
  std::string name, system_name;
  std::vector<int> axes, reduce;
  int max_size = 4;
  std::map<std::string, std::string> expect_fail;
  MatrixReport report;
  double seconds = 0;
  bool ok = true;  // every check holds, or fails exactly as the case expects
};

struct ProveResult {
  ProveOptions options;
  std::vector<CaseRun> runs;
  bool ok = true;
  double seconds = 0;
  std::map<std::string, int> totals;  // status name -> number of checks
};

// "both", "none", "z3" or "cvc5" -> solver list (throws p2v::Error otherwise, or when the SMT
// encodings are not compiled in and a solver is asked for).
std::vector<std::string> parse_solvers(const std::string& s);

// Runs every matrix of every case (opt.max_size is taken from each case). A placement the shape
// path cannot handle is reported as an 'unknown' check when the run covers several placements,
// and thrown (p2v::Error) when it is the only one. Placements run on opt.jobs threads (0: one per
// hardware thread); the result lists them in case and matrix order. `progress`, if given, is
// called after each run (one call at a time, in the order they finish) with the number done and
// the total.
using ProveProgress = std::function<void(std::size_t done, std::size_t total, const CaseRun& run)>;
ProveResult run_cases(const std::vector<SuiteCase>& cases, ProveOptions opt, const ProveProgress& progress = {});

// Per-run lines, every check (details of failures, witnesses and strict inclusions, or all with
// verbose), the lemma x case table and the totals.
std::string print_table(const ProveResult& r, bool verbose);
// {"cases": [...], "ok", "seconds"}; each case lists its checks with status, detail and where they
// were computed, and, on the shape path, the smallest instance and what the lift relies on.
std::string to_json(const ProveResult& r);

}  // namespace p2v::proofs
