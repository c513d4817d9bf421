// resolve_jobs: `p2v run`'s options -> validated jobs (programs as level patterns).
#include "p2v/runtime/jobs.hpp"

#include <fmt/core.h>
#include <map>
#include <numeric>
#include <optional>

#include "p2v/engine/error.hpp"
#include "p2v/engine/infer_matrix.hpp"
#include "p2v/engine/notation.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/runtime/certificate.hpp"
#include "p2v/runtime/program_source.hpp"

namespace p2v::runtime {

namespace {

std::string format_list(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s + "]";
}

// Refuses (a)-(c) above the size the global state engine handles.
void check_global_size(std::int64_t n, engine::HierarchyKind kind) {
  if (n > engine::kMaxStateDevices)
    throw Error(
        fmt::format("programs of hierarchy ({}) are checked on the whole system, which the state engine "
                    "handles up to {} devices, and this system has {}; write the program against hierarchy "
                    "(d) (--hierarchy d), which runs at any size",
                    engine::to_string(kind), engine::kMaxStateDevices, n));
}

}  // namespace

ResolvedProgram resolve_patterns(const engine::System& sys, const engine::ParallelismMatrix& x,
                                 const std::vector<int>& reduce, engine::HierarchyKind kind,
                                 const std::string& notation, const engine::LoweredProgram& lowered) {
  const auto cards = sys.cardinalities();
  auto prog = std::make_shared<PatternProgram>();
  prog->grid = program_grid(cards, sys.level_names(), x, reduce, kind);
  prog->reduction = reduction_pattern(prog->grid, reduce);
  const std::int64_t n = prog->grid.num_devices();
  const bool shape = engine::is_reduction_kind(kind);
  if (!shape) check_global_size(n, kind);
  // The hierarchy the notation is resolved and checked on: the shape's smallest instance for (d),
  // the system's own hierarchy for (a)-(c) (and for a certificate's lists without notation).
  std::optional<engine::Placement> pl;
  auto real = [&]() {
    check_global_size(n, kind);
    if (!pl)
      pl.emplace(
          cards,
          [&] {
            std::vector<int> axes;
            for (const auto& row : x)
              axes.push_back(std::accumulate(row.begin(), row.end(), 1, std::multiplies<int>()));
            return axes;
          }(),
          x, reduce);
    return runtime::program_hierarchy(sys, *pl, kind);
  };
  const engine::SynthesisHierarchy h = shape ? engine::canonical_hierarchy(prog->grid) : real();
  ResolvedProgram r;
  r.notation = notation.empty() ? engine::program_notation(real(), lowered) : notation;
  const engine::LoweredProgram on_h = engine::resolve_program(h, r.notation);
  std::map<engine::LoweredStep, engine::Grouping> by_groups;
  for (const auto& in : engine::instructions(h, engine::MasterCollectives::All))
    by_groups.try_emplace({in.collective, engine::lower_groups(h, in.grouping.groups)}, in.grouping);
  for (const auto& st : on_h) {
    const auto& g = by_groups.at(st);
    prog->steps.push_back({st.collective, engine::group_pattern(prog->grid, g.slice, g.form, g.e)});
  }
  // Preconditions and goal.
  const Groups goal = shape ? Groups{[&] {
    std::vector<int> all(h.num_local());
    std::iota(all.begin(), all.end(), 0);
    return all;
  }()}
                            : pl->reduction_groups();
  const Plan check = make_plan(on_h, h.num_local(), goal);
  r.reaches_goal = check.reaches_goal;
  if (!r.reaches_goal)
    r.goal_failure = shape ? check.goal_failure + " on the shape's smallest instance" : check.goal_failure;
  if (!lowered.empty()) {
    engine::LoweredProgram mine;
    for (const auto& st : prog->steps) mine.push_back({st.collective, engine::lower_pattern(st.groups, prog->grid)});
    if (mine != lowered)
      throw Error(fmt::format("the program's device groups are not those of '{}' on this placement", r.notation));
  }
  r.program = std::move(prog);
  return r;
}

namespace {

struct Sources {
  std::optional<ProgramFile> file;
  std::optional<Certificate> cert;
  engine::HierarchyKind kind = engine::HierarchyKind::ReductionAxes;
};

Sources load_sources(const JobRequest& a, Jobs& out) {
  if (a.program.empty() == a.program_file.empty() && a.certificate.empty())
    throw Error("give exactly one of --program \"...\" and --program-file F (or --certificate F)");
  if (!a.program.empty() && !a.program_file.empty()) throw Error("give exactly one of --program and --program-file");
  if (!a.certificate.empty() && !a.program_file.empty())
    throw Error(
        "--certificate certifies one program: give it alone or with the same --program, not with "
        "--program-file");
  Sources s;
  if (!a.program_file.empty()) s.file = load_program_file(a.program_file);
  s.kind = engine::parse_hierarchy_kind(!a.hierarchy.empty()                        ? a.hierarchy
                                        : s.file && !s.file->hierarchy_kind.empty() ? s.file->hierarchy_kind
                                                                                    : "d");
  if (!a.certificate.empty()) {
    s.cert = load_certificate(a.certificate);
    if (!s.cert->checked) {
      if (!a.unchecked)
        throw Error(
            fmt::format("certificate '{}' does not pass the independent checker: {} "
                        "(--unchecked runs the program anyway)",
                        a.certificate, s.cert->reason));
      out.warning += fmt::format(
          "WARNING: certificate '{}' does NOT pass the checker ({}); running anyway because of "
          "--unchecked\n",
          a.certificate, s.cert->reason);
    }
  }
  return s;
}

// The problem: from the command line, else from the program file / certificate.
void load_problem(const JobRequest& a, const Sources& s, Jobs& out) {
  const auto& pf = s.file;
  const bool file_has_problem = pf && pf->is_json && pf->system && !pf->axes.empty() && !pf->reduce.empty();
  if (a.system.empty()) {
    if (file_has_problem) {
      out.system = *pf->system;
      out.axes = pf->axes;
      out.reduce = pf->reduce;
    } else if (s.cert && s.cert->system) {
      out.system = *s.cert->system;
      out.axes = s.cert->axes;
      out.reduce = s.cert->reduce;
    } else {
      throw Error(
          "--system, --axes and --reduce are required (unless --program-file is the --json "
          "output of p2v synth / p2v simulate, which names them)");
    }
    engine::check_axes(out.system.cardinalities(), out.axes);
    out.reduce = engine::check_reduce(out.reduce, out.axes.size());
    return;
  }
  if (a.axes.empty() || a.reduce.empty()) throw Error("--system needs --axes and --reduce");
  out.system = engine::parse_system_arg(a.system);
  out.axes = engine::parse_int_list(a.axes, "--axes");
  engine::check_axes(out.system.cardinalities(), out.axes);
  out.reduce = engine::check_reduce(engine::parse_axis_indices(a.reduce, "--reduce"), out.axes.size());
  if (file_has_problem && (pf->system->cardinalities() != out.system.cardinalities() || pf->axes != out.axes ||
                           engine::check_reduce(pf->reduce, out.axes.size()) != out.reduce))
    throw Error(
        fmt::format("--program-file '{}' is for system {} {} with axes {} reducing {}, not for --system {} {} "
                    "with axes {} reducing {}",
                    a.program_file, pf->system->name, format_list(pf->system->cardinalities()), format_list(pf->axes),
                    format_list(pf->reduce), out.system.name, format_list(out.system.cardinalities()),
                    format_list(out.axes), format_list(out.reduce)));
}

// Adds one job (resolving and validating its program).
void add_job(const JobRequest& a, const Sources& s, Jobs& out, const engine::ParallelismMatrix& x,
             const std::string& notation, const engine::LoweredProgram& lowered) {
  ResolvedProgram r = resolve_patterns(out.system, x, out.reduce, s.kind, notation, lowered);
  if (!r.reaches_goal) {
    if (!a.unchecked)
      throw Error(
          fmt::format("program '{}' on matrix {} does not reach the goal ({}); "
                      "--unchecked runs it anyway (the result check will then fail)",
                      r.notation, engine::format_matrix_brackets(x), r.goal_failure));
    out.warning += fmt::format(
        "WARNING: program '{}' does not reach the goal ({}); running it "
        "anyway because of --unchecked\n",
        r.notation, r.goal_failure);
  }
  out.jobs.push_back({r.notation, x, std::move(r.program)});
}

// --program without --matrix: the one placement of the axes on which the program is valid and
// reaches the goal; an error listing them when several fit (or none).
engine::ParallelismMatrix infer_matrix(const Sources& s, const Jobs& out, const std::string& notation) {
  const auto all = engine::enumerate_matrices(out.system.cardinalities(), out.axes);
  if (all.size() == 1) return all.front();
  constexpr std::size_t kMaxTried = 256;
  if (all.size() > kMaxTried)
    throw Error(fmt::format("--program needs --matrix: the axes have {} placements (see p2v matrices)", all.size()));
  return engine::infer_matrix(
      all, {"--program '" + notation + "'", "is not a program of", [&](const engine::ParallelismMatrix& x) {
              return resolve_patterns(out.system, x, out.reduce, s.kind, notation).reaches_goal;
            }});
}

// --program / --certificate: one job.
void add_single(const JobRequest& a, const Sources& s, Jobs& out,
                const std::optional<engine::ParallelismMatrix>& want) {
  const auto& cert = s.cert;
  engine::ParallelismMatrix x;
  if (want)
    x = *want;
  else if (cert && !cert->matrix.empty())
    x = cert->matrix;
  else
    x = infer_matrix(s, out, a.program);
  if (cert && !cert->matrix.empty() && cert->matrix != x)
    throw Error(fmt::format("certificate '{}' is for matrix {}, not {}", a.certificate,
                            engine::format_matrix_brackets(cert->matrix), engine::format_matrix_brackets(x)));
  if (a.program.empty() && cert->lowered.empty() && cert->notation.empty())
    throw Error(fmt::format("certificate '{}' holds no program", a.certificate));
  const std::string notation = !a.program.empty() ? a.program : cert->notation;
  try {
    add_job(a, s, out, x, notation, cert ? cert->lowered : engine::LoweredProgram{});
  } catch (const Error& e) {
    // The certificate's groups are not the given program's.
    if (cert && !a.program.empty() && std::string(e.what()).find("device groups are not") != std::string::npos)
      throw Error(fmt::format("certificate '{}' certifies a different program ('{}')", a.certificate, cert->notation));
    throw;
  }
  if (notation.empty()) out.jobs.back().notation = "certified program of " + a.certificate;
}

// --program-file: every program of every matching matrix, or with --top N the N best of each by
// predicted time (the programs `p2v simulate --top N` lists), which needs a ranked file.
void add_file(const JobRequest& a, const Sources& s, Jobs& out, const std::optional<engine::ParallelismMatrix>& want) {
  if (a.top > 0 && !s.file->ranked)
    throw Error(fmt::format(
        "--top {} runs the {} best programs of each matrix by predicted time, as p2v simulate --top {} lists them, "
        "and --program-file '{}' does not rank its programs (it is {}): rank them with p2v simulate ... --json "
        "> ranked.json and run --program-file ranked.json --top {}",
        a.top, a.top, a.top, a.program_file, s.file->is_json ? "p2v synth's output" : "a text file", a.top));
  const auto levels = out.system.cardinalities();
  for (const auto& set : s.file->sets) {
    engine::ParallelismMatrix x = set.matrix;
    if (x.empty()) {
      if (!want) throw Error("--program-file with plain programs needs --matrix");
      x = *want;
    } else {
      engine::check_matrix(x, levels, out.axes);
      if (want && x != *want) continue;
    }
    int taken = 0;
    for (const auto& np : set.programs) {
      if (a.top > 0 && taken >= a.top) break;
      add_job(a, s, out, x, np.notation, np.lowered);
      ++taken;
    }
  }
  if (out.jobs.empty())
    throw Error(want ? fmt::format("--program-file '{}' has no programs for matrix {}", a.program_file,
                                   engine::format_matrix_brackets(*want))
                     : fmt::format("--program-file '{}' has no programs", a.program_file));
}

}  // namespace

Jobs resolve_jobs(const JobRequest& a, std::int64_t ranks) {
  Jobs out;
  const Sources s = load_sources(a, out);
  load_problem(a, s, out);
  const auto levels = out.system.cardinalities();
  const std::int64_t n = out.system.num_devices();
  if (ranks >= 0 && n != ranks)
    throw Error(
        fmt::format("system '{}' {} has {} devices but {} ranks were launched: run with "
                    "mpirun -np {} (one rank per device)",
                    out.system.name, format_list(levels), n, ranks, n));
  std::optional<engine::ParallelismMatrix> want;
  if (!a.matrix.empty()) {
    want = engine::parse_matrix(a.matrix);
    engine::check_matrix(*want, levels, out.axes);
  }
  if (!a.program.empty() || (s.cert && a.program_file.empty()))
    add_single(a, s, out, want);
  else
    add_file(a, s, out, want);
  return out;
}

std::string check_against_global(const std::shared_ptr<const PatternProgram>& prog, std::int64_t rank) {
  const std::int64_t n = prog->num_ranks();
  if (n > engine::kMaxStateDevices)
    throw Error(
        fmt::format("the global plan is limited to {} ranks and this system has {}; compare plans on a "
                    "smaller system of the same shape",
                    engine::kMaxStateDevices, n));
  engine::LoweredProgram lowered;
  for (const auto& st : prog->steps) lowered.push_back({st.collective, engine::lower_pattern(st.groups, prog->grid)});
  const Plan global = make_plan(lowered, static_cast<int>(n), engine::lower_pattern(prog->reduction, prog->grid),
                                static_cast<int>(rank));
  return compare_views(rank_view(global, static_cast<int>(rank)), rank_view(make_rank_plan(prog, rank, true)));
}

}  // namespace p2v::runtime
