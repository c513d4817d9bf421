// p2v run: runs reduction programs on MPI ranks (or NCCL GPUs), checks the results against the
// state semantics and times them. Launch with mpirun, one rank per device of the system.
#include <fmt/core.h>
#include <CLI/CLI.hpp>
#include <optional>

#include "p2v/engine/error.hpp"
#include "p2v/engine/run_format.hpp"
#include "p2v/engine/units.hpp"

#include <nlohmann/json.hpp>

#ifdef P2V_HAVE_RUNTIME
#include <sys/resource.h>
#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <memory>
#include <new>
#include <sstream>
#include <system_error>
#include <thread>
#include <utility>

#include "p2v/engine/state.hpp"
#include "p2v/runtime/backend.hpp"
#include "p2v/runtime/coordinator.hpp"
#include "p2v/runtime/mpi/backends.hpp"
#include "p2v/runtime/mpi/session.hpp"
#include "p2v/runtime/rank_plan.hpp"
#include "p2v/runtime/run.hpp"
#endif

#include "command.hpp"
#include "common.hpp"
#include "p2v/runtime/jobs.hpp"
#include "sweep.hpp"
#ifdef P2V_HAVE_RUNTIME
#include <map>

#include "p2v/engine/progress.hpp"
#include "run_resume.hpp"
#endif

