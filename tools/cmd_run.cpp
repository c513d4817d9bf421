// p2v run: runs reduction programs on MPI ranks (or NCCL GPUs), checks the results against the
// state semantics and times them. Launch with mpirun, one rank per device of the system.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <optional>

#include "p2v/engine/error.hpp"

#ifdef HAVE_P2V_RUNTIME
#include <cstdio>
#include <fstream>
#include <memory>
#include <mpi.h>
#include <thread>

#include "p2v/runtime/backend.hpp"
#include "p2v/runtime/certificate.hpp"
#include "p2v/runtime/coordinator.hpp"
#include "p2v/runtime/plan.hpp"
#include "p2v/runtime/program_source.hpp"
#include "p2v/runtime/run.hpp"
#endif

#include "command.hpp"
#ifdef HAVE_P2V_RUNTIME
#include "p2v/runtime/mpi_session.hpp"
#endif
#include "p2v/engine/units.hpp"
#include <cmath>
#include "common.hpp"

namespace p2v::tools {
namespace {

struct RunArgs {
  std::string system, axes, reduce, matrix;
  std::string program, program_file, certificate, hierarchy;
  std::string bytes = "1M", dtype = "int32", backend = "mpi", csv, csv_programs, fault;
  int iters = 20, warmup = 5, top = 0;
  bool unchecked = false, no_verify = false, no_baseline = false, show_plan = false;
};

#ifdef HAVE_P2V_RUNTIME

std::int64_t parse_bytes(const std::string& s) {
  const double v = engine::parse_size(s, "--bytes", static_cast<double>(1LL << 40));
  if (v != std::floor(v)) throw Error("--bytes '" + s + "': not a whole number of bytes");
  return static_cast<std::int64_t>(v);
}

// One program to run on one placement.
struct Job {
  std::string notation;
  engine::ParallelismMatrix matrix;
  engine::LoweredProgram lowered;
  runtime::Plan plan;
};

struct Prepared {
  engine::System system;
  std::vector<int> axes, reduce;
  std::vector<Job> jobs;
  std::string warning;  // printed by rank 0
};

std::string format_list(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

Prepared prepare(const RunArgs& a, int rank, int world) {
  Prepared pr;
  if (a.program.empty() == a.program_file.empty() && a.certificate.empty())
    throw Error("give exactly one of --program \"...\" and --program-file F (or --certificate F)");
  if (!a.program.empty() && !a.program_file.empty())
    throw Error("give exactly one of --program and --program-file");
  if (!a.certificate.empty() && !a.program_file.empty())
    throw Error("--certificate certifies one program: give it alone or with the same --program, not with "
                "--program-file");
  std::optional<runtime::ProgramFile> pf;
  std::optional<runtime::Certificate> cert;
  if (!a.program_file.empty()) pf = runtime::load_program_file(a.program_file);
  const auto kind = engine::parse_hierarchy_kind(
      !a.hierarchy.empty() ? a.hierarchy : pf && !pf->hierarchy_kind.empty() ? pf->hierarchy_kind : "d");
  if (!a.certificate.empty()) {
    cert = runtime::load_certificate(a.certificate);
    if (!cert->checked) {
      if (!a.unchecked)
        throw Error(fmt::format("certificate '{}' does not pass the independent checker: {} "
                                "(--unchecked runs the program anyway)", a.certificate, cert->reason));
      pr.warning += fmt::format(
          "WARNING: certificate '{}' does NOT pass the checker ({}); running anyway because of "
          "--unchecked\n", a.certificate, cert->reason);
    }
  }

  // The problem: from the command line, else from the program file / certificate.
  ProblemArgs pa{a.system, a.axes, a.reduce, a.matrix, true};
  const bool file_has_problem = pf && pf->is_json && pf->system && !pf->axes.empty() && !pf->reduce.empty();
  if (a.system.empty()) {
    if (file_has_problem) {
      pr.system = *pf->system;
      pr.axes = pf->axes;
      pr.reduce = pf->reduce;
    } else if (cert && cert->system) {
      pr.system = *cert->system;
      pr.axes = cert->axes;
      pr.reduce = cert->reduce;
    } else {
      throw Error("--system, --axes and --reduce are required (unless --program-file is the --json "
                  "output of p2v synth / p2v simulate, which names them)");
    }
    engine::check_axes(pr.system.cardinalities(), pr.axes);
    pr.reduce = engine::check_reduce(pr.reduce, pr.axes.size());
  } else {
    if (a.axes.empty() || a.reduce.empty()) throw Error("--system needs --axes and --reduce");
    Problem p = load_problem(pa);
    pr.system = p.system;
    pr.axes = p.axes;
    pr.reduce = p.reduce;
    if (file_has_problem) {
      if (pf->system->cardinalities() != pr.system.cardinalities() || pf->axes != pr.axes ||
          engine::check_reduce(pf->reduce, pr.axes.size()) != pr.reduce)
        throw Error(fmt::format(
            "--program-file '{}' is for system {} {} with axes {} reducing {}, not for --system {} {} "
            "with axes {} reducing {}",
            a.program_file, pf->system->name, format_list(pf->system->cardinalities()),
            format_list(pf->axes), format_list(pf->reduce), pr.system.name,
            format_list(pr.system.cardinalities()), format_list(pr.axes), format_list(pr.reduce)));
    }
  }
  const auto levels = pr.system.cardinalities();
  const std::int64_t n = pr.system.num_devices();
  if (world < 0) world = static_cast<int>(n);  // one thread per device
  if (n != world)
    throw Error(fmt::format("system '{}' {} has {} devices but {} ranks were launched: run with "
                            "mpirun -np {} (one rank per device)",
                            pr.system.name, format_list(levels), n, world, n));

  std::optional<engine::ParallelismMatrix> want;
  if (!a.matrix.empty()) {
    want = engine::parse_matrix(a.matrix);
    engine::check_matrix(*want, levels, pr.axes);
  }
  auto add = [&](const engine::ParallelismMatrix& x, const std::string& notation,
                 engine::LoweredProgram lowered) {
    Job j;
    j.notation = notation;
    j.matrix = x;
    engine::Placement pl(levels, pr.axes, x, pr.reduce);
    if (lowered.empty()) {
      const auto h = runtime::program_hierarchy(pr.system, pl, kind);
      lowered = runtime::resolve_program(h, notation);
    }
    j.lowered = std::move(lowered);
    j.plan = runtime::make_plan(j.lowered, world, pl.reduction_groups(), rank);
    if (!j.plan.reaches_goal) {
      if (!a.unchecked)
        throw Error(fmt::format("program '{}' on matrix {} does not reach the goal ({}); "
                                "--unchecked runs it anyway (the result check will then fail)",
                                notation, engine::format_matrix_brackets(x), j.plan.goal_failure));
      pr.warning += fmt::format("WARNING: program '{}' does not reach the goal ({}); running it "
                                "anyway because of --unchecked\n", notation, j.plan.goal_failure);
    }
    pr.jobs.push_back(std::move(j));
  };

  if (!a.program.empty() || (cert && a.program_file.empty())) {
    engine::ParallelismMatrix x;
    if (want) x = *want;
    else if (cert && !cert->matrix.empty()) x = cert->matrix;
    else throw Error("--program needs --matrix (one parallelism matrix, e.g. \"1 2 1 2;1 1 2 2\")");
    if (cert && !cert->matrix.empty() && cert->matrix != x)
      throw Error(fmt::format("certificate '{}' is for matrix {}, not {}", a.certificate,
                              engine::format_matrix_brackets(cert->matrix), engine::format_matrix_brackets(x)));
    if (!a.program.empty()) {
      add(x, a.program, {});
      if (cert && !cert->lowered.empty() && cert->lowered != pr.jobs.back().lowered)
        throw Error(fmt::format("certificate '{}' certifies a different program ('{}')", a.certificate,
                                cert->notation));
    } else {
      if (cert->lowered.empty() && cert->notation.empty())
        throw Error(fmt::format("certificate '{}' holds no program", a.certificate));
      add(x, cert->notation.empty() ? "certified program of " + a.certificate : cert->notation, cert->lowered);
    }
  } else {
    for (const auto& set : pf->sets) {
      engine::ParallelismMatrix x = set.matrix;
      if (x.empty()) {
        if (!want) throw Error("--program-file with plain programs needs --matrix");
        x = *want;
      } else {
        engine::check_matrix(x, levels, pr.axes);
        if (want && x != *want) continue;
      }
      int taken = 0;
      for (const auto& np : set.programs) {
        if (a.top > 0 && taken >= a.top) break;
        add(x, np.notation, np.lowered);
        ++taken;
      }
    }
    if (pr.jobs.empty())
      throw Error(want ? fmt::format("--program-file '{}' has no programs for matrix {}", a.program_file,
                                     engine::format_matrix_brackets(*want))
                       : fmt::format("--program-file '{}' has no programs", a.program_file));
  }
  return pr;
}

void print_timing(const runtime::Timing& t, const std::string& label) {
  fmt::print("  {:<22} {:<34} {:>11} {:>10.1f} {:>10.1f} {:>10.1f} {:>9.3f} {:>9.3f}\n", label,
             t.groups.size() > 34 ? t.groups.substr(0, 31) + "..." : t.groups, t.bytes, t.t.min * 1e6,
             t.t.median * 1e6, t.t.max * 1e6, t.algbw, t.busbw);
}

std::string csv_quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

// Opens the CSV file of `option` for appending, writing `header` first if it is new or empty.
std::ofstream open_csv(const std::string& path, const char* option, const char* header) {
  bool fresh = true;
  {
    std::ifstream in(path);
    fresh = !in || in.peek() == std::ifstream::traits_type::eof();
  }
  std::ofstream out(path, std::ios::app);
  if (!out) throw Error(std::string(option) + " '" + path + "': cannot open it for appending");
  if (fresh) out << header;
  return out;
}

void append_csv(const std::string& path, const Prepared& pr, const Job& job, const runtime::RunReport& rep,
                const RunArgs& a, int ranks, const char* backend) {
  // The first four columns are what `p2v calibrate` reads (collective,groups,bytes,seconds).
  std::ofstream out = open_csv(path, "--csv",
                               "collective,groups,bytes,seconds,seconds_min,seconds_max,algbw_GBps,busbw_GBps,"
                               "description,system,ranks,backend,dtype,matrix,program,step,group_size,num_groups,"
                               "iters\n");
  auto row = [&](const std::string& step, const runtime::Timing& t) {
    out << t.what << ',' << csv_quote(t.groups_list) << ',' << t.bytes << ','
        << fmt::format("{:.9g},{:.9g},{:.9g},{:.6g},{:.6g}", t.t.median, t.t.min, t.t.max, t.algbw, t.busbw) << ','
        << csv_quote(t.groups) << ',' << csv_quote(pr.system.name) << ',' << ranks << ',' << backend << ','
        << a.dtype << ',' << csv_quote(engine::format_matrix(job.matrix)) << ',' << csv_quote(job.notation) << ','
        << step << ',' << t.group_size << ',' << t.num_groups << ',' << a.iters << '\n';
  };
  // Per step, and the baseline AllReduce over the reduction groups; the program's total is not a
  // single collective, so it is written as a comment.
  for (std::size_t s = 0; s < rep.steps.size(); ++s) row(std::to_string(s + 1), rep.steps[s]);
  if (!a.no_baseline) row("baseline", rep.baseline);
  out << fmt::format("# total,{},{},{:.9g},{}\n", csv_quote(rep.total.groups_list), rep.total.bytes,
                     rep.total.t.median, csv_quote(job.notation));
}

// One row per program (its total): what `p2v simulate --measured-programs` reads.
void append_program_csv(const std::string& path, const Prepared& pr, const Job& job, const runtime::RunReport& rep,
                        const RunArgs& a, int ranks, const char* backend) {
  std::ofstream out = open_csv(
      path, "--csv-programs",
      "program,seconds,matrix,seconds_min,seconds_max,baseline_seconds,bytes,system,ranks,backend,dtype,iters\n");
  out << csv_quote(job.notation) << ',' << fmt::format("{:.9g}", rep.total.t.median) << ','
      << csv_quote(engine::format_matrix(job.matrix)) << ','
      << fmt::format("{:.9g},{:.9g},{:.9g}", rep.total.t.min, rep.total.t.max, rep.baseline.t.median) << ','
      << rep.bytes << ',' << csv_quote(pr.system.name) << ',' << ranks << ',' << backend << ',' << a.dtype << ','
      << a.iters << '\n';
}

// Runs every job on this rank (rank 0 prints); returns the number of programs that failed the
// check. `replan`: make this rank's own plan (thread mode: the prepared plans record rank 0's
// columns).
int run_jobs(const RunArgs& a, const Prepared& pr, const runtime::RunOptions& opt, runtime::Backend& be,
             runtime::Coordinator& co, bool replan) {
  const int rank = co.rank(), size = co.size();
  if (rank == 0) {
    if (!pr.warning.empty()) fmt::print(stderr, "{}", pr.warning);
    fmt::print("p2v run: system {} {} on {} ranks, backend {}, axes {}, reduce {}, dtype {}, {} warmup + {} "
               "timed iterations\n",
               pr.system.name, format_list(pr.system.cardinalities()), size, be.name(), format_list(pr.axes),
               format_list(pr.reduce), a.dtype, opt.warmup, opt.iters);
  }
  int failures = 0;
  for (std::size_t i = 0; i < pr.jobs.size(); ++i) {
    const Job& job = pr.jobs[i];
    const runtime::Plan own =
        replan ? runtime::make_plan(job.lowered, size, job.plan.reduction_groups, rank) : runtime::Plan{};
    const runtime::Plan& plan = replan ? own : job.plan;
    if (rank == 0) {
      fmt::print("\nprogram {}/{} on matrix {}: {}\n", i + 1, pr.jobs.size(), engine::format_matrix_brackets(job.matrix),
                 job.notation);
      if (a.show_plan) {
        for (std::size_t s = 0; s < plan.steps.size(); ++s) {
          const auto& st = plan.steps[s];
          fmt::print("  step {} {} on {}\n", s + 1, engine::to_string(st.collective),
                     runtime::describe_groups(st.groups, 8));
          for (int d = 0; d < size; ++d) {
            const auto& rs = st.ranks[d];
            fmt::print("    rank {:>3}: {} -> units {} in {}{}{}\n", d,
                       rs.comm < 0 ? "idle"
                                   : fmt::format("member {}/{}{}", rs.member, rs.group_size, rs.in_place ? " in-place" : ""),
                       runtime::format_intervals(rs.after.rows), runtime::to_string(rs.after.where),
                       rs.pre.empty() ? "" : fmt::format(", packs {} runs", rs.pre.size()),
                       rs.post.empty() ? "" : fmt::format(", unpacks {} runs", rs.post.size()));
          }
        }
        fmt::print("  units: {} chunks grouped {} per unit; staging {} + {} units\n", plan.k, plan.rows_per_unit,
                   plan.stage_units[0], plan.stage_units[1]);
      }
      std::fflush(stdout);
    }
    const auto rep = runtime::run_program(plan, be, opt, co);
    if (!rep.ok) {
      ++failures;
      if (rank == 0) {
        std::fflush(stdout);
        fmt::print(stderr, "p2v run: RESULT MISMATCH for program '{}':\n{}\n", job.notation, rep.failure);
      }
      continue;
    }
    if (rank != 0) continue;
    fmt::print("  {}: {} bytes per rank ({} chunks of {} elements)\n",
               opt.verify ? "verified after every step and against the goal" : "NOT verified (--no-verify)", rep.bytes,
               plan.k, rep.elems_per_row);
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
    if (!a.csv.empty()) append_csv(a.csv, pr, job, rep, a, size, be.name());
    if (!a.csv_programs.empty()) append_program_csv(a.csv_programs, pr, job, rep, a, size, be.name());
    std::fflush(stdout);
  }
  if (rank == 0) {
    if (failures)
      fmt::print(stderr, "p2v run: {} of {} programs FAILED the result check\n", failures, pr.jobs.size());
    else if (pr.jobs.size() > 1)
      fmt::print("\nall {} programs verified\n", pr.jobs.size());
  }
  return failures;
}

// One process, one thread per device: --backend threads, or --backend nccl without mpirun.
int run_threads(const RunArgs& a, const Prepared& pr, const runtime::RunOptions& opt) {
  const int n = static_cast<int>(pr.system.num_devices());
  std::string id;
  int gpus = 0;
  if (a.backend == "nccl") {
    std::string why;
    gpus = runtime::cuda_device_count(&why);
    if (gpus < 1)
      throw Error(fmt::format("the NCCL backend needs CUDA GPUs: {}; use --backend mpi (under mpirun) or "
                              "--backend threads on machines without GPUs", why));
    if (gpus < n)
      throw Error(fmt::format("NCCL in one process drives one GPU per device: the system has {} devices but {} "
                              "GPUs are visible; launch under mpirun across nodes instead", n, gpus));
    id = runtime::nccl_unique_id();
  }
  auto team = runtime::make_thread_team(n);
  auto fabric = runtime::make_thread_fabric(n);
  std::vector<int> fails(n, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        auto be = a.backend == "nccl" ? runtime::make_nccl_backend_local(i, n, i, id, opt.dtype)
                                      : runtime::make_thread_backend(fabric, i, opt.dtype);
        fails[i] = run_jobs(a, pr, opt, *be, *team[i], true);
      } catch (const std::exception& e) {
        // The other threads may wait for this one in a barrier: end the process.
        std::fflush(stdout);
        fmt::print(stderr, "p2v run: error in thread {}: {}\n", i, e.what());
        std::fflush(stderr);
        std::_Exit(3);
      }
    });
  for (auto& t : threads) t.join();
  return fails[0] ? 1 : 0;
}

int run_command(const RunArgs& a) {
  const runtime::MpiSession mpi;
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  // --backend threads, or nccl in a single process: one thread per device.
  const bool threads = a.backend == "threads" || (a.backend == "nccl" && size == 1);

  // Phase 1, local: parse, resolve, plan. Then agree, so that no rank enters a collective alone.
  Prepared pr;
  runtime::RunOptions opt;
  std::string error;
  try {
    opt.bytes = parse_bytes(a.bytes);
    opt.dtype = runtime::parse_dtype(a.dtype);
    opt.iters = a.iters;
    opt.warmup = a.warmup;
    if (a.iters < 1 || a.warmup < 0) throw Error("--iters must be >= 1 and --warmup >= 0");
    opt.verify = !a.no_verify;
    opt.baseline = !a.no_baseline;
    if (!a.fault.empty()) {
      const auto c = a.fault.find(':');
      if (c == std::string::npos) throw Error("--inject-fault STEP:RANK, e.g. 2:5");
      opt.fault_step = std::stoi(a.fault.substr(0, c)) - 1;
      opt.fault_rank = std::stoi(a.fault.substr(c + 1));
    }
    if (a.backend != "mpi" && a.backend != "nccl" && a.backend != "threads")
      throw Error("--backend '" + a.backend + "': use mpi, nccl or threads");
    if (a.backend == "threads" && size != 1)
      throw Error("--backend threads runs every device as a thread of one process: launch it without mpirun");
    pr = prepare(a, rank, threads ? -1 : size);
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "unknown error";
  }
  int mine = error.empty() ? size : rank, first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, world);
  if (first != size) {
    if (rank == first) {
      std::fflush(stdout);
      fmt::print(stderr, "p2v run: error{}: {}\n", size > 1 && first != 0 ? fmt::format(" (rank {})", rank) : "",
                 error);
    }
    return 2;
  }
  if (threads) {
    try {
      return run_threads(a, pr, opt);
    } catch (const Error& e) {
      fmt::print(stderr, "p2v run: error: {}\n", e.what());
      return 2;
    }
  }

