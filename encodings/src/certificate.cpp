#include "p2v/encodings/certificate.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "p2v/engine/certificate_format.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/replay.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/workers.hpp"
#include "p2v/engine/write.hpp"

namespace p2v::encodings {

namespace {

// What the per-level closure over summed levels adds to the form of the states it closes (p2v
// check expects this text and re-derives the form on the program's states).
constexpr const char* kSummedLevelsForm =
    ", each device's columns those of the devices that agree with it outside a set of levels";
// The found_by query of the per-level closure (p2v check expects this text with "unsat").
constexpr const char* kSymbolicStepsQuery =
    "a step of the listed programs (this program's among them), from its start state in the per-level encoding, "
    "that the encoding's step relation rejects with its successor and that one's goal status";

std::string ranges(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(v[i]);
    if (j > i) {
      s += '-';
      s += std::to_string(v[j]);
    }
    i = j + 1;
  }
  return s;
}

const char* form_text(engine::FormKind f) {
  switch (f) {
    case engine::FormKind::Inside:
      return "Inside";
    case engine::FormKind::Parallel:
      return "Parallel";
    case engine::FormKind::Master:
      return "Master";
  }
  return "?";
}

std::string matrix_tag(const engine::ParallelismMatrix& x) {
  std::string s;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i) s += "_";
    for (std::size_t j = 0; j < x[i].size(); ++j) {
      if (j) s += '-';
      s += std::to_string(x[i][j]);
    }
  }
  return s;
}

}  // namespace

namespace {

// The text of one device's state from its held rows in ascending order, each with its columns
// (empty: the row is not held): rows with equal column sets grouped, ordered by first row.
class RowsText {
 public:
  void add(int row, std::vector<int> cols) {
    if (cols.empty()) return;
    auto [it, fresh] = by_cols_.emplace(std::move(cols), std::vector<int>{});
    if (fresh) order_.push_back(&it->first);
    it->second.push_back(row);
  }
  std::string str() const {
    std::string out;
    for (const auto* cols : order_) {
      if (!out.empty()) out += ';';
      out += ranges(by_cols_.at(*cols)) + ":" + ranges(*cols);
    }
    return out;
  }

 private:
  std::map<std::vector<int>, std::vector<int>> by_cols_;  // cols -> rows
  std::vector<const std::vector<int>*> order_;            // keys of by_cols_ by first row
};

// The error of a replay whose step `in` is invalid.
Error invalid_step(const engine::SynthResult& r, const engine::Instruction& in, const std::string& why) {
  return Error("replay: step " + engine::instruction_name(r.hierarchy, in) + " is invalid: " + why);
}

}  // namespace

std::string state_text(const LocalState& s, int device) {
  const auto& dev = s.at(static_cast<std::size_t>(device));
  RowsText t;
  for (std::size_t r = 0; r < dev.size(); ++r) {
    std::vector<int> cols;
    for (std::size_t j = 0; j < dev[r].size(); ++j)
      if (dev[r][j]) cols.push_back(static_cast<int>(j));
    t.add(static_cast<int>(r), std::move(cols));
  }
  return t.str();
}

std::string state_text(const engine::StateSet& s, int device) {
  RowsText t;
  for (int r : s.rows(device)) t.add(r, s.columns(device, r));
  return t.str();
}

std::vector<StateTexts> program_state_texts(const engine::SynthResult& r,
                                            const std::vector<engine::Program>& programs) {
  const int k = r.hierarchy.num_local();
  auto texts = [k](const engine::StateSet& st) {
    StateTexts::value_type t;
    for (int d = 0; d < k; ++d) t.push_back(state_text(st, d));
    return t;
  };
  // The previous program's states and texts: a program shares them up to its common prefix with
  // it (programs come sorted, so neighbours share most of their steps).
  std::vector<engine::StateSet> states{engine::StateSet::initial(k)};
  StateTexts prev{texts(states[0])};
  const engine::Program* last = nullptr;
  std::vector<StateTexts> out;
  out.reserve(programs.size());
  for (const auto& prog : programs) {
    std::size_t common = 0;
    if (last)
      while (common < prog.size() && common < last->size() && prog[common] == (*last)[common]) ++common;
    states.resize(common + 1);
    prev.resize(common + 1);
    for (std::size_t t = common; t < prog.size(); ++t) {
      const auto& in = r.instructions.at(static_cast<std::size_t>(prog[t]));
      engine::StateSet next(k);
      std::string why;
      if (!states.back().apply(in.collective, in.grouping.groups, next, &why)) throw invalid_step(r, in, why);
      prev.push_back(texts(next));
      states.push_back(std::move(next));
    }
    out.push_back(prev);
    last = &prog;
  }
  return out;
}