namespace p2v::tools {
namespace {

struct RunArgs {
  std::string bytes = "1M", dtype = "int32", backend = "mpi", csv, csv_programs, fault;
  int iters = 20, warmup = 5;
  bool no_verify = false, no_baseline = false, show_plan = false, check_plan = false, json = false;
  SweepArgs sweep;  // --bytes LIST|RANGE, -b/-e/-f/-i: every program at every size
  ProgressArgs progress;
  bool resume = false;  // skip the runs the --csv / --csv-programs files already hold
  int limit = 0;        // run at most this many (program, size) pairs, then stop (0: all)
};

#ifdef P2V_HAVE_RUNTIME

// The sizes of the run: --bytes (one size, a list or a range) or -b/-e/-f/-i; whole bytes.
std::vector<std::int64_t> run_sizes(const RunArgs& a) {
  std::vector<std::int64_t> out;
  for (double v : sweep_sizes(a.bytes, a.sweep, static_cast<double>(1LL << 40), /*whole=*/true))
    out.push_back(static_cast<std::int64_t>(v));
  return out;
}

// The runs already done (--resume), from the --csv / --csv-programs files.
using Done = std::map<std::string, DoneRun>;

std::string key_of(const RunArgs& a, const runtime::Jobs& pr, const runtime::Job& job, int ranks, std::int64_t bytes) {
  return run_key(pr.system.name, ranks, a.backend, a.dtype, a.iters, engine::format_matrix(job.matrix), job.notation,
                 runtime::buffer_bytes(bytes, job.program->num_ranks()));
}

std::string format_list(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s + "]";
}

void print_timing(const runtime::Timing& t, const std::string& label) {
  fmt::print("  {:<22} {:<34} {:>11} {:>10.1f} {:>10.1f} {:>10.1f} {:>9.3f} {:>9.3f}\n", label,
             t.groups.size() > 34 ? t.groups.substr(0, 31) + "..." : t.groups, t.bytes, t.t.min * 1e6, t.t.median * 1e6,
             t.t.max * 1e6, t.algbw, t.busbw);
}

// --json: one timing (seconds; bandwidths in GB/s = 1e9 bytes/s, as nccl-tests define them).
engine::RunTiming run_timing(const runtime::Timing& t) {
  return {t.what,  t.groups,   t.groups_list, t.group_size, t.num_groups, t.bytes,
          t.t.min, t.t.median, t.t.max,       t.algbw,      t.busbw};
}

// --json: the program's record (format p2v-run/1, engine/run_format.hpp).
engine::RunProgram run_program_record(const runtime::Job& job, std::int64_t bytes, const runtime::RunReport& rep,
                                      bool baseline) {
  engine::RunProgram o{job.notation, job.matrix, bytes, rep.ok, rep.failure, {}, {}, {}};
  if (!rep.ok) return o;
  o.failure.clear();
  for (const auto& t : rep.steps) o.steps.push_back(run_timing(t));
  o.total = run_timing(rep.total);
  if (baseline) o.baseline = run_timing(rep.baseline);
  return o;
}

std::string csv_quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

// --csv / --csv-programs append: the old file's content (a header is written first when it is new
// or empty) and the new rows are written together as a new file (tools::append_file: temporary,
// fsync, rename), so a failed write leaves the old file as it was and never a half-written row.
void append_csv(const std::string& path, const runtime::Jobs& pr, const runtime::Job& job,
                const runtime::RunReport& rep, const RunArgs& a, int ranks, const char* backend) {
  // The first four columns are what `p2v calibrate` reads (collective,groups,bytes,seconds).
  std::ostringstream out;
  auto row = [&](const std::string& step, const runtime::Timing& t) {
    out << t.what << ',' << csv_quote(t.groups_list) << ',' << t.bytes << ','
        << fmt::format("{:.9g},{:.9g},{:.9g},{:.6g},{:.6g}", t.t.median, t.t.min, t.t.max, t.algbw, t.busbw) << ','
        << csv_quote(t.groups) << ',' << csv_quote(pr.system.name) << ',' << ranks << ',' << backend << ',' << a.dtype
        << ',' << csv_quote(engine::format_matrix(job.matrix)) << ',' << csv_quote(job.notation) << ',' << step << ','
        << t.group_size << ',' << t.num_groups << ',' << a.iters << '\n';
  };
  // Per step, and the baseline AllReduce over the reduction groups; the program's total is not a
  // single collective, so it is written as a comment.
  for (std::size_t s = 0; s < rep.steps.size(); ++s) row(std::to_string(s + 1), rep.steps[s]);
  if (!a.no_baseline) row("baseline", rep.baseline);
  // The program's total, and what identifies the run for --resume (run_resume.hpp).
  out << fmt::format("# total,{},{},{:.9g},{},{},{},{},{},{},{},{:.9g}\n", csv_quote(rep.total.groups_list),
                     rep.total.bytes, rep.total.t.median, csv_quote(job.notation),
                     csv_quote(engine::format_matrix(job.matrix)), csv_quote(pr.system.name), ranks, backend, a.dtype,
                     a.iters, a.no_baseline ? 0.0 : rep.baseline.t.median);
  append_file(path,
              "collective,groups,bytes,seconds,seconds_min,seconds_max,algbw_GBps,busbw_GBps,"
              "description,system,ranks,backend,dtype,matrix,program,step,group_size,num_groups,"
              "iters\n",
              out.str(), "--csv file");
}

// One row per program (its total): what `p2v simulate --measured-programs` reads.
void append_program_csv(const std::string& path, const runtime::Jobs& pr, const runtime::Job& job,
                        const runtime::RunReport& rep, const RunArgs& a, int ranks, const char* backend) {
  // A run interrupted between its two appends is in this file and not in --csv; --resume runs it
  // again and must not record it here twice.
  if (a.resume && programs_csv_holds(path, run_key(pr.system.name, ranks, backend, a.dtype, a.iters,
                                                   engine::format_matrix(job.matrix), job.notation, rep.bytes)))
    return;
  std::ostringstream out;
  out << csv_quote(job.notation) << ',' << fmt::format("{:.9g}", rep.total.t.median) << ','
      << csv_quote(engine::format_matrix(job.matrix)) << ','
      << fmt::format("{:.9g},{:.9g},{:.9g}", rep.total.t.min, rep.total.t.max, rep.baseline.t.median) << ','
      << rep.bytes << ',' << csv_quote(pr.system.name) << ',' << ranks << ',' << backend << ',' << a.dtype << ','
      << a.iters << '\n';
  append_file(
      path, "program,seconds,matrix,seconds_min,seconds_max,baseline_seconds,bytes,system,ranks,backend,dtype,iters\n",
      out.str(), "--csv-programs file");
}

// --show-plan: the steps' groups and, on small systems, every rank's role (rank 0 computes the
// other ranks' plans for this; no run depends on it).
void show_plan(const runtime::Job& job, const runtime::RankPlan& mine) {
  const auto& prog = *job.program;
  const std::int64_t n = prog.num_ranks(), shown = std::min<std::int64_t>(n, 64);
  std::vector<runtime::RankPlan> plans;
  for (std::int64_t d = 0; d < shown; ++d)
    plans.push_back(d == mine.rank ? mine : runtime::make_rank_plan(job.program, d, false));
  for (std::size_t s = 0; s < prog.steps.size(); ++s) {
    fmt::print("  step {} {} on {}\n", s + 1, engine::to_string(prog.steps[s].collective),
               runtime::describe_pattern(prog.steps[s].groups, prog.grid));
    for (const auto& p : plans) {
      const auto& st = p.steps[s];
      const auto& rs = st.rs;
      fmt::print("    rank {:>3}: {} -> units {} (units of {} rows) in {}{}{}\n", p.rank,
                 rs.comm < 0 ? "idle"
                             : fmt::format("member {}/{} of group {}{}", rs.member, rs.group_size, st.comm.group,
                                           rs.in_place ? " in-place" : ""),
                 rs.after.rows.format(), p.rows_per_unit, runtime::to_string(rs.after.where),
                 rs.pre.empty() ? "" : fmt::format(", packs {} runs", runtime::total_blocks(rs.pre)),
                 rs.post.empty() ? "" : fmt::format(", unpacks {} runs", runtime::total_blocks(rs.post)));
    }
    if (shown < n) fmt::print("    ... ({} more ranks)\n", n - shown);
  }
  fmt::print("  rank 0: {} chunks grouped {} per unit; staging {} + {} units; {}\n", mine.k, mine.rows_per_unit,
             mine.stage_units[0], mine.stage_units[1],
             mine.strided
                 ? "rows and AllGather members as strided boxes (O(steps x levels) per rank)"
                 : "AllGather members listed (a ReduceScatter's blocks cross the digits: O(group size) per rank)");
}

void print_report(const RunArgs& a, const runtime::Jobs& pr, const runtime::Job& job, const runtime::RunReport& rep,
                  const runtime::RunOptions& opt, runtime::Backend& be, int size) {
  fmt::print("  {}: {} bytes per rank ({} chunks of {} elements)\n",
             opt.verify ? "verified after every step and against the goal" : "NOT verified (--no-verify)", rep.bytes,
             job.program->num_ranks(), rep.elems_per_row);
  fmt::print("  {:<22} {:<34} {:>11} {:>10} {:>10} {:>10} {:>9} {:>9}\n", "step", "groups", "bytes", "min(us)",
             "median(us)", "max(us)", "algbw", "busbw");
  for (std::size_t s = 0; s < rep.steps.size(); ++s)
    print_timing(rep.steps[s], fmt::format("{} {}", s + 1, rep.steps[s].what));
  print_timing(rep.total, "total");
  if (opt.baseline) {
    print_timing(rep.baseline, "baseline AllReduce");
    if (rep.baseline.t.median > 0)
      fmt::print("  program / baseline (medians): {:.3f}\n", rep.total.t.median / rep.baseline.t.median);
  }
  fmt::print("  communicator splits: {} (one per step with new groups, cached across steps and programs)\n",
             be.splits());
  // --csv-programs first: --resume counts a run as done once --csv holds it (run_resume.hpp).
  if (!a.csv_programs.empty()) append_program_csv(a.csv_programs, pr, job, rep, a, size, be.name());
  if (!a.csv.empty()) append_csv(a.csv, pr, job, rep, a, size, be.name());
}

// A measured (or, with --resume, recorded) program total at one size, for the sweep summary.
struct Measured {
  std::string program, matrix;
  double median_s = 0, baseline_s = 0;
  int group_size = 0;
};

// --bytes with several sizes: per size the fastest program, algbw/busbw as nccl-tests define them,
// and the crossover table (rank 0).
void print_sweep(const std::vector<std::int64_t>& sizes, const std::vector<std::vector<Measured>>& by_size,
                 bool several_matrices) {
  std::vector<SweepPoint> points;
  fmt::print(
      "\nsweep: per size the fastest program by median total (algbw = bytes / time; busbw = algbw x 2(n-1)/n, "
      "nccl-tests' AllReduce over the reduction groups of n; GB/s)\n");
  fmt::print("  {:>8}  {:>11} {:>8} {:>8}  {:>11} {:>8}  {}\n", "size", "median", "algbw", "busbw", "baseline",
             "speedup", "program");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto& v = by_size[i];
    if (v.empty()) continue;
    const auto best = std::min_element(v.begin(), v.end(),
                                       [](const Measured& x, const Measured& y) { return x.median_s < y.median_s; });
    const double S = static_cast<double>(sizes[i]);
    const double alg = algbw_GBps(S, best->median_s);
    const double speedup = best->baseline_s > 0 ? best->baseline_s / best->median_s : 1.0;
    const std::string label = several_matrices ? "[" + best->matrix + "] " + best->program : best->program;
    points.push_back({S, label, speedup});
    fmt::print("  {:>8}  {:>11} {:>8.3f} {:>8.3f}  {:>11} {:>7.2f}x  {}\n", engine::format_size(S),
               fmt::format("{:.1f} us", best->median_s * 1e6), alg, alg * allreduce_bus_factor(best->group_size),
               best->baseline_s > 0 ? fmt::format("{:.1f} us", best->baseline_s * 1e6) : std::string("-"), speedup,
               label);
  }
  if (!points.empty()) fmt::print("\n{}", crossover_table(points, "program", "baseline"));
}

// Runs every job at every size on this rank (rank 0 prints); returns the number of programs that
// failed the check. Each rank plans its own part of each program. Runs in `done` (--resume) are
// skipped; with --limit, at most that many runs happen.
// One process's pass over every (size, program) pair of a run: what it has measured so far, and the
// steps of each pair (skip what --resume found, stop at --limit, run, report on rank 0).
struct RunPass {
  const RunArgs& a;
  const runtime::Jobs& pr;
  runtime::RunOptions opt;
  runtime::Backend& be;
  runtime::Coordinator& co;
  const std::vector<std::int64_t>& sizes;
  const Done& done;
  int rank, size;
  engine::RunFile out;  // --json (rank 0): the run as one document (p2v-run/1), printed at the end
  int failures = 0, ran = 0;
  std::vector<std::vector<Measured>> by_size = std::vector<std::vector<Measured>>(sizes.size());
  int gmax = 1;  // the reduction groups' size

