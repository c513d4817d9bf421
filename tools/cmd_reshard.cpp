// p2v reshard: memory-bounded, cost-optimal redistribution programs (docs/reshard.md, docs/model.md §10).
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include <cctype>
#include <filesystem>
#include <fstream>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/units.hpp"
#include "sweep.hpp"
#ifdef P2V_HAVE_RUNTIME
#include "p2v/runtime/mpi/session.hpp"
#endif
#ifdef P2V_HAVE_CHECKER
#include "certify_dir.hpp"
#include "p2v/checker/checker.hpp"
#include "p2v/engine/write.hpp"
#include "p2v/reshard/certificate.hpp"
#endif
#ifdef P2V_HAVE_ENCODINGS
#include "p2v/encodings/reshard.hpp"
#endif
#ifdef P2V_HAVE_RUNTIME
#include <optional>

#include "p2v/runtime/coordinator.hpp"
#include "p2v/runtime/mpi/backends.hpp"
#include "p2v/runtime/mpi/reshard.hpp"
#endif
#include "p2v/engine/error.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/engine/text_util.hpp"
#include "p2v/engine/write.hpp"
#include "p2v/reshard/plan.hpp"
#include "p2v/sim/cost.hpp"

namespace p2v::tools {
namespace {

namespace rs = reshard;

struct ReshardArgs {
  std::string mesh, from, to, shape, from_spec, to_spec, system, preset, dtype = "f32", cost = "paper", memory = "auto",
                                                                         certify, bytes, backend = "mpi";
  SweepArgs sweep;  // --bytes LIST|RANGE, -b/-e/-f/-i: the global array's size (docs/reshard.md "Size sweeps")
  bool force = false;
  bool run = false, json = false;
  int random = 0;
  unsigned long long seed = 1;
};

std::string groups_summary(const rs::PlannedStep& s) {
  switch (s.step.op) {
    case rs::Op::DynSlice:
      return "local";
    case rs::Op::AllPermute:
      return fmt::format("{} devices move", s.num_groups);
    default:
      return fmt::format("{} x {}", s.num_groups, s.group_size);
  }
}

void print_program(const char* title, const rs::Plan& p, const rs::Program& prog) {
  const bool topo = p.cost_kind == rs::CostKind::Topology;
  fmt::print("{}: cost {} elements/device, peak {} elements ({} bytes; {} elements with the run's staging){}\n", title,
             prog.cost, prog.peak, prog.peak * p.dtype_bytes, prog.peak_staged,
             topo ? fmt::format(", time {:.3f} us", prog.time_s * 1e6) : "");
  fmt::print("  {:>2}  {:<30} {:<28} {:<16} {:>10} {:>12}{}\n", "#", "step", "local type after", "groups", "cost",
             "bytes", topo ? "  time (level)" : "");
  int i = 0;
  for (const auto& s : prog.steps) {
    fmt::print("  {:>2}  {:<30} {:<28} {:<16} {:>10} {:>12}{}\n", i++,
               rs::step_to_string(s.step, p.mesh) + (s.relabelled ? " *" : ""), rs::to_string(s.after, p.mesh),
               groups_summary(s), s.cost, s.bytes,
               topo ? fmt::format("  {:.3f} us ({})", s.time_s * 1e6, s.level.empty() ? "-" : s.level) : "");
  }
  if (prog.steps.empty()) fmt::print("      (no step: the layouts are equal)\n");
  for (const auto& s : prog.steps)
    if (s.relabelled) {
      fmt::print(
          "      * after relabelling devices (types are logical; the final allpermute restores the device map)\n");
      break;
    }
}

#ifdef P2V_HAVE_CHECKER
// Writes the certificate (the plan with every step's groups, slices and permutation) into `dir`
// and has the independent checker replay it; returns the file name. Throws p2v::Error when the
// checker rejects it.
std::string certify(const rs::Plan& p, const std::string& dir, bool force) {
  prepare_certificate_dir(dir, force, "--certify");
  std::optional<rs::SmtFacts> facts;
#ifdef P2V_HAVE_ENCODINGS
  facts = encodings::prove_reshard_plan(p.mesh, p.program);
#endif
  const std::string text = rs::certificate_text(p, facts);
  const std::string file = dir + "/" + rs::certificate_file_name(p);
  const auto v = checker::check_reshard_certificate(text);
  if (!v.ok) throw Error(fmt::format("the independent checker rejected {}: {}", file, v.reason));
  engine::write_file_atomic(file, text + "\n", "certificate");
  write_manifest(dir, {"z3", "cvc5"});
  return file;
}
#endif

#ifdef P2V_HAVE_RUNTIME
// Prints a run of p2v's program and the baseline (rank 0 / the one process).
void report_run(const ReshardArgs& a, const rs::Plan& p, const runtime::ReshardRun& mine,
                const runtime::ReshardRun& base) {
  const std::int64_t elems = p.mesh.num_devices() * p.to.localsize();
  if (a.json) {
    auto j = rs::to_json(p);
    j["run"] = {{"ranks", p.mesh.num_devices()},
                {"backend", a.backend},
                {"time_s", mine.time_s},
                {"peak_bytes", mine.peak_bytes},
                {"peak_tile_bytes", mine.peak_tile_bytes},
                {"element_bytes", 8},
                {"wrong", mine.wrong},
                {"splits", mine.splits},
                {"baseline",
                 {{"time_s", base.time_s},
                  {"peak_bytes", base.peak_bytes},
                  {"peak_tile_bytes", base.peak_tile_bytes},
                  {"wrong", base.wrong}}}};
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{} -> {} on {} ranks, backend {} (int64 elements = global indices)\n", rs::to_string(p.from, p.mesh),
             rs::to_string(p.to, p.mesh), p.mesh.num_devices(), a.backend);
  // Measured with the run's int64 elements (8 bytes), beside the plan's figures in the same terms.
  auto line = [&](const char* who, const rs::Program& pr, const runtime::ReshardRun& r) {
    fmt::print(
        "{} {} steps, {:.1f} us, measured peak {} B/rank without staging, {} B with staging "
        "(plan: {} and {}); {}\n",
        who, pr.steps.size(), r.time_s * 1e6, r.peak_tile_bytes, r.peak_bytes, pr.peak * 8, pr.peak_staged * 8,
        r.wrong ? fmt::format("{} WRONG elements", r.wrong) : fmt::format("all {} elements correct", elems));
  };
  line("p2v:     ", p.program, mine);
  line("baseline:", p.baseline, base);
  fmt::print("bound: {} B/rank without staging, {} B with staging (int64 elements)\n", p.bound * 8,
             rs::staged_bound(p.bound) * 8);
}

int wrong_data(const runtime::ReshardRun& mine, const runtime::ReshardRun& base) {
  for (const auto* x : {&mine, &base})
    if (!x->first_wrong.empty()) fmt::print(stderr, "p2v reshard --run: wrong data: {}\n", x->first_wrong);
  return mine.wrong || base.wrong ? 1 : 0;
}

// --backend threads, or nccl in one process: a thread per mesh device (NCCL: one GPU each).
int run_threads(const ReshardArgs& a, const rs::Request& r) {
  const rs::Plan p = rs::plan(r);
  runtime::BackendFactory make;
  if (a.backend == "nccl") {
    std::string why;
    const auto n = static_cast<int>(p.mesh.num_devices());
    if (const int gpus = runtime::cuda_device_count(&why); gpus < n)
      throw Error(gpus < 1 ? fmt::format("--backend nccl needs CUDA GPUs: {}; use --backend mpi (under mpirun) or "
                                         "--backend threads on machines without GPUs",
                                         why)
                           : fmt::format("NCCL in one process drives one GPU per mesh device: the mesh has {} "
                                         "devices but {} GPUs are visible; launch under mpirun instead",
                                         n, gpus));
    make = [n, id = runtime::nccl_unique_id()](int rank) {
      return runtime::make_nccl_backend_local(rank, n, rank, id, runtime::Dtype::Int32);
    };
  }
  const auto mine = runtime::run_reshard_threads(p, p.program, 3, make);
  const auto base = runtime::run_reshard_threads(p, p.baseline, 3, make);
  report_run(a, p, mine, base);
  return wrong_data(mine, base);
}

// --run: every rank plans the same program, runs it and the baseline on the backend and checks the data.
int run(const ReshardArgs& a, const rs::Request& r) {
  const runtime::MpiSession mpi;
  const int rank = mpi.rank();
  if (a.backend == "threads" || (a.backend == "nccl" && mpi.size() == 1)) {
    if (mpi.size() != 1) {
      if (rank == 0)
        fmt::print(stderr,
                   "p2v: error: --backend threads runs every device as a thread of one process: launch it "
                   "without mpirun\n");
      return 2;
    }
    return run_threads(a, r);
  }
  auto co = runtime::make_mpi_coordinator(MPI_COMM_WORLD);
  // Plan on every rank (deterministic) and make the backend, then agree that every rank did, and
  // planned the same program, before the first collective: ranks started with different
  // arguments, or without a GPU for NCCL, stop together.
  std::optional<rs::Plan> planned;
  std::unique_ptr<runtime::Backend> be;
  std::string error;
  try {
    planned = rs::plan(r);
    if (mpi.size() != planned->mesh.num_devices())
      throw Error(
          fmt::format("{} MPI ranks but the mesh has {} devices; run under mpirun -np {}, or with --backend "
                      "threads in one process",
                      mpi.size(), planned->mesh.num_devices(), planned->mesh.num_devices()));
    if (a.backend == "nccl" && runtime::cuda_device_count(&error) < 1)
      throw Error(fmt::format("--backend nccl needs a CUDA GPU per rank: {}; use --backend mpi", error));
    be = a.backend == "nccl" ? runtime::make_nccl_backend(MPI_COMM_WORLD, runtime::Dtype::Int32)
                             : runtime::make_mpi_backend(MPI_COMM_WORLD, runtime::Dtype::Int32);
    error.clear();
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "unknown error";
  }
  if (const int f = co->agree(!error.empty()); f >= 0) {
    if (rank == f) fmt::print(stderr, "p2v: error{}: {}\n", f ? fmt::format(" (rank {})", f) : "", error);
    return 2;
  }
  const rs::Plan& p = *planned;
  std::string d = fmt::format(
      "mesh {}\nfrom {}\nto {}\n--dtype {}\n--cost {}\n--memory {}\n--system {}\n--backend {}\n", a.mesh,
      rs::to_string(p.from, p.mesh), rs::to_string(p.to, p.mesh), a.dtype, a.cost, a.memory, a.system, a.backend);
  for (const auto& ps : p.program.steps) d += "step " + rs::step_to_string(ps.step, p.mesh) + "\n";
  if (!co->agree_or_report(d, "different arguments")) return 2;
  const auto mine = runtime::run_reshard(*be, p, p.program);
  const auto base = runtime::run_reshard(*be, p, p.baseline);
  if (rank == 0) report_run(a, p, mine, base);
  return wrong_data(mine, base);
}

// --run --random N: N random problems on the mesh a=2,b=2,c=2 (8 ranks), each run and checked.
int run_random(const ReshardArgs& a) {
  const runtime::MpiSession mpi;
  const int rank = mpi.rank();
  // Every rank draws the same problems only from the same --random and --seed: agree first.
  auto co = runtime::make_mpi_coordinator(MPI_COMM_WORLD);
  if (!co->agree_or_report(fmt::format("--random {}\n--seed {}\n", a.random, a.seed), "different arguments")) return 2;
  if (a.backend != "mpi") {
    if (rank == 0) fmt::print(stderr, "p2v: error: --random runs on --backend mpi only\n");
    return 2;
  }
  auto be = runtime::make_mpi_backend(MPI_COMM_WORLD, runtime::Dtype::Int32);
  std::mt19937_64 rng(a.seed);
  int bad = 0;
  double sum_log = 0;
  for (int k = 0; k < a.random; ++k) {
    const auto q = rs::random_problem(rng, 0, 5, 1);
    const rs::Plan p = rs::plan(rs::Request{q.mesh, q.from, q.to, {}, "f32", rs::CostKind::Paper, {}, {}});
    const auto mine = runtime::run_reshard(*be, p, p.program, 1);
    const auto base = runtime::run_reshard(*be, p, p.baseline, 1);
    if (mine.wrong || base.wrong) ++bad;
    if (!mine.first_wrong.empty()) fmt::print(stderr, "problem {} ({} ~> {}): {}\n", k, q.from, q.to, mine.first_wrong);
    sum_log += std::log(std::max(base.time_s, 1e-9) / std::max(mine.time_s, 1e-9));
    if (rank == 0 && !a.json)
      fmt::print("{:>4}  {} ~> {}  {} steps  {:.1f} us (baseline {:.1f} us)  peak {} B (baseline {} B)  {}\n", k,
                 q.from, q.to, p.program.steps.size(), mine.time_s * 1e6, base.time_s * 1e6, mine.peak_bytes,
                 base.peak_bytes, mine.wrong || base.wrong ? "WRONG" : "ok");
  }
  if (rank == 0)
    fmt::print(
        "{} of {} random problems ran with every element correct (p2v and baseline); geo-mean baseline/p2v time "
        "{:.2f}x\n",
        a.random - bad, a.random, std::exp(sum_log / a.random));
  return bad ? 1 : 0;
}
#endif

// --from-spec / --to-spec with --shape: JAX PartitionSpecs turned into bracket types.
void resolve_specs(ReshardArgs& a) {
  if (a.from_spec.empty() && a.to_spec.empty()) {
    if (!a.shape.empty()) throw Error("--shape goes with --from-spec/--to-spec (bracket types carry their sizes)");
    return;
  }
  if (a.shape.empty()) throw Error("--from-spec/--to-spec need --shape (the global shape, e.g. 1024,1024)");
  if (a.mesh.empty()) throw Error("--from-spec/--to-spec need --mesh (e.g. x=4,y=4)");
  std::vector<std::int64_t> shape;
  for (const auto& v : engine::text::split_csv(a.shape)) {
    if (v.empty() || v.size() > 15 || v.find_first_not_of("0123456789") != std::string::npos)
      throw Error(fmt::format("--shape: '{}' is not a positive integer (write sizes like 1024,1024)", v));
    shape.push_back(std::stoll(v));
  }
  const auto mesh = rs::parse_mesh(a.mesh);
  if (!a.from_spec.empty()) {
    if (!a.from.empty()) throw Error("give --from or --from-spec, not both");
    a.from = rs::from_partition_spec(a.from_spec, shape, mesh);
  }
  if (!a.to_spec.empty()) {
    if (!a.to.empty()) throw Error("give --to or --to-spec, not both");
    a.to = rs::from_partition_spec(a.to_spec, shape, mesh);
  }
}

// The request of the flags (not --bytes): types, dtype, cost model, system, memory limit.
rs::Request make_request(const ReshardArgs& a) {
  rs::Request r;
  r.mesh = a.mesh;
  r.from = a.from;
  r.to = a.to;
  r.dtype = canonical_dtype(a.dtype);  // every spelling (f32, float32, float, ...)
  if (a.cost == "paper")
    r.cost = rs::CostKind::Paper;
  else if (a.cost == "topology")
    r.cost = rs::CostKind::Topology;
  else
    throw Error(fmt::format("--cost: expected paper or topology, got '{}'", a.cost));
  if (!a.system.empty() || !a.preset.empty()) {
    r.system = load_system(a.system, a.preset);
    fill_interconnects(*r.system, a.preset);
  }
  if (a.memory != "auto")
    r.memory_bytes = static_cast<std::int64_t>(std::floor(engine::parse_size(a.memory, "--memory (auto or a size)")));
  return r;
}

// The program's step texts, e.g. "alltoall(0,1){x,y} ; allpermute".
std::string program_text(const rs::Plan& p, const rs::Program& prog) {
  std::string s;
  for (const auto& ps : prog.steps)  // an allpermute's target names sizes: not part of the program's name
    s += (s.empty() ? "" : " ; ") +
         (ps.step.op == rs::Op::AllPermute ? std::string("allpermute") : rs::step_to_string(ps.step, p.mesh));
  return s.empty() ? "(nothing to do)" : s;
}

// Several sizes of the global array: one plan per size, a row each, and the crossover table of
// the chosen programs (docs/reshard.md "Size sweeps").
int sweep(const ReshardArgs& a, rs::Request r, const std::vector<double>& sizes) {
  if (a.run || !a.certify.empty())
    throw Error("--run and --certify take one size: give a single --bytes with them, not a sweep");
  const bool topo = r.cost == rs::CostKind::Topology;
  std::vector<SweepPoint> points;
  nlohmann::json rows = nlohmann::json::array();
  std::string table;
  table += fmt::format("  {:>8}  {:<24} {:>12} {:>12} {:>8}  {}\n", "bytes", "global shape", topo ? "time" : "cost",
                       topo ? "baseline" : "baseline", "speedup", "program");
  std::string head;
  for (const double bytes : sizes) {
    r.array_bytes = bytes;
    const rs::Plan p = rs::plan(r);
    if (head.empty())
      head = fmt::format("mesh {} ({} devices), {} -> {} (dimension 0 scaled to each size), {}, cost model {}\n",
                         a.mesh, p.mesh.num_devices(), r.from, r.to, r.dtype, topo ? "topology" : "paper");
    const double actual = rs::array_bytes(p.from, p.dtype_bytes);
    const double mine = topo ? p.program.time_s : static_cast<double>(p.program.cost);
    const double base = topo ? p.baseline.time_s : static_cast<double>(p.baseline.cost);
    const double speedup = mine > 0 ? base / mine : 1.0;
    std::string shape;
    for (const auto& d : p.from.dims) shape += (shape.empty() ? "" : "x") + std::to_string(d.global);
    const std::string prog = program_text(p, p.program);
    points.push_back({actual, prog, speedup});
    auto fmt_v = [&](double v) {
      return topo ? sim::format_seconds(v) : fmt::format("{}", static_cast<std::int64_t>(v));
    };
    table += fmt::format("  {:>8}  {:<24} {:>12} {:>12} {:>7.2f}x  {}\n", engine::format_size(actual), shape,
                         fmt_v(mine), fmt_v(base), speedup, prog);
    nlohmann::json row = {{"bytes", actual},        {"requested_bytes", bytes}, {"global_shape", shape},
                          {"program", prog},        {"cost", p.program.cost},   {"baseline_cost", p.baseline.cost},
                          {"peak", p.program.peak}, {"speedup", speedup}};
    if (topo) {
      row["time_s"] = p.program.time_s;
      row["baseline_time_s"] = p.baseline.time_s;
    }
    rows.push_back(row);
  }
  if (a.json) {
    nlohmann::json j = {{"mesh", a.mesh},
                        {"from", r.from},
                        {"to", r.to},
                        {"dtype", r.dtype},
                        {"cost_model", topo ? "topology" : "paper"},
                        {"sizes", rows},
                        {"crossover", crossover_json(points)}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{}{}\n{}", head, table, crossover_table(points, "program", topo ? "baseline time" : "baseline cost"));
  return 0;
}

// One plan: text or JSON, certified when asked.
int plan_one(const ReshardArgs& a, const rs::Request& r) {
  const auto t0 = std::chrono::steady_clock::now();
  const rs::Plan p = rs::plan(r);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::string cert_note;
#ifdef P2V_HAVE_CHECKER
  if (!a.certify.empty()) cert_note = certify(p, a.certify, a.force);
#endif
  if (a.json) {
    auto j = rs::to_json(p);
    if (!cert_note.empty()) j["certificate"] = cert_note;
    j["synthesis_ms"] = ms;
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("mesh {} ({} devices), {} -> {}, {}\n", a.mesh, p.mesh.num_devices(), rs::to_string(p.from, p.mesh),
             rs::to_string(p.to, p.mesh), a.dtype);
  fmt::print(
      "bound {} elements/device (max of the two local sizes; {} with the run's staging), limit {}; {} states, "
      "{:.2f} ms\n",
      p.bound, rs::staged_bound(p.bound), p.limit, p.states, ms);
  print_program("p2v", p, p.program);
  print_program("baseline (allgather then dynslice)", p, p.baseline);
  if (!cert_note.empty())
    fmt::print("certificate {}: {}accepted by the independent checker\n", cert_note,
#ifdef P2V_HAVE_ENCODINGS
               "every collective step proved by z3 and cvc5 (unsat), "
#else
               ""
#endif
    );
  return 0;
}

int reshard_command(ReshardArgs& a) {
  if (a.random > 0 && !a.run) throw Error("--random needs --run (for planning benchmarks see bench/reshard)");
  if (a.backend != "mpi" && a.backend != "nccl" && a.backend != "threads")
    throw Error(fmt::format("--backend '{}': use mpi, nccl or threads", a.backend));
  if (a.backend != "mpi" && !a.run) throw Error("--backend goes with --run");
  resolve_specs(a);
  if (a.random <= 0 && (a.mesh.empty() || a.from.empty() || a.to.empty()))
    throw Error(
        "--mesh, --from and --to are required (e.g. --mesh x=4,y=4 --from \"[32{x,y}512,128]\" --to "
        "\"[128{x}512,32{y}128]\")");
#ifdef P2V_HAVE_RUNTIME
  if (a.random > 0) return run_random(a);
#endif
  rs::Request r = make_request(a);
  const auto sizes = sweep_sizes(a.bytes, a.sweep, 1e15, true);
  if (sizes.size() > 1) return sweep(a, r, sizes);
  if (sizes.size() == 1) r.array_bytes = sizes.front();
#ifndef P2V_HAVE_CHECKER
  if (!a.certify.empty()) throw Error("--certify needs p2v-smt with the independent checker (not built)");
#endif
#ifndef P2V_HAVE_RUNTIME
  if (a.run) throw Error("--run needs p2v-run (built with MPI), which is not installed");
#else
  if (a.run) return run(a, r);
#endif
  return plan_one(a, r);
}

Registrar reg("reshard", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<ReshardArgs>();
  sub.add_option("--mesh", a->mesh, "device mesh, e.g. x=4,y=4 (devices in mixed radix, first axis most significant)");
  sub.add_option("--from", a->from, "source type, e.g. \"[32{x,y}512,128]\" (axes minor first)");
  sub.add_option("--to", a->to, "target type, e.g. \"[128{x}512,32{y}128]\"");
  sub.add_option("--shape", a->shape, "with --from-spec/--to-spec: the array's global shape, e.g. 1024,1024");
  sub.add_option("--from-spec", a->from_spec,
                 "source as a JAX PartitionSpec, e.g. \"P(('x','y'),None)\" (axes major first; needs --shape)");
  sub.add_option("--to-spec", a->to_spec, "target as a JAX PartitionSpec (needs --shape)");
  sub.add_option("--random", a->random,
                 "with --run: N random problems in the paper's style (mesh a=2,b=2,c=2, up to 5-D) in one MPI job "
                 "(needs 8 ranks) instead of --mesh/--from/--to");
  sub.add_option("--seed", a->seed, "with --random: the random seed")->capture_default_str();
  add_system_options(sub, a->system, a->preset);
  add_dtype_option(sub, a->dtype, "element type")->capture_default_str();
  sub.add_option("--cost", a->cost,
                 "paper (elements, docs/model.md §10) or topology (the simulator's prices on --system: "
                 "docs/reshard.md \"Cost on a topology\")")
      ->capture_default_str();
  sub.add_option("--bytes", a->bytes,
                 "the global array's size: one size, a list (1M,1G) or a range (1K:8G:x2); dimension 0 is scaled "
                 "to it (docs/reshard.md \"Size sweeps\"); several sizes: a row each and the crossover table");
  add_sweep_options(sub, a->sweep);
  sub.add_option("--memory", a->memory, "memory limit per device: auto (the bound) or BYTES (e.g. 64MiB)")
      ->capture_default_str();
  sub.add_option("--certify", a->certify, "write a certificate into DIR after Z3 and cvc5 check every step");
  sub.add_flag("--force", a->force,
               "with --certify: replace the certificate of an earlier run in DIR (the files its MANIFEST.json "
               "lists); without it a non-empty DIR is refused");
  sub.add_flag("--run", a->run, "run the program and the baseline on --backend and check every element");
  sub.add_option("--backend", a->backend,
                 "with --run: mpi (a rank per mesh device, under mpirun), nccl (a GPU per rank under mpirun, or "
                 "all GPUs of one process without it) or threads (one process, a thread per device)")
      ->capture_default_str();
  sub.add_flag("--json", a->json, "machine-readable output");
  return [a] { return reshard_command(*a); };
});

}  // namespace
}  // namespace p2v::tools