  // Phase 2, collective. The backend agrees on its own availability (NCCL: a GPU per rank).
  std::unique_ptr<runtime::Backend> be;
  error.clear();
  try {
    be = a.backend == "nccl" ? runtime::make_nccl_backend(world, opt.dtype) : runtime::make_mpi_backend(world, opt.dtype);
  } catch (const std::exception& e) {
    error = e.what();
  }
  mine = error.empty() ? size : rank;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, world);
  if (first != size) {
    if (rank == first) fmt::print(stderr, "p2v run: error: {}\n", error);
    return 2;
  }
  int failures = 0;
  try {
    auto co = runtime::make_mpi_coordinator(world);
    failures = run_jobs(a, pr, opt, *be, *co, false);
  } catch (const std::exception& e) {
    // A failure inside the collective phase may leave other ranks waiting: abort them all.
    std::fflush(stdout);
    fmt::print(stderr, "p2v run: error on rank {}: {}\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(world, 3);
  }
  be.reset();
  return failures ? 1 : 0;
}

#endif

Registrar reg(
    "run", "Run reduction programs on MPI ranks or NCCL GPUs (under mpirun), check the results, time them",
    70, [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<RunArgs>();
      sub.add_option("--system", a->system, "system file (JSON) or inline hierarchy, e.g. node=2,gpu=4");
      sub.add_option("--axes", a->axes, "parallelism axis sizes, e.g. 4,4");
      sub.add_option("--reduce", a->reduce, "reduction axis indices (0-based), e.g. 1");
      sub.add_option("--matrix", a->matrix, "the parallelism matrix, rows separated by ';'");
      sub.add_option("--program", a->program,
                     "a program, e.g. \"ReduceScatter@(gpu,Inside) ; AllReduce@(gpu,Parallel(root)) ; "
                     "AllGather@(gpu,Inside)\"");
      sub.add_option("--program-file", a->program_file,
                     "programs, one per line, or the --json output of p2v synth / p2v simulate");
      sub.add_option("--hierarchy", a->hierarchy,
                     "hierarchy the program notation refers to: a, b, c, d or d-uncollapsed (default: the "
                     "program file's, else d)");
      sub.add_option("--top", a->top, "run only the first K programs of each matrix in --program-file (0: all)");
      sub.add_option("--certificate", a->certificate,
                     "run only if this certificate passes the independent checker (its program if none is given)");
      sub.add_flag("--unchecked", a->unchecked,
                   "run even if the certificate fails or the program misses the goal (loudly)");
      sub.add_option("--bytes", a->bytes, "buffer size per rank, e.g. 1048576, 64K, 1M, 64M")->capture_default_str();
      sub.add_option("--iters", a->iters, "timed iterations")->capture_default_str();
      sub.add_option("--warmup", a->warmup, "untimed warmup iterations")->capture_default_str();
      sub.add_option("--dtype", a->dtype, "int32 or float32")->capture_default_str();
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
      sub.add_flag("--show-plan", a->show_plan, "print every rank's role and rows per step");
      sub.add_option("--inject-fault", a->fault, "testing: corrupt one element after STEP on RANK (STEP:RANK)");
      return [a]() -> int {
#ifdef HAVE_P2V_RUNTIME
        return run_command(*a);
#else
        throw Error("this p2v was built without the runtime (MPI not found or P2V_WITH_MPI=OFF)");
#endif
      };
    });

}  // namespace
}  // namespace p2v::tools