  RunPass(const RunArgs& a_, const runtime::Jobs& pr_, runtime::RunOptions opt_, runtime::Backend& be_,
          runtime::Coordinator& co_, const std::vector<std::int64_t>& sizes_, const Done& done_)
      : a(a_),
        pr(pr_),
        opt(std::move(opt_)),
        be(be_),
        co(co_),
        sizes(sizes_),
        done(done_),
        rank(co_.rank()),
        size(co_.size()) {}

  void begin() {
    out.system = pr.system.name;
    out.levels = pr.system.cardinalities();
    out.ranks = size;
    out.backend = be.name();
    out.axes = pr.axes;
    out.reduce = pr.reduce;
    out.dtype = runtime::to_string(opt.dtype);
    out.bytes = opt.bytes;
    out.iters = opt.iters;
    out.warmup = opt.warmup;
    out.verified = opt.verify;
    std::int64_t g = 1;
    for (int r : pr.reduce) g *= pr.axes[static_cast<std::size_t>(r)];
    gmax = static_cast<int>(g);
    if (rank != 0) return;
    if (!pr.warning.empty()) fmt::print(stderr, "{}", pr.warning);
    if (!a.json)
      fmt::print(
          "p2v run: system {} {} on {} ranks, backend {}, axes {}, reduce {}, dtype {}, {} warmup + {} "
          "timed iterations{}\n",
          pr.system.name, format_list(pr.system.cardinalities()), size, be.name(), format_list(pr.axes),
          format_list(pr.reduce), a.dtype, opt.warmup, opt.iters,
          sizes.size() > 1 ? fmt::format(", {} sizes from {} to {}", sizes.size(), engine::format_size(sizes.front()),
                                         engine::format_size(sizes.back()))
                           : "");
  }