std::vector<LocalState> replay_states(const engine::SynthResult& r, const engine::Program& prog) {
  const int k = r.hierarchy.num_local();
  const engine::Trace t = engine::replay(r, prog);
  if (t.failed_step >= 0)
    throw invalid_step(r, r.instructions.at(static_cast<std::size_t>(prog[t.failed_step])), t.reason);
  std::vector<LocalState> out;
  for (const auto& s : t.states) {
    LocalState ls(k, std::vector<std::vector<bool>>(k, std::vector<bool>(k, false)));
    for (int d = 0; d < k; ++d)
      for (int row = 0; row < k; ++row)
        for (int c = 0; c < k; ++c) ls[d][row][c] = s.get(d, row, c);
    out.push_back(std::move(ls));
  }
  return out;
}

namespace {

// The solver facts of the certificate of `prog` (n steps), from each run's method.
engine::CertificateFacts certificate_facts(const engine::SynthResult& r, const engine::SynthOptions& opt,
                                           const engine::Program& prog, const std::vector<EnumerationResult>& runs) {
  engine::CertificateFacts facts;
  facts.enumerator_programs = static_cast<std::int64_t>(r.programs.size());
  facts.enumerator_nodes = r.nodes;
  const int n = static_cast<int>(prog.size());
  const int L = opt.max_size;
  for (const auto& run : runs) {
    auto fact = [&run](int bound, const char* method, std::string query, std::string result) {
      engine::SolverFact f;
      f.solver = run.solver;
      f.version = run.version;
      f.settings = run.settings;
      f.bound = bound;
      f.method = method;
      f.query = std::move(query);
      f.result = std::move(result);
      return f;
    };
    const bool has = std::binary_search(run.programs.begin(), run.programs.end(), prog,
                                        [](const engine::Program& a, const engine::Program& b) {
                                          return a.size() != b.size() ? a.size() < b.size() : a < b;
                                        });
    if (run.method == RunMethod::Closure || run.method == RunMethod::SymbolicClosure) {
      // The per-level encoding closes the states it represents (row-uniform, rows fixed to level
      // digits); the certificate says so in the method and the query.
      const bool sym = run.method == RunMethod::SymbolicClosure;
      const char* method = sym ? "symbolic-closure" : "closure";
      if (has) {
        // The per-level closure refutes, in one query, that the step relation fails on some step
        // of the listed programs (encodings/src/search.cpp, validate_all); the concrete closure
        // checks each step (sat).
        auto f = fact(n, method,
                      sym ? std::string(kSymbolicStepsQuery)
                          : "each step of this program from its start state, with its successor's goal status",
                      sym ? "unsat" : "sat");
        f.seconds = run.validity_seconds;
        facts.found_by.push_back(std::move(f));
      }
      // Only the shortest programs have no shorter one (the closure makes the listed set complete).
      const int shortest = r.programs.empty() ? 0 : static_cast<int>(r.programs.front().size());
      if (n > 1 && n == shortest)
        facts.no_shorter.push_back(fact(n - 1, method, "a valid program of at most " + std::to_string(n - 1) + " steps",
                                        "none: follows from the closure fact in facts.complete"));
      auto f = fact(L, method,
                    "from each of the " + std::to_string(run.closure_states) + " reachable states (depth < " +
                        std::to_string(L) + ", not the goal" +
                        (sym ? std::string(", with a per-level form: row-uniform, rows fixed to level digits") +
                                   (run.summed_levels ? kSummedLevelsForm : "")
                             : std::string()) +
                        "), a valid step other than the " + std::to_string(run.closure_edges) +
                        " listed ones with their successors (from states first reached at depth " +
                        std::to_string(L - 1) + ": a valid step to the goal other than the listed ones)",
                    "unsat");
      f.programs = static_cast<std::int64_t>(run.programs.size());
      f.states = run.closure_states;
      f.steps = run.closure_edges;
      f.seconds = run.closure_seconds;
      f.conclusion =
          "by induction on the length, every valid program of at most " + std::to_string(L) + " steps" +
          (sym ? " of the per-level encoding" : "") +
          " is a path of the closed state graph, whose paths are exactly the " + std::to_string(run.programs.size()) +
          " listed programs" +
          (sym ? " (every other reachable state is a dead end of the reference semantics; the "
                 "per-level encoding is docs/model.md section 4 on the states it represents: encodings/README.md)"
               : "");
      facts.complete.push_back(std::move(f));
      continue;
    }
    const bool confirm = run.method == RunMethod::Confirm;
    const char* method = confirm ? "confirm" : "enumerate";
    if (has) {
      auto f =
          fact(n, method,
               confirm ? "this program (its choices fixed) satisfies the encoding of " + std::to_string(n) + " steps"
                       : "a valid program of exactly " + std::to_string(n) + " steps (blocking those found before)",
               "sat");
      f.seconds = 0;
      for (const auto& b : run.bounds)
        if (b.bound == n) f.seconds = b.seconds;
      facts.found_by.push_back(std::move(f));
    }
    for (const auto& b : run.bounds) {
      if (b.bound < n && b.programs == 0) {
        auto f = fact(b.bound, method, "a valid program of exactly " + std::to_string(b.bound) + " steps",
                      smt::to_string(b.final_result));
        f.seconds = b.final_seconds;
        facts.no_shorter.push_back(std::move(f));
      }
      auto f = fact(b.bound, method,
                    "another valid program of exactly " + std::to_string(b.bound) + " steps after blocking the " +
                        std::to_string(b.programs) + (confirm ? " listed" : " found"),
                    smt::to_string(b.final_result));
      f.programs = b.programs;
      f.seconds = b.final_seconds;
      f.bound_seconds = b.seconds;
      facts.complete.push_back(std::move(f));
    }
  }
  facts.shortest = r.programs.empty() ? 0 : static_cast<int>(r.programs.front().size());
  facts.minimal = n == facts.shortest;
  facts.complete_up_to = opt.max_size;
  return facts;
}

// The certificate of one program (certificate_json is its text; shape certificates embed it).
engine::Certificate make_certificate(const engine::System& sys, const engine::Placement& p,
                                     const engine::SynthResult& r, const engine::SynthOptions& opt,
                                     const engine::Program& prog, const std::vector<EnumerationResult>& runs,
                                     const std::vector<std::string>& proof_files, StateTexts states) {
  const auto& h = r.hierarchy;
  engine::Certificate c;
  c.system = sys;
  c.levels = p.levels();
  c.axes = p.axes();
  c.reduce = p.reduce();
  c.matrix = p.matrix();
  c.master = opt.master;
  c.max_size = opt.max_size;
  c.hierarchy_kind = h.kind;
  c.hierarchy_cards = h.cards;
  c.hierarchy_names = h.names;
  c.goal_groups = engine::local_goal_groups(h, p);
  c.notation = engine::program_name(r, prog);
  for (int i : prog) {
    const auto& in = r.instructions.at(static_cast<std::size_t>(i));
    c.steps.push_back({engine::instruction_name(h, in), in.collective, in.grouping.slice, form_text(in.grouping.form),
                       in.grouping.e, in.grouping.groups});
    c.lowered.push_back({in.collective, engine::lower_groups(h, in.grouping.groups)});
  }
  c.states = std::move(states);
  c.facts = certificate_facts(r, opt, prog, runs);
  c.facts.proofs = proof_files;
  return c;
}

}  // namespace

