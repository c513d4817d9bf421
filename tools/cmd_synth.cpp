// p2v synth: every valid reduction program up to a size bound, per placement (SPEC §3-§6).
// The JSON it writes is engine/synth_format ("p2v-synth/2", docs/formats.md).
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/synth_format.hpp"
#include "solver_flags.hpp"
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
  bool proofs = false, force = false;
  double timeout_s = 300;
  int jobs = 0;  // --certify: solver workers in all; 0 = the machine's cores
  SolverFlags solver_flags;
};

// A synthesis result with its program records and their JSON text, shared by every placement of
// the same shape.
struct Synthesized {
  engine::SynthResult r;
  std::vector<engine::ProgramRecord> programs;
  std::string programs_json;
};

// One matrix's synthesis: on the shape (hierarchy (d), any size) or on the concrete devices.
struct MatrixResult {
  std::optional<engine::Shape> shape;  // set on the shape path
  std::vector<int> hierarchy;          // real cardinalities
  std::shared_ptr<const Synthesized> s;
  std::vector<std::string> certificates;
  double ms = 0;
  bool exact_fallback = false;  // hierarchy (d) computed on the system: the shape theorem is not proved here
};

// Reduction groups up to this size are synthesized on the system (exact, well under a second)
// where the shape theorem is not proved for their shape.
constexpr std::int64_t kExactFallbackDevices = 64;

class SynthRun {
 public:
  SynthRun(const SynthArgs& a, const Problem& p) : a_(a), p_(p), kind_(a.search.kind()), opt_(a.search.options()) {}

  MatrixResult synthesize(const engine::ParallelismMatrix& x) {
    MatrixResult m;
    const auto t0 = std::chrono::steady_clock::now();
    if (engine::is_reduction_kind(kind_) && !a_.concrete) {
      m.shape = engine::make_shape(p_.system.cardinalities(), p_.system.level_names(), x, p_.reduce, kind_);
      for (auto c : m.shape->cards()) m.hierarchy.push_back(static_cast<int>(c));
      // Placements of the same shape have the same programs: synthesize each shape once.
      const std::string sig = m.shape->signature();
      auto& slot = by_shape_[sig];
      if (!slot) slot = make(engine::synthesize_shape(*m.shape, opt_));
      m.s = slot;
      // Where the shape theorem is not proved (docs/shape.md §3.2: --master-collectives all, or
      // the default setting beyond depth 5), small reduction groups get the exact computation on
      // the system; larger ones keep the shape's list, with a warning naming what it rests on.
      const auto basis = engine::shape_theorem_basis(*m.shape, slot->r, {}, opt_.master);
      if (!basis.complete_proved) {
        if (m.shape->group_size() <= kExactFallbackDevices) {
          m.shape.reset();
          m.exact_fallback = true;
          m.s = make(engine::synthesize(p_.placement(x), p_.system.level_names(), kind_, opt_));
          m.hierarchy = m.s->r.hierarchy.cards;
        } else if (warned_.insert(sig).second) {
          fmt::print(stderr,
                     "p2v: warning: for shape {} the shape theorem is not proved ({}); the programs listed are the "
                     "smallest instance's, which equal the system's on every shape checked so far. For the exact "
                     "list, use --concrete (reduction groups of at most {} devices).\n",
                     sig, basis.text, engine::kMaxStateDevices);
        }
      }
    } else {
      engine::check_concrete_size(kind_, x, p_.reduce);
      m.s = make(engine::synthesize(p_.placement(x), p_.system.level_names(), kind_, opt_));
      m.hierarchy = m.s->r.hierarchy.cards;
    }
    m.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!a_.certify.empty()) certify(x, m);
    return m;
  }

  engine::SynthResultRecord record(const engine::ParallelismMatrix& x, const MatrixResult& m) const {
    const auto& r = m.s->r;
    engine::SynthResultRecord rec;
    rec.matrix = x;
    rec.hierarchy = m.hierarchy;
    rec.hierarchy_names = r.hierarchy.names;
    if (m.shape) rec.shape = m.shape->signature();
    rec.search_nodes = r.nodes;
    rec.search_applied = r.applied;
    if (!a_.certify.empty()) rec.certificates = m.certificates;
    rec.instructions = engine::instruction_records(r, m.shape ? &*m.shape : nullptr, a_.lowered);
    return rec;
  }

  engine::SynthHeader header() const { return {p_.system, p_.axes, p_.reduce, kind_, opt_.max_size, opt_.master}; }

  void print_table(const engine::ParallelismMatrix& x, const MatrixResult& m) const {
    const auto& r = m.s->r;
    fmt::print("matrix {}  hierarchy ({}) [{}] = [{}]: {} programs ({:.2f} ms{})\n", engine::format_matrix_brackets(x),
               engine::to_string(kind_), fmt::join(r.hierarchy.names, " "), fmt::join(m.hierarchy, " "),
               r.programs.size(), m.ms,
               m.shape            ? ", on the shape"
               : m.exact_fallback ? ", on the system: the shape theorem is not proved for this shape"
                                  : "");
    for (std::size_t i = 0; i < r.programs.size(); ++i) {
      if (a_.show >= 0 && i >= static_cast<std::size_t>(a_.show)) {
        fmt::print("  ... {} more (use --show or --json)\n", r.programs.size() - i);
        break;
      }
      fmt::print("  {:>4}  [{}] {}\n", i, r.programs[i].size(), m.s->programs[i].notation);
      if (a_.lowered)
        for (const auto& st :
             m.shape ? engine::lower_shape_program(*m.shape, r, r.programs[i]) : engine::lower(r, r.programs[i]))
          fmt::print("          {} {}\n", engine::to_string(st.collective), fmt::join(st.groups, " "));
    }
  }

  std::size_t certificates = 0;

 private:
  std::shared_ptr<const Synthesized> make(engine::SynthResult r) const {
    auto s = std::make_shared<Synthesized>();
    s->r = std::move(r);
    s->programs = engine::program_records(s->r);
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
    apply_solver_flags(a_.solver_flags, co.search);
    if (m.shape) {
      // The solvers run once per shape, on its smallest instance.
      const auto sig = m.shape->signature();
      const auto it = shape_runs_.find(sig);
      auto res = encodings::certify_shape_programs(p_.system, *m.shape, m.s->r, opt_, co,
                                                   it == shape_runs_.end() ? nullptr : &it->second);
      if (it == shape_runs_.end()) shape_runs_.emplace(sig, res.runs);
      m.certificates = std::move(res.files);
    } else {
      m.certificates = encodings::certify_programs(p_.system, p_.placement(x), m.s->r, opt_, co).files;
    }
    certificates += m.certificates.size();
#else
    throw Error("--certify needs the SMT encodings (p2v was built without Z3/cvc5)");
#endif
  }

  const SynthArgs& a_;
  const Problem& p_;
  engine::HierarchyKind kind_;
  engine::SynthOptions opt_;
  std::map<std::string, std::shared_ptr<const Synthesized>> by_shape_;
  std::set<std::string> warned_;  // shapes warned about (once each)
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
  if (!a.certify.empty()) prepare_certificate_dir(a.certify, a.force, "--certify");