  // Progress (rank 0): iterations in all, the checked run counted as one.
  std::uint64_t iterations_to_do() const {
    const std::uint64_t per_run = static_cast<std::uint64_t>((opt.verify ? 1 : 0) + opt.warmup + opt.iters);
    std::uint64_t todo = 0;
    for (const auto b : sizes)
      for (const auto& job : pr.jobs) todo += done.count(key_of(a, pr, job, size, b)) ? 0 : per_run;
    if (a.limit > 0) todo = std::min<std::uint64_t>(todo, per_run * static_cast<std::uint64_t>(a.limit));
    return todo;
  }

  std::string at_size(std::size_t si) const {
    return sizes.size() > 1 ? fmt::format(", {} per rank", engine::format_size(sizes[si])) : "";
  }

  // --resume: a run the CSV files already hold is reported from them, not run again.
  bool skipped(std::size_t si, std::size_t i) {
    const runtime::Job& job = pr.jobs[i];
    const auto it = done.find(key_of(a, pr, job, size, sizes[si]));
    if (it == done.end()) return false;
    if (rank == 0) {
      if (!a.json)
        fmt::print("\nprogram {}/{} on matrix {}{}: {}\n  already measured (--resume): median {:.1f} us; skipped\n",
                   i + 1, pr.jobs.size(), engine::format_matrix_brackets(job.matrix), at_size(si), job.notation,
                   it->second.median_s * 1e6);
      by_size[si].push_back(
          {job.notation, engine::format_matrix(job.matrix), it->second.median_s, it->second.baseline_s, gmax});
    }
    return true;
  }

  // --check-plan: false (and one failure) when a rank's own plan differs from the global plan.
  bool plan_checked(const runtime::Job& job) {
    if (!a.check_plan) return true;
    const std::string diff = runtime::check_against_global(job.program, rank);
    const int first = co.agree(!diff.empty());
    if (first < 0) return true;
    if (rank == first)
      fmt::print(stderr,
                 "p2v run: --check-plan: for program '{}', rank {}'s own plan differs from its part of the "
                 "global plan: {}\n",
                 job.notation, rank, diff);
    ++failures;
    return false;
  }

  void announce(std::size_t si, std::size_t i, const runtime::RankPlan& plan, engine::Progress& progress) const {
    if (rank != 0) return;
    const runtime::Job& job = pr.jobs[i];
    progress.note(fmt::format("program {}/{}{}", i + 1, pr.jobs.size(),
                              sizes.size() > 1 ? " at " + engine::format_size(sizes[si]) : ""));
    if (!a.json) {
      fmt::print("\nprogram {}/{} on matrix {}{}: {}\n", i + 1, pr.jobs.size(),
                 engine::format_matrix_brackets(job.matrix), at_size(si), job.notation);
      if (a.check_plan) fmt::print("  --check-plan: every rank's own plan equals its part of the global plan\n");
      if (a.show_plan) show_plan(job, plan);
    }
    std::fflush(stdout);
  }

  // Rank 0 reports a finished run: the JSON record, the CSV rows (as measured) or the table.
  void record(std::size_t si, const runtime::Job& job, const runtime::RunReport& rep) {
    if (rank == 0 && a.json) out.programs.push_back(run_program_record(job, sizes[si], rep, opt.baseline));
    if (!rep.ok) {
      ++failures;
      if (rank == 0) {
        std::fflush(stdout);
        fmt::print(stderr, "p2v run: RESULT MISMATCH for program '{}':\n{}\n", job.notation, rep.failure);
      }
      return;
    }
    if (rank == 0) {
      if (a.json) {
        if (!a.csv_programs.empty()) append_program_csv(a.csv_programs, pr, job, rep, a, size, be.name());
        if (!a.csv.empty()) append_csv(a.csv, pr, job, rep, a, size, be.name());
      } else {
        print_report(a, pr, job, rep, opt, be, size);
      }
      by_size[si].push_back({job.notation, engine::format_matrix(job.matrix), rep.total.t.median,
                             opt.baseline ? rep.baseline.t.median : 0.0, gmax});
    }
    std::fflush(stdout);
  }