std::string certificate_json(const engine::System& sys, const engine::Placement& p, const engine::SynthResult& r,
                             const engine::SynthOptions& opt, const engine::Program& prog,
                             const std::vector<EnumerationResult>& runs, const std::vector<std::string>& proof_files) {
  return engine::to_json(
             make_certificate(sys, p, r, opt, prog, runs, proof_files, program_state_texts(r, {prog}).at(0)))
      .dump(1);
}

namespace {

// build(i) for i = 0..n-1 on the --jobs workers (each certificate is built on its own, from its
// program's state texts: its facts and its JSON text).
void build_in_parallel(const CertifyOptions& c, std::size_t n, const std::function<void(std::size_t)>& build) {
  engine::parallel_for(n, engine::worker_count(c.search.jobs), build);
}

// Runs every solver of c.solvers on the hierarchy of r (or reuses `runs`) and checks that each
// found exactly the enumerator's programs.
CertifyResult solve_and_compare(const engine::Placement& p, const engine::SynthResult& r,
                                const engine::SynthOptions& opt, const CertifyOptions& c,
                                const std::vector<EnumerationResult>* runs) {
  if (c.dir.empty()) throw Error("--certify: give a directory");
  if (r.truncated) throw Error("--certify: the enumeration was truncated; nothing can be certified complete");
  CertifyResult out;
  const SearchProblem sp = make_search_problem(r.hierarchy, r.instructions, engine::local_goal_groups(r.hierarchy, p));
  if (runs) {
    out.runs = *runs;
  } else {
    // The solvers run concurrently (independent contexts); the first error is reported.
    // Each solver confirms the enumerator's set: every program valid, no other one up to the bound.
    auto name = [&r](const engine::Program& prog) { return engine::program_name(r, prog); };
    if (c.method == RunMethod::Closure) {
      // One pool of --jobs workers over every solver's states (confirm_by_closure).
      try {
        // The per-level encoding is for levels of cardinality 1 or 2 (a shape's smallest instance;
        // the checker re-derives its premise there).
        const auto& cards = r.hierarchy.cards;
        const bool bits = std::all_of(cards.begin(), cards.end(), [](int x) { return x <= 2; });
        if (c.encoding == EncodingChoice::PerLevel && !bits)
          throw Error(
              "the per-level encoding does not apply: a level has cardinality above 2 (it is for a shape's smallest "
              "instance; use --encoding concrete or drop --concrete)");
        const bool per_level = c.encoding == EncodingChoice::PerLevel ||
                               (c.encoding == EncodingChoice::Auto && bits && sp.k >= kPerLevelMinDevices &&
                                per_level_unsupported(sp).empty());
        out.runs = per_level ? confirm_by_symbolic_closure(c.solvers, sp, r.programs, opt.max_size, c.search, name)
                             : confirm_by_closure(c.solvers, sp, r.programs, opt.max_size, c.search, name);
      } catch (const std::exception& e) {
        throw Error(std::string("--certify: ") + e.what());
      }
    } else {
      std::vector<std::future<EnumerationResult>> fut;
      for (auto kind : c.solvers)
        fut.push_back(std::async(std::launch::async, [&, kind] {
          return c.method == RunMethod::Enumerate
                     ? enumerate_programs(kind, sp, opt.max_size, c.search)
                     : confirm_programs(kind, sp, r.programs, opt.max_size, c.search, name);
        }));
      std::string err;
      for (auto& f : fut) {
        try {
          out.runs.push_back(f.get());
        } catch (const std::exception& e) {
          if (err.empty()) err = e.what();
        }
      }
      if (!err.empty()) throw Error("--certify: " + err);
    }
  }
  for (const auto& run : out.runs) {
    if (run.programs != r.programs) {
      std::string msg = fmt::format("--certify: {} found {} programs, the enumerator {}; the sets differ", run.solver,
                                    run.programs.size(), r.programs.size());
      for (const auto& prog : r.programs)
        if (std::find(run.programs.begin(), run.programs.end(), prog) == run.programs.end()) {
          msg += "; e.g. only the enumerator has " + engine::program_name(r, prog);
          break;
        }
      for (const auto& prog : run.programs)
        if (std::find(r.programs.begin(), r.programs.end(), prog) == r.programs.end()) {
          msg += "; e.g. only " + run.solver + " has a program of size " + std::to_string(prog.size());
          break;
        }
      throw Error(msg + " (run p2v verify for the details)");
    }
  }
  return out;
}

std::vector<std::string> write_proofs(const CertifyOptions& c, const CertifyResult& out, const std::string& tag) {
  std::vector<std::string> proof_files;
  for (const auto& run : out.runs)
    for (const auto& b : run.bounds) {
      if (b.proof.empty()) continue;
      const std::string name = fmt::format("{}-{}-bound{}.proof", tag, run.solver, b.bound);
      engine::write_file_atomic((std::filesystem::path(c.dir) / name).string(), b.proof, "proof");
      proof_files.push_back(name);
    }
  return proof_files;
}

void make_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("--certify: cannot create directory '" + dir + "': " + ec.message());
}

