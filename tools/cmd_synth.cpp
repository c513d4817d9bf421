// p2v synth: every valid reduction program up to a size bound, per placement (docs/model.md §3-§6).
// The JSON it writes is engine/synth_format ("p2v-synth/2", docs/formats.md).
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/programs.hpp"
#include "p2v/engine/progress.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/synth_format.hpp"
#include "solver_flags.hpp"
#include "sweep.hpp"
#ifdef P2V_HAVE_ENCODINGS
#include "p2v/encodings/certificate.hpp"
#endif
#ifdef P2V_HAVE_CHECKER
#include "certify_dir.hpp"
#endif

namespace p2v::tools {
namespace {

struct SynthArgs {
  ProblemArgs problem;
  SearchArgs search;
  bool json = false, lowered = false, concrete = false;
  int show = -1;
  std::string certify, solver = "both", encoding = "auto";
  bool proofs = false, force = false, resume = false, column_sets = false;
  ProgressArgs progress;
  double timeout_s = 300;
  int jobs = 0;  // --certify: solver workers in all; 0 = the machine's cores
  SolverFlags solver_flags;
};

// A synthesis result with its program records and their JSON text, shared by every placement of
// the same shape.
struct Synthesized {
  std::shared_ptr<const engine::SynthResult> r;
  std::vector<engine::ProgramRecord> programs;
  std::string programs_json;
};

// One matrix's programs (engine::ProgramSource decides shape or system) with their text.
struct MatrixResult {
  engine::PlacementPrograms p;
  std::shared_ptr<const Synthesized> s;
  std::vector<std::string> certificates;
  double ms = 0;
};

class SynthRun {
 public:
  SynthRun(const SynthArgs& a, const Problem& p)
      : a_(a), p_(p), kind_(a.search.kind()), opt_(a.search.options()), source_(p.system, p.axes, options(a)) {}

  MatrixResult synthesize(const engine::ParallelismMatrix& x) {
    MatrixResult m;
    const auto t0 = std::chrono::steady_clock::now();
    m.p = source_.programs_for(x, p_.reduce);
    if (!m.p.unproved.empty() && m.p.first_unproved_of_shape)
      fmt::print(stderr,
                 "p2v: warning: for shape {} the shape theorem is not proved ({}); the programs listed are the "
                 "smallest instance's, which equal the system's on every shape checked so far. For the exact "
                 "list, use --concrete (reduction groups of at most {} devices).\n",
                 m.p.shape_key(), m.p.unproved, engine::kMaxStateDevices);
    // Every placement of one shape shares its program list, whose text is built once.
    if (m.p.on_shape()) {
      auto& slot = by_shape_[m.p.shape_key()];
      if (!slot) slot = make(m.p.result);
      m.s = slot;
    } else {
      m.s = make(m.p.result);
    }
    m.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!a_.certify.empty()) certify(x, m);
    return m;
  }

  engine::SynthResultRecord record(const engine::ParallelismMatrix& x, const MatrixResult& m) const {
    const auto& r = *m.s->r;
    const engine::Shape* shape = m.p.on_shape() ? &*m.p.shape : nullptr;
    engine::SynthResultRecord rec;
    rec.matrix = x;
    rec.hierarchy.assign(m.p.cards.begin(), m.p.cards.end());
    rec.hierarchy_names = r.hierarchy.names;
    if (shape) rec.shape = shape->signature();
    rec.search_nodes = r.nodes;
    rec.search_applied = r.applied;
    if (!a_.certify.empty()) rec.certificates = m.certificates;
    rec.instructions = engine::instruction_records(r, shape, a_.lowered);
    return rec;
  }

  engine::SynthHeader header() const { return {p_.system, p_.axes, p_.reduce, kind_, opt_.max_size, opt_.master}; }

  void print_table(const engine::ParallelismMatrix& x, const MatrixResult& m) const {
    const auto& r = *m.s->r;
    fmt::print("matrix {}  hierarchy ({}) [{}] = [{}]: {} programs ({:.2f} ms{})\n", engine::format_matrix_brackets(x),
               engine::to_string(kind_), fmt::join(r.hierarchy.names, " "), fmt::join(m.p.cards, " "),
               r.programs.size(), m.ms,
               m.p.on_shape() ? ", on the shape"
               : m.p.path == engine::ProgramsPath::ExactFallback
                   ? ", on the system: the shape theorem is not proved for this shape"
                   : "");
    for (std::size_t i = 0; i < r.programs.size(); ++i) {
      if (a_.show >= 0 && i >= static_cast<std::size_t>(a_.show)) {
        fmt::print("  ... {} more (use --show or --json)\n", r.programs.size() - i);
        break;
      }
      fmt::print("  {:>4}  [{}] {}\n", i, r.programs[i].size(), m.s->programs[i].notation);
      if (a_.lowered)
        for (const auto& st : m.p.lower(r.programs[i]))
          fmt::print("          {} {}\n", engine::to_string(st.collective), fmt::join(st.groups, " "));
    }
  }