  void summary() const {
    if (rank != 0) return;
    bool several_matrices = false;
    for (const auto& job : pr.jobs) several_matrices |= job.matrix != pr.jobs.front().matrix;
    const std::size_t runs = pr.jobs.size() * sizes.size();
    if (a.json)
      fmt::print("{}\n", engine::to_json(out).dump(2));
    else if (sizes.size() > 1)
      print_sweep(sizes, by_size, several_matrices);
    const std::string what = sizes.size() == 1
                                 ? fmt::format("{} programs", runs)
                                 : fmt::format("{} runs ({} programs x {} sizes)", runs, pr.jobs.size(), sizes.size());
    if (failures)
      fmt::print(stderr, "p2v run: {} of {} FAILED the result check\n", failures, what);
    else if (runs > 1 && !a.json)
      fmt::print("\nall {} verified{}\n", what, done.empty() ? "" : " (skipped ones: in an earlier run)");
  }
};

int run_jobs(const RunArgs& a, const runtime::Jobs& pr, runtime::RunOptions opt, runtime::Backend& be,
             runtime::Coordinator& co, const std::vector<std::int64_t>& sizes, const Done& done) {
  RunPass pass(a, pr, std::move(opt), be, co, sizes, done);
  pass.begin();
  engine::Progress progress("run: iterations", pass.iterations_to_do(), pass.rank == 0 && a.progress.wanted());
  if (pass.rank == 0) pass.opt.on_iteration = [&progress] { progress.add(); };
  for (std::size_t si = 0; si < sizes.size(); ++si) {
    pass.opt.bytes = sizes[si];
    for (std::size_t i = 0; i < pr.jobs.size(); ++i) {
      if (pass.skipped(si, i)) continue;
      if (a.limit > 0 && pass.ran >= a.limit) {
        if (pass.rank == 0 && !a.json) fmt::print("\n--limit {}: stopped; rerun with --resume to go on\n", a.limit);
        if (pass.rank == 0 && a.json) fmt::print("{}\n", engine::to_json(pass.out).dump(2));
        return pass.failures;
      }
      ++pass.ran;
      const runtime::Job& job = pr.jobs[i];
      const runtime::RankPlan plan = runtime::make_rank_plan(job.program, pass.rank, pass.opt.verify);
      if (!pass.plan_checked(job)) continue;
      pass.announce(si, i, plan, progress);
      pass.record(si, job, runtime::run_program(plan, be, pass.opt, co));
    }
  }
  progress.finish();
  pass.summary();
  return pass.failures;
}

// An exception that ends a run in a device thread or an MPI rank: exit code and message. A user's
// error (p2v::Error, out of memory, a standard output that cannot be written) is 2, anything else
// a bug (3).
std::pair<int, std::string> classify(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return {2, "error: out of memory (try a smaller --bytes)"};
  if (dynamic_cast<const Error*>(&e) != nullptr) return {2, std::string("error: ") + e.what()};
  if (const auto* se = dynamic_cast<const std::system_error*>(&e); se != nullptr && std::ferror(stdout))
    return {2, "error: cannot write standard output: " + se->code().message()};
  return {3, std::string("internal error: ") + e.what()};
}

// One process, one thread per device: --backend threads, or --backend nccl without mpirun.
int run_threads(const RunArgs& a, const runtime::Jobs& pr, const runtime::RunOptions& opt,
                const std::vector<std::int64_t>& sizes, const Done& done) {
  const int n = static_cast<int>(pr.system.num_devices());
  std::string id;
  if (a.backend == "nccl") {
    std::string why;
    const int gpus = runtime::cuda_device_count(&why);
    if (gpus < 1)
      throw Error(
          fmt::format("the NCCL backend needs CUDA GPUs: {}; use --backend mpi (under mpirun) or "
                      "--backend threads on machines without GPUs",
                      why));
    if (gpus < n)
      throw Error(
          fmt::format("NCCL in one process drives one GPU per device: the system has {} devices but {} "
                      "GPUs are visible; launch under mpirun across nodes instead",
                      n, gpus));
    id = runtime::nccl_unique_id();
  }
  auto team = runtime::make_thread_team(n);
  auto fabric = runtime::make_thread_fabric(n);
  std::vector<int> fails(n, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    auto body = [&, i] {
      try {
        auto be = a.backend == "nccl" ? runtime::make_nccl_backend_local(i, n, i, id, opt.dtype)
                                      : runtime::make_thread_backend(fabric, i, opt.dtype);
        fails[i] = run_jobs(a, pr, opt, *be, *team[i], sizes, done);
      } catch (const std::exception& e) {
        // The other threads may wait for this one in a barrier: end the process, keeping the
        // error contract (exit 2 for a user's error, 3 for a bug).
        const auto [code, message] = classify(e);
        std::fflush(stdout);
        fmt::print(stderr, "p2v: {} (device thread {})\n", message, i);
        std::fflush(stderr);
        std::_Exit(code);
      }
    };
    try {
      threads.emplace_back(body);
    } catch (const std::system_error& e) {
      // The threads already started wait for this one in a barrier: joining them would hang.
      std::fflush(stdout);
      fmt::print(
          stderr,
          "p2v: error: cannot start device thread {} of {}: {} (use --backend mpi under mpirun for large systems)\n",
          i + 1, n, e.code().message());
      std::fflush(stderr);
      std::_Exit(2);
    }
  }
  for (auto& t : threads) t.join();
  return fails[0] ? 1 : 0;
}

runtime::RunOptions run_options(const RunArgs& a, std::vector<std::int64_t>& sizes) {
  runtime::RunOptions opt;
  sizes = run_sizes(a);
  opt.bytes = sizes.back();  // the largest: what check_memory must fit
  opt.dtype = runtime::parse_dtype(a.dtype);
  opt.iters = a.iters;
  opt.warmup = a.warmup;
  if (a.iters < 1 || a.warmup < 0) throw Error("--iters must be >= 1 and --warmup >= 0");
  opt.verify = !a.no_verify;
  opt.baseline = !a.no_baseline;
  if (!a.fault.empty()) {
    const auto c = a.fault.find(':');
    if (c == std::string::npos)
      throw Error("--inject-fault '" + a.fault + "': expected STEP:RANK (STEP from 1, RANK from 0), e.g. 2:5");
    opt.fault_step =
        static_cast<int>(engine::parse_integer(a.fault.substr(0, c), "--inject-fault STEP", 1, 1 << 20)) - 1;
    opt.fault_rank = static_cast<int>(engine::parse_integer(a.fault.substr(c + 1), "--inject-fault RANK", 0, 1 << 30));
    if (a.no_verify)
      throw Error("--inject-fault needs the checked run: without it nothing would detect the fault (drop --no-verify)");
  }
  if (a.backend != "mpi" && a.backend != "nccl" && a.backend != "threads")
    throw Error("--backend '" + a.backend + "': use mpi, nccl or threads");
  return opt;
}

// --inject-fault STEP:RANK must name a step of every program to run (1-based) and a rank (0-based,
// one per device) that holds data after that step, or the fault would silently not happen.
void check_fault(const runtime::RunOptions& opt, const runtime::Jobs& jobs) {
  if (opt.fault_step < 0) return;
  const std::int64_t ranks = jobs.system.num_devices();
  if (opt.fault_rank >= ranks)
    throw Error(fmt::format("--inject-fault {}:{}: RANK is a rank from 0 to {} (the system has {} devices)",
                            opt.fault_step + 1, opt.fault_rank, ranks - 1, ranks));
  for (const auto& job : jobs.jobs) {
    const std::size_t steps = job.program->steps.size();
    if (static_cast<std::size_t>(opt.fault_step) >= steps)
      throw Error(fmt::format("--inject-fault {}:{}: STEP is a step from 1 to {} of program '{}'", opt.fault_step + 1,
                              opt.fault_rank, steps, job.notation));
    const runtime::RankPlan plan = runtime::make_rank_plan(job.program, opt.fault_rank, false);
    if (plan.steps[static_cast<std::size_t>(opt.fault_step)].rs.after.rows.empty())
      throw Error(
          fmt::format("--inject-fault {}:{}: rank {} holds no data after step {} of program '{}'; pick "
                      "another rank or step",
                      opt.fault_step + 1, opt.fault_rank, opt.fault_rank, opt.fault_step + 1, job.notation));
  }
}

// The buffers are allocated before anything runs: refuse sizes that cannot fit in memory now,
// with the numbers, rather than fail in the allocator. Each device holds at least its buffer, the
// pristine copy the check compares against and, when verifying, one more for the expected data.
void check_memory(const runtime::RunOptions& opt, const runtime::Jobs& jobs, bool threads) {
  const std::int64_t devices = threads ? jobs.system.num_devices() : 1;
  const double per_device = static_cast<double>(opt.bytes) * (opt.verify ? 3 : 2);
  const double need = per_device * static_cast<double>(devices);
  const double pages = static_cast<double>(::sysconf(_SC_PHYS_PAGES));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  double limit = pages > 0 && page > 0 ? pages * page : 0;
  std::string what = "the machine's memory";
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      (limit == 0 || static_cast<double>(rl.rlim_cur) < limit)) {
    limit = static_cast<double>(rl.rlim_cur);
    what = "the address-space limit (ulimit -v)";
  }
  if (limit > 0 && need > limit)
    throw Error(
        fmt::format("--bytes {}: {} device{} in this process x {} buffers of {} bytes = {:.4g} GB, more than "
                    "{} ({:.4g} GB); use a smaller --bytes{}",
                    opt.bytes, devices, devices == 1 ? "" : "s", opt.verify ? 3 : 2, opt.bytes, need / 1e9, what,
                    limit / 1e9, threads ? " or run under mpirun across machines" : ""));
}