// --resume: every file there and accepted by c.reuse.
bool reusable(const CertifyOptions& c, const std::vector<std::string>& paths, const engine::SynthResult& r,
              const engine::ParallelismMatrix& x) {
  if (!c.reuse) return false;
  std::error_code ec;
  for (const auto& p : paths)
    if (!std::filesystem::is_regular_file(p, ec)) return false;
  for (std::size_t i = 0; i < paths.size(); ++i)
    if (!c.reuse(paths[i], engine::program_name(r, r.programs[i]), x)) return false;
  return true;
}

}  // namespace

CertifyResult certify_programs(const engine::System& sys, const engine::Placement& p, const engine::SynthResult& r,
                               const engine::SynthOptions& opt, const CertifyOptions& c,
                               const std::vector<EnumerationResult>* runs) {
  const std::string tag = fmt::format("m{}-{}", matrix_tag(p.matrix()), engine::to_string(r.hierarchy.kind));
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < r.programs.size(); ++i)
    paths.push_back((std::filesystem::path(c.dir) / fmt::format("{}-p{:04}.json", tag, i)).string());
  if (reusable(c, paths, r, p.matrix())) {
    CertifyResult kept;
    kept.files = paths;
    kept.reused = true;
    return kept;
  }
  CertifyResult out = solve_and_compare(p, r, opt, c, runs);
  make_dir(c.dir);
  const auto proof_files = write_proofs(c, out, tag);
  std::vector<StateTexts> texts = program_state_texts(r, r.programs);
  std::vector<std::pair<std::string, std::string>> files(r.programs.size());
  build_in_parallel(c, files.size(), [&](std::size_t i) {
    files[i] = {paths[i], engine::to_json(make_certificate(sys, p, r, opt, r.programs[i], out.runs, proof_files,
                                                           std::move(texts[i])))
                                  .dump(1) +
                              "\n"};
  });
  engine::write_files_atomic(files, "certificate");  // one flush to disk for the placement's files
  out.files = paths;
  return out;
}