#endif
  SynthRun run(a, p);
  const bool progress = !a.json && p.matrices.size() > 1 && isatty(2);
  static char outbuf[1 << 16];
  std::setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  // Streamed: one result at a time (a system's placements can have millions of programs).
  std::optional<engine::SynthWriter> writer;
  if (a.json) writer.emplace(stdout, run.header());
  std::size_t total = 0;
  for (std::size_t mi = 0; mi < p.matrices.size(); ++mi) {
    const auto& x = p.matrices[mi];
    if (progress) fmt::print(stderr, "[{}/{}] {}\r", mi + 1, p.matrices.size(), engine::format_matrix(x));
    const MatrixResult m = run.synthesize(x);
    total += m.s->r.programs.size();
    if (writer)
      writer->result(run.record(x, m), m.s->programs_json);
    else
      run.print_table(x, m);
  }
  if (progress) fmt::print(stderr, "\n");
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
    fmt::print("{} certificates written to {} (check them with: p2v check {})\n", run.certificates, a.certify,
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
  sub.add_option("--certify", a->certify,
                 "write one JSON certificate per program into DIR, after the solvers (--solver) reproduce "
                 "the enumerator's set and prove minimality and completeness");
  sub.add_option("--solver", a->solver, "with --certify: z3, cvc5 or both")->capture_default_str();
  sub.add_flag("--force", a->force,
               "with --certify: replace the certificates of an earlier run in DIR (the files its MANIFEST.json "
               "lists); without it a non-empty DIR is refused");
  sub.add_flag("--proofs", a->proofs, "with --certify: store cvc5's proofs of the unsat answers beside them");
  sub.add_option("--timeout", a->timeout_s, "with --certify: per solver check, seconds")->capture_default_str();
  sub.add_option("--jobs", a->jobs,
                 "with --certify: solver workers in all, each closing its share of the reachable states with a "
                 "solver of its own per kind, and helping the slower solver when its own is done (default 0: the "
                 "machine's cores)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--encoding", a->encoding,
                 "with --certify: the SMT encoding the solvers close the reachable states with: symbolic (per "
                 "level: fixed row digits and column sets per device class, for shapes' smallest instances), "
                 "concrete (state matrices), or auto (symbolic where it applies, from 4 devices)")
      ->capture_default_str();
  add_solver_flags(sub, a->solver_flags, "with --certify: ");
  return [a] { return run_synth(*a); };
});

}  // namespace
}  // namespace p2v::tools