// What every rank must agree on before the first collective: the resolved programs (after reading
// any files) and the options that shape the collectives; one item per line. The CSV paths are
// left out: only rank 0 writes them.
std::string describe_run(const RunArgs& a, const runtime::RunOptions& opt, const runtime::Jobs& jobs,
                         const std::vector<std::int64_t>& sizes, const Done& done) {
  std::string d =
      fmt::format("system {} {}\naxes {}\nreduce {}\n", jobs.system.name, format_list(jobs.system.cardinalities()),
                  format_list(jobs.axes), format_list(jobs.reduce));
  std::string list;
  for (const auto b : sizes) list += (list.empty() ? "" : ",") + std::to_string(b);
  d += fmt::format("--backend {}\n--bytes {}\n--dtype {}\n--iters {}\n--warmup {}\n", a.backend, list, a.dtype,
                   opt.iters, opt.warmup);
  d += fmt::format("--limit {}\n--resume: {} runs done\n", a.limit, done.size());
  d += fmt::format("--no-verify {}\n--no-baseline {}\n--check-plan {}\n--show-plan {}\n--inject-fault {}\n",
                   a.no_verify, a.no_baseline, a.check_plan, a.show_plan, a.fault.empty() ? "none" : a.fault);
  d += fmt::format("{} programs\n", jobs.jobs.size());
  for (std::size_t i = 0; i < jobs.jobs.size(); ++i)
    d += fmt::format("program {}: {} on matrix {}\n", i + 1, jobs.jobs[i].notation,
                     engine::format_matrix(jobs.jobs[i].matrix));
  return d;
}

