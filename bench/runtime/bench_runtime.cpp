// Runtime overhead benchmark (the targets of docs/runtime.md). Run with 8 ranks:
//   mpirun -np 8 bench_runtime [--bytes 1M,64M] [--iters N] [--iters-large N] [--cases 0,1,2]
// Per size, in the same run and interleaved iteration by iteration (A B A B ...):
//   1. the one-step program AllReduce@(root,Inside) through the runtime (plan + MPI backend)
//      vs a direct MPI_Allreduce on a communicator over the same ranks;
//   2. RS ; AR ; AG (Fig. 10ii) through the runtime vs hand-written MPI_Reduce_scatter_block /
//      MPI_Allreduce / MPI_Allgather on hand-made communicators;
//   3. AR ; AR (Fig. 3b) through the runtime vs two hand-written MPI_Allreduce calls.
// The time of one iteration is the maximum over ranks (each iteration starts after a barrier);
// the report gives the median over iterations, the overhead of the runtime's median, and the
// median of the per-iteration ratios runtime/direct (paired, less sensitive to load drift).
#include <mpi.h>

#include <fmt/core.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "p2v/engine/error.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/runtime/jobs.hpp"
#include "p2v/runtime/mpi/backends.hpp"
#include "p2v/runtime/run.hpp"