  std::size_t certificates = 0, kept = 0;
  // --resume: whether an existing certificate file can stay (certify_dir.hpp certificate_reuse).
  std::function<bool(const std::string&, const std::string&, const engine::ParallelismMatrix&)> reuse;

 private:
  static engine::ProgramsOptions options(const SynthArgs& a) {
    return {a.search.kind(), a.search.options(), a.concrete};
  }

  std::shared_ptr<const Synthesized> make(std::shared_ptr<const engine::SynthResult> r) const {
    auto s = std::make_shared<Synthesized>();
    s->r = std::move(r);
    s->programs = engine::program_records(*s->r);
    if (a_.json) s->programs_json = engine::programs_json(s->programs);
    return s;
  }

  void certify([[maybe_unused]] const engine::ParallelismMatrix& x, [[maybe_unused]] MatrixResult& m) {
#ifdef P2V_HAVE_ENCODINGS
    encodings::CertifyOptions co;
    co.dir = a_.certify;
    co.solvers = encodings::smt::parse_solver_list(a_.solver);
    co.search.proofs = a_.proofs;
    co.search.timeout_ms = static_cast<unsigned>(a_.timeout_s * 1000);
    co.search.bury_solver = true;  // a command-line run: the process exits soon after
    co.search.jobs = a_.jobs;      // 0: one per hardware thread
    co.encoding = encodings::parse_encoding_choice(a_.encoding);
    co.search.closure_column_sets = a_.column_sets;
    apply_solver_flags(a_.solver_flags, co.search);
    co.reuse = reuse;
    // Progress: the reachable states the solvers close (the long part), per placement.
    engine::Progress progress(fmt::format("certify {}: states closed", engine::format_matrix_brackets(x)), 0,
                              a_.progress.wanted());
    // The first closure query can take minutes (it builds the encoding); until it returns, the line says so.
    progress.note("(the solvers are on the first state)");
    co.search.state_closed = [&progress](std::size_t total) {
      progress.set_total(total);
      progress.note("");
      progress.add();
    };
    const engine::ProgressHeartbeat heartbeat(progress);
    bool reused = false;
    if (m.p.on_shape()) {
      // The solvers run once per shape, on its smallest instance.
      const auto sig = m.p.shape_key();
      const auto it = shape_runs_.find(sig);
      auto res = encodings::certify_shape_programs(p_.system, *m.p.shape, *m.s->r, opt_, co,
                                                   it == shape_runs_.end() ? nullptr : &it->second);
      if (it == shape_runs_.end() && !res.reused) shape_runs_.emplace(sig, res.runs);
      reused = res.reused;
      m.certificates = std::move(res.files);
    } else {
      auto res = encodings::certify_programs(p_.system, p_.placement(x), *m.s->r, opt_, co);
      reused = res.reused;
      m.certificates = std::move(res.files);
    }
    progress.finish();
    certificates += m.certificates.size();
    if (reused) kept += m.certificates.size();
#else
    throw Error("--certify needs the SMT encodings (p2v was built without Z3/cvc5)");
#endif
  }