// Runs `f` on every rank; if it throws on any, every rank returns false (agreed before any rank
// could enter a collective alone) and the lowest failing rank prints its error.
template <class F>
bool agreed(runtime::Coordinator& co, F&& f) {
  std::string error;
  try {
    f();
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "unknown error";
  }
  const int first = co.agree(!error.empty());
  if (first < 0) return true;
  if (co.rank() == first) {
    std::fflush(stdout);
    fmt::print(stderr, "p2v: error{}: {}\n", co.size() > 1 && first != 0 ? fmt::format(" (rank {})", first) : "",
               error);
  }
  return false;
}

int run_command(const RunArgs& a, const runtime::JobRequest& req) {
  const runtime::MpiSession mpi;
  MPI_Comm world = MPI_COMM_WORLD;
  auto co = runtime::make_mpi_coordinator(world);
  const int rank = co->rank(), size = co->size();
  // --backend threads, or nccl in a single process: one thread per device.
  const bool threads = a.backend == "threads" || (a.backend == "nccl" && size == 1);

  // Phase 1, local: parse, resolve, validate. Then agree, so that no rank enters a collective alone.
  runtime::Jobs jobs;
  runtime::RunOptions opt;
  std::vector<std::int64_t> sizes;
  Done done;
  if (!agreed(*co, [&] {
        opt = run_options(a, sizes);
        if (a.resume) {
          if (a.csv.empty() && a.csv_programs.empty())
            throw Error("--resume reads what is done from --csv or --csv-programs: give one of them");
          done = completed_runs(a.csv, a.csv_programs);
        }
        if (a.limit < 0) throw Error(fmt::format("--limit {}: must be 0 (no limit) or positive", a.limit));
        if (a.backend == "threads" && size != 1)
          throw Error("--backend threads runs every device as a thread of one process: launch it without mpirun");
        jobs = runtime::resolve_jobs(req, threads ? -1 : size);
        check_fault(opt, jobs);
        check_memory(opt, jobs, threads);
        if (a.check_plan && jobs.system.num_devices() > engine::kMaxStateDevices)
          throw Error(
              fmt::format("--check-plan compares with the global plan, which handles at most {} ranks, and "
                          "this system has {}; drop --check-plan or check a smaller system of the same shape",
                          engine::kMaxStateDevices, jobs.system.num_devices()));
      }))
    return 2;
  // Every rank must run the same programs with the same options, or they would wait in different
  // collectives forever (e.g. one rank splitting a communicator while another is in a barrier).
  if (!threads &&
      !co->agree_or_report(describe_run(a, opt, jobs, sizes, done), "a different program or options", " and files"))
    return 2;
  if (threads) {
    try {
      return run_threads(a, jobs, opt, sizes, done);
    } catch (const Error& e) {
      fmt::print(stderr, "p2v: error: {}\n", e.what());
      return 2;
    }
  }
  // Phase 2, collective. The backend agrees on its own availability (NCCL: a GPU per rank).
  std::unique_ptr<runtime::Backend> be;
  if (!agreed(*co, [&] {
        be = a.backend == "nccl" ? runtime::make_nccl_backend(world, opt.dtype)
                                 : runtime::make_mpi_backend(world, opt.dtype);
      }))
    return 2;
  int failures = 0;
  try {
    failures = run_jobs(a, jobs, opt, *be, *co, sizes, done);
  } catch (const std::exception& e) {
    // A failure inside the collective phase may leave other ranks waiting: abort them all, with
    // exit code 2 for a user's error (a --csv file that cannot be written, no memory).
    const auto [code, message] = classify(e);
    std::fflush(stdout);
    fmt::print(stderr, "p2v: {} (rank {})\n", message, rank);
    std::fflush(stderr);
    MPI_Abort(world, code);
  }
  be.reset();
  return failures ? 1 : 0;
}

#endif