CertifyResult certify_shape_programs(const engine::System& sys, const engine::Shape& shape,
                                     const engine::SynthResult& r, const engine::SynthOptions& opt,
                                     const CertifyOptions& c, const std::vector<EnumerationResult>* runs) {
  const engine::ShapeInstance inst = engine::smallest_instance(shape);
  const engine::Placement cp(inst.system.cardinalities(), inst.axes, inst.x, inst.reduce);
  const std::string tag = fmt::format("m{}-{}", matrix_tag(shape.x), engine::to_string(shape.kind));
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < r.programs.size(); ++i)
    paths.push_back((std::filesystem::path(c.dir) / fmt::format("{}-shape-p{:04}.json", tag, i)).string());
  if (reusable(c, paths, r, shape.x)) {
    CertifyResult kept;
    kept.files = paths;
    kept.reused = true;
    return kept;
  }
  CertifyResult out = solve_and_compare(cp, r, opt, c, runs);
  make_dir(c.dir);
  const auto proof_files = write_proofs(c, out, tag + "-shape");
  std::vector<StateTexts> texts = program_state_texts(r, r.programs);
  std::vector<std::pair<std::string, std::string>> files(r.programs.size());
  build_in_parallel(c, files.size(), [&](std::size_t i) {
    const auto& prog = r.programs[i];
    engine::ShapeCertificate cert;
    cert.system = sys;
    for (const auto& row : shape.x) {
      std::int64_t a = 1;
      for (int v : row) a *= v;
      cert.axes.push_back(a);
    }
    cert.reduce = shape.reduce;
    cert.matrix = shape.x;
    cert.hierarchy_kind = shape.kind;
    cert.signature = shape.signature();
    for (const auto& l : shape.levels) cert.shape_levels.emplace_back(l.name, l.card);
    cert.notation = engine::program_name(r, prog);
    for (int in : prog) {
      const auto& g = r.instructions[in].grouping;
      const auto pat = engine::group_pattern(shape, g.slice, g.form, g.e);
      engine::ShapeCertificateStep st{r.instructions[in].collective,
                                      r.hierarchy.names[g.slice],
                                      engine::form_name(r.hierarchy, g),
                                      {},
                                      pat.master,
                                      pat.group_size,
                                      pat.num_groups};
      for (const auto& d : pat.vary) st.vary.push_back({d.axis, d.level, d.factor});
      cert.steps.push_back(std::move(st));
    }
    cert.relies_on = {
        "docs/shape.md section 3 (Theorem 1: validity, states and goal depend only on the shape; the smallest "
        "instance's device l stands for the class of devices that are 0 exactly where l is 0)",
        engine::shape_theorem_basis(shape, r, prog, opt.master).text,
        "docs/shape.md section 4 (the groups of a step on any instance are the level pattern recorded in steps[])"};
    cert.instance = make_certificate(inst.system, cp, r, opt, prog, out.runs, proof_files, std::move(texts[i]));
    files[i] = {paths[i], engine::to_json(cert).dump(1) + "\n"};
  });
  engine::write_files_atomic(files, "certificate");  // one flush to disk for the placement's files
  out.files = paths;
  return out;
}
}  // namespace p2v::encodings