  const SynthArgs& a_;
  const Problem& p_;
  engine::HierarchyKind kind_;
  engine::SynthOptions opt_;
  engine::ProgramSource source_;
  std::map<std::string, std::shared_ptr<const Synthesized>> by_shape_;  // program text per shape
#ifdef P2V_HAVE_ENCODINGS
  std::map<std::string, std::vector<encodings::EnumerationResult>> shape_runs_;
#endif
};

int run_synth(const SynthArgs& a) {
  const Problem p = load_problem(a.problem);
  if (a.proofs && a.certify.empty()) throw Error("--proofs needs --certify DIR");
  if (a.solver_flags.given() && a.certify.empty()) throw Error("--z3-logic and --cvc5-option need --certify DIR");
  if (a.lowered && p.system.num_devices() > engine::kMaxLoweredDevices)
    throw Error(
        fmt::format("--lowered lists explicit device groups for systems of at most {} devices; this one "
                    "has {}: drop --lowered (steps are printed as level patterns) or use a smaller system",
                    engine::kMaxLoweredDevices, p.system.num_devices()));
  if (a.force && a.certify.empty()) throw Error("--force needs --certify DIR");
  if (a.resume && a.certify.empty()) throw Error("--resume needs --certify DIR (the interrupted run's directory)");
  if (a.encoding != "auto" && a.certify.empty()) throw Error("--encoding needs --certify DIR");
#ifdef P2V_HAVE_ENCODINGS
  // Solver list and settings checked before the first result is printed (with --json a partial
  // p2v-synth/2 stream would otherwise precede the error).
  if (!a.certify.empty()) {
    (void)encodings::smt::parse_solver_list(a.solver);
    (void)encodings::parse_encoding_choice(a.encoding);
    encodings::SearchOptions probe;
    apply_solver_flags(a.solver_flags, probe);
  }
#endif
#if defined(P2V_HAVE_CHECKER) && defined(P2V_HAVE_ENCODINGS)
  if (!a.certify.empty()) prepare_certificate_dir(a.certify, a.force, "--certify", a.resume);
#endif
  SynthRun run(a, p);
#if defined(P2V_HAVE_CHECKER) && defined(P2V_HAVE_ENCODINGS)
  if (a.resume) {
    std::vector<std::string> solvers;
    for (auto k : encodings::smt::parse_solver_list(a.solver)) solvers.push_back(encodings::smt::to_string(k));
    run.reuse =
        certificate_reuse(a.certify, solvers, engine::system_json(p.system), a.search.max_size, a.search.master);
  }
#endif
  engine::Progress progress("synth: placements", p.matrices.size(), p.matrices.size() > 1 && a.progress.wanted());
  static char outbuf[1 << 16];
  std::setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  // Streamed: one result at a time (a system's placements can have millions of programs).
  std::optional<engine::SynthWriter> writer;
  if (a.json) writer.emplace(stdout, run.header());
  std::size_t total = 0;
  for (std::size_t mi = 0; mi < p.matrices.size(); ++mi) {
    const auto& x = p.matrices[mi];
    progress.note(engine::format_matrix_brackets(x));
    const MatrixResult m = run.synthesize(x);
    progress.add();
    total += m.s->r->programs.size();
    if (writer)
      writer->result(run.record(x, m), m.s->programs_json);
    else
      run.print_table(x, m);
  }
  progress.finish();
#if defined(P2V_HAVE_CHECKER) && defined(P2V_HAVE_ENCODINGS)
  if (!a.certify.empty()) {  // last: the manifest lists every file of this run with its hash
    std::vector<std::string> solvers;
    for (auto k : encodings::smt::parse_solver_list(a.solver)) solvers.push_back(encodings::smt::to_string(k));
    write_manifest(a.certify, solvers);
  }
#endif
  if (writer)
    writer->finish();
  else
    fmt::print("total: {} programs over {} matrices\n", total, p.matrices.size());
  if (!a.certify.empty() && !a.json)
    fmt::print(
        "{} certificates written to {}{} (check them with: p2v check {})\n", run.certificates - run.kept, a.certify,
        run.kept ? fmt::format(", {} kept from the interrupted run (re-checked by the independent checker)", run.kept)
                 : "",
        a.certify);
  return 0;
}

Registrar reg("synth", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<SynthArgs>();
  add_problem_options(sub, a->problem);
  add_search_options(sub, a->search, /*with_hierarchy=*/true);
  sub.add_flag("--json", a->json, "machine-readable output (format p2v-synth/2, docs/formats.md)");
  sub.add_flag("--lowered", a->lowered,
               fmt::format("also list every step's explicit device groups (JSON \"groups\"; systems of at most {} "
                           "devices); by default steps are level patterns",
                           engine::kMaxLoweredDevices));
  sub.add_flag("--concrete", a->concrete,
               fmt::format("synthesize on the system's devices instead of the shape (hierarchy (d); at most {} "
                           "devices per reduction group): the reference the shape is tested against",
                           engine::kMaxStateDevices));
  sub.add_option("--show", a->show, "print at most this many programs per matrix in the table (default all)");
  add_certify_option(sub, a->certify,
                     "write one JSON certificate per program into DIR, after the solvers (--solver) reproduce "
                     "the enumerator's set and prove minimality and completeness");
  sub.add_option("--solver", a->solver, "with --certify: z3, cvc5 or both")->capture_default_str();
  sub.add_flag("--force", a->force,
               "with --certify: replace the certificates of an earlier run in DIR (the files its MANIFEST.json "
               "lists); without it a non-empty DIR is refused");
  sub.add_flag("--proofs", a->proofs, "with --certify: store cvc5's proofs of the unsat answers beside them");
  sub.add_flag("--resume", a->resume,
               "with --certify: go on with an interrupted run in DIR (no MANIFEST.json yet): a placement whose "
               "certificates are all there and pass the independent checker is not solved again");
  add_progress_options(sub, a->progress);
  sub.add_option("--timeout", a->timeout_s, "with --certify: per solver check, seconds")->capture_default_str();
  sub.add_option("--jobs", a->jobs,
                 "with --certify: solver workers in all, each closing its share of the reachable states with a "
                 "solver of its own per kind, and helping the slower solver when its own is done (default 0: the "
                 "machine's cores)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--encoding", a->encoding,
                 "with --certify: the SMT encoding the solvers close the reachable states with: symbolic (per "
                 "level: fixed row digits, and per device the levels its columns are summed over, or its column "
                 "set; for shapes' smallest instances), concrete (state matrices), or auto (symbolic where it "
                 "applies, from 4 devices)")
      ->capture_default_str();
  sub.add_flag("--column-sets", a->column_sets,
               "with --certify and the symbolic encoding: every device's columns as a set (k bits), so that the "
               "solvers close every reachable state with a per-level form, not only those whose columns are summed "
               "levels (the wider check; about 4x slower on the four-level shape)");
  add_solver_flags(sub, a->solver_flags, "with --certify: ");
  return [a] { return run_synth(*a); };
});

}  // namespace
}  // namespace p2v::tools