Registrar reg("run", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<RunArgs>();
  auto r = std::make_shared<runtime::JobRequest>();
  auto preset = std::make_shared<std::string>();
  add_system_options(sub, r->system, *preset);
  sub.add_option("--axes", r->axes, "parallelism axis sizes, e.g. 4,4");
  sub.add_option("--reduce", r->reduce, "reduction axis indices (0-based), e.g. 1");
  sub.add_option("--matrix", r->matrix, "the parallelism matrix, rows separated by ';'");
  sub.add_option("--program", r->program,
                 "a program, e.g. \"ReduceScatter@(gpu,Inside) ; AllReduce@(gpu,Parallel(root)) ; "
                 "AllGather@(gpu,Inside)\"");
  sub.add_option("--program-file", r->program_file,
                 "programs, one per line, or the --json output of p2v synth / p2v simulate");
  sub.add_option("--hierarchy", r->hierarchy,
                 "hierarchy the program notation refers to: a, b, c, d or d-uncollapsed (default: the "
                 "program file's, else d)");
  sub.add_option("--top", r->top,
                 "the N best programs of each matrix by predicted time, as p2v simulate --top N lists them: run "
                 "them (needs a --program-file written by p2v simulate --json; N >= 1, or -1: all)");
  sub.add_option("--certificate", r->certificate,
                 "run only if this certificate passes the independent checker (its program if none is given)");
  sub.add_flag("--unchecked", r->unchecked,
               "run even if the certificate fails or the program misses the goal (loudly)");
  sub.add_option("--bytes", a->bytes,
                 "buffer size per rank, e.g. 1048576, 64K, 1M, 64M; a list (1K,1M) or a range (1K:64M:x4) runs every "
                 "program at every size and ends with the crossover table")
      ->capture_default_str();
  add_sweep_options(sub, a->sweep);
  add_progress_options(sub, a->progress);
  sub.add_flag("--resume", a->resume,
               "skip the (program, matrix, size) runs the --csv / --csv-programs files already hold (an interrupted "
               "sweep goes on where it stopped)");
  sub.add_option("--limit", a->limit, "run at most N (program, size) pairs, then stop (batches with --resume)");
  sub.add_option("--iters", a->iters, "timed iterations")->capture_default_str();
  sub.add_option("--warmup", a->warmup, "untimed warmup iterations")->capture_default_str();
  add_dtype_option(sub, a->dtype, "element type: i32 (int32, int) or f32 (float32, float); all spellings")
      ->capture_default_str();
  sub.add_flag("--json", a->json,
               "machine-readable output (format p2v-run/1, docs/formats.md) on rank 0, printed when the run ends");
  sub.add_option("--backend", a->backend,
                 "mpi (one rank per device, under mpirun), nccl (one GPU per rank under mpirun, or all "
                 "GPUs of one process without mpirun) or threads (one process, a thread per device, host "
                 "memory)")
      ->capture_default_str();
  sub.add_option("--csv", a->csv,
                 "append per-step and baseline rows (collective,groups,bytes,seconds,...) to this CSV: what "
                 "p2v calibrate reads");
  sub.add_option("--csv-programs", a->csv_programs,
                 "append one row per program (program,seconds,matrix,...): what p2v simulate "
                 "--measured-programs reads");
  sub.add_flag("--no-verify", a->no_verify, "skip the checked run");
  sub.add_flag("--no-baseline", a->no_baseline, "skip the baseline AllReduce");
  sub.add_flag("--show-plan", a->show_plan, "print the steps' groups and the roles and rows of (up to 64) ranks");
  sub.add_flag("--check-plan", a->check_plan,
               "debug: compare every rank's own plan with the global plan (at most 512 ranks) before running");
  sub.add_option("--inject-fault", a->fault,
                 "testing: corrupt one element on RANK (0-based, one rank per device) after STEP (1-based step of each "
                 "program), e.g. 2:5; the checked run must then report the mismatch (exit 1)");
  const CLI::Option* bytes = sub.get_option("--bytes");
  const CLI::Option* top = sub.get_option("--top");
  return [a, r, preset, bytes, top]() -> int {
    if (a->sweep.given() && bytes->count() == 0) a->bytes.clear();  // -b/-e/-f instead of the default --bytes
    // --preset NAME alone: one node of the preset (tools::load_system); the run needs only its levels.
    if (r->system.empty() && !preset->empty()) {
      const auto s = load_system("", *preset);
      for (const auto& l : s.levels)
        r->system += fmt::format("{}{}={}", r->system.empty() ? "" : ",", l.name, l.cardinality);
    }
    if (!r->system.empty() && !preset->empty()) (void)load_system(r->system, *preset);  // checks the name
    if (a->json && a->show_plan) throw Error("--show-plan prints tables; it does not go with --json");
    if (top->count() > 0 && (r->top < -1 || r->top == 0))
      throw Error(fmt::format("--top {}: expected a number of programs (1 or more), or -1 for all", r->top));
    if (top->count() > 0 && r->program_file.empty())
      throw Error("--top N picks the best programs of a --program-file written by p2v simulate --json: give one");
    if (r->top < 0) r->top = 0;  // all
#ifdef P2V_HAVE_RUNTIME
    return run_command(*a, *r);
#else
        throw Error("this p2v was built without the runtime (MPI not found or P2V_WITH_MPI=OFF)");
#endif
  };
});

}  // namespace
}  // namespace p2v::tools