using namespace p2v;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Case {
  std::string name, program;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<std::int64_t> sizes = {1 << 20, 64 << 20};
  int iters_small = 200, iters_large = 20;
  std::string only;  // e.g. "0,1": case indices to run (default all)
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--bytes") {
      sizes.clear();
      std::size_t p = 0;
      while (p < v.size()) {
        std::size_t q = v.find(',', p);
        if (q == std::string::npos) q = v.size();
        std::string t = v.substr(p, q - p);
        std::int64_t mul = 1;
        if (!t.empty() && (t.back() == 'M' || t.back() == 'K')) {
          mul = t.back() == 'M' ? (1 << 20) : (1 << 10);
          t.pop_back();
        }
        sizes.push_back(std::stoll(t) * mul);
        p = q + 1;
      }
    } else if (k == "--iters") {
      iters_small = iters_large = std::stoi(v);
    } else if (k == "--iters-large") {
      iters_large = std::stoi(v);
    } else if (k == "--cases") {
      only = v;
    }
  }
  if (size % 2 != 0 || size < 4) {
    if (rank == 0) std::fprintf(stderr, "bench_runtime: run with an even number of ranks >= 4 (8 for the targets)\n");
    MPI_Finalize();
    return 2;
  }
  const int per_node = size / 2;
  // System node=2,gpu=size/2, one axis over all devices, reduced: hierarchy (d) = [root node gpu].
  const auto sys = engine::parse_system_arg(fmt::format("node=2,gpu={}", per_node));
  const std::vector<Case> cases = {
      {"1-step AllReduce", "AllReduce@(root,Inside)"},
      {"RS;AR;AG", "ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; AllGather@(node,Inside)"},
      {"AR;AR", "AllReduce@(node,Inside) ; AllReduce@(node,Parallel(root))"},
  };

  // Hand-made communicators for the direct calls.
  MPI_Comm all, node, par;
  MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &all);
  MPI_Comm_split(MPI_COMM_WORLD, rank / per_node, rank, &node);
  MPI_Comm_split(MPI_COMM_WORLD, rank % per_node, rank, &par);

  auto be = runtime::make_mpi_backend(MPI_COMM_WORLD, runtime::Dtype::Int32);
  if (rank == 0)
    fmt::print(
        "bench_runtime: {} ranks, int32, interleaved runtime/direct iterations, time = max over ranks\n"
        "{:<18} {:>10} {:>6} {:>14} {:>14} {:>10} {:>14}\n",
        size, "case", "bytes", "iters", "runtime(us)", "direct(us)", "overhead", "paired ratio");
  int status = 0;
  for (const std::int64_t bytes : sizes) {
    const int iters = bytes >= (16 << 20) ? iters_large : iters_small;
    for (std::size_t ci = 0; ci < cases.size(); ++ci) {
      if (!only.empty() && only.find(std::to_string(ci)) == std::string::npos) continue;
      const auto prog =
          runtime::resolve_patterns(sys, {{2, per_node}}, {0}, engine::HierarchyKind::ReductionAxes, cases[ci].program)
              .program;
      const auto plan = runtime::make_rank_plan(prog, rank, false);
      const std::int64_t elems = bytes / 4;
      if (elems % plan.units != 0) throw Error("size not divisible");
      const std::int64_t epu = elems / plan.units;
      std::vector<int> slot;
      for (const auto& st : plan.steps) slot.push_back(st.comm.group_size >= 2 ? be->comm(st.comm) : -1);
      be->allocate(elems, plan.stage_units[0] * epu, plan.stage_units[1] * epu, epu);
      std::vector<std::int32_t> pristine(elems), buf(elems), tmp(elems / per_node + 1);
      for (std::int64_t e = 0; e < elems; ++e) pristine[e] = runtime::fill_value(rank, e, size, runtime::Dtype::Int32);
      const int n = static_cast<int>(elems), q = static_cast<int>(elems / per_node);

      auto run_runtime = [&] {
        for (std::size_t s = 0; s < plan.steps.size(); ++s)
          if (slot[s] >= 0) be->step(plan.steps[s].collective, plan.steps[s].rs, slot[s]);
        be->copies(plan.final_copies);
      };
      auto run_direct = [&] {
        if (ci == 0) {
          MPI_Allreduce(MPI_IN_PLACE, buf.data(), n, MPI_INT, MPI_SUM, all);
        } else if (ci == 1) {
          MPI_Reduce_scatter_block(buf.data(), tmp.data(), q, MPI_INT, MPI_SUM, node);
          MPI_Allreduce(MPI_IN_PLACE, tmp.data(), q, MPI_INT, MPI_SUM, par);
          MPI_Allgather(tmp.data(), q, MPI_INT, buf.data(), q, MPI_INT, node);
        } else {
          MPI_Allreduce(MPI_IN_PLACE, buf.data(), n, MPI_INT, MPI_SUM, node);
          MPI_Allreduce(MPI_IN_PLACE, buf.data(), n, MPI_INT, MPI_SUM, par);
        }
      };
      std::vector<double> trt, tdirect;
      const int warm = 2;
      for (int it = 0; it < iters + warm; ++it) {
        for (int which = 0; which < 2; ++which) {
          // Alternate the order so that neither side always runs first.
          const bool rt = (which == 0) == (it % 2 == 0);
          if (rt)
            be->upload(pristine);
          else
            std::memcpy(buf.data(), pristine.data(), elems * 4);
          MPI_Barrier(MPI_COMM_WORLD);
          const double t0 = MPI_Wtime();
          if (rt)
            run_runtime();
          else
            run_direct();
          double t = MPI_Wtime() - t0, tmax = 0;
          MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          if (it >= warm) (rt ? trt : tdirect).push_back(tmax);
        }
      }
      // Both sides computed the same thing.
      std::vector<std::int32_t> got(elems);
      be->download(runtime::Space::Main, 0, elems, got.data());
      int same = got == buf ? 1 : 0, all_same = 0;
      MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (!all_same) status = 1;
      if (rank == 0) {
        const double a = median(trt), b = median(tdirect);
        // Paired: the ratio within each iteration (the two runs are adjacent in time), then the median.
        std::vector<double> ratio;
        for (std::size_t i = 0; i < trt.size(); ++i) ratio.push_back(trt[i] / tdirect[i]);
        fmt::print("{:<18} {:>10} {:>6} {:>14.1f} {:>14.1f} {:>+9.2f}% {:>13.4f}{}\n", cases[ci].name, bytes, iters,
                   a * 1e6, b * 1e6, (a / b - 1) * 100, median(ratio), all_same ? "" : "  RESULTS DIFFER");
        std::fflush(stdout);
      }
    }
  }
  be.reset();
  MPI_Comm_free(&all);
  MPI_Comm_free(&node);
  MPI_Comm_free(&par);
  MPI_Finalize();
  return status;
}
