// Rank-local plan benchmark (no MPI): per-rank plan time and memory from 8 to 1,048,576 ranks.
//   bench_plan [--min-ranks N] [--max-ranks N] [--system-levels 2|4] [--columns-up-to N] [--program P]
// For each size, every program of the shape (synthesized once on the shape, max size 5) is
// resolved to level patterns (once per program: validation on the smallest instance) and planned
// for rank 0 and a middle rank (N/2 + 1) as each rank does at the start of `p2v run`. Reported,
// over programs x ranks: the median plan time and the median and largest peak heap bytes
// allocated while planning (counted by this program's operator new), and for the (program, rank)
// with the largest heap its plan time (a single deterministic worst case; the maximum of the
// times themselves picks up preemptions on a shared machine).
// With --columns-up-to, also the time of a plan with the checked run's columns (O(group size)
// per held unit: only for run-sized systems).
#include <fmt/core.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/runtime/jobs.hpp"
#include "p2v/runtime/rank_plan.hpp"

// Heap accounting: current and peak bytes (single-threaded benchmark).
namespace {
std::size_t g_current = 0, g_peak = 0;
}
void* operator new(std::size_t n) {
  void* p = std::malloc(n + 16);
  if (!p) throw std::bad_alloc();
  *static_cast<std::size_t*>(p) = n;
  g_current += n;
  g_peak = std::max(g_peak, g_current);
  return static_cast<char*>(p) + 16;
}
void operator delete(void* p) noexcept {
  if (!p) return;
  char* b = static_cast<char*>(p) - 16;
  g_current -= *reinterpret_cast<std::size_t*>(b);
  std::free(b);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

using namespace p2v;

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Time of one call of f: repeated until 5 ms have passed (at least once), median of the calls.
template <class F>
double time_call(F&& f) {
  std::vector<double> t;
  const double start = seconds_now();
  do {
    const double t0 = seconds_now();
    f();
    t.push_back(seconds_now() - t0);
  } while (seconds_now() - start < 5e-3 && t.size() < 1000);
  return median(t);
}

// A system of `levels` levels (2: node,gpu; 4: pod,rack,node,gpu) with n devices, 8 GPUs per node.
std::string system_for(std::int64_t n, int levels) {
  if (levels == 2 || n < 64) return fmt::format("node={},gpu=8", n / 8);
  // pod x rack x node x 8: split n/8 into three factors as evenly as powers of two allow.
  std::int64_t rest = n / 8, f[3] = {1, 1, 1};
  for (int i = 0; rest > 1; i = (i + 1) % 3, rest /= 2) f[i] *= 2;
  return fmt::format("pod={},rack={},node={},gpu=8", f[2], f[1], f[0]);
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t min_ranks = 16, max_ranks = 1 << 20, columns_up_to = 0;
  int levels = 2;
  std::string only;  // --program: just this one
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--max-ranks")
      max_ranks = std::stoll(v);
    else if (k == "--min-ranks")
      min_ranks = std::stoll(v);
    else if (k == "--program")
      only = v;
    else if (k == "--system-levels")
      levels = std::stoi(v);
    else if (k == "--columns-up-to")
      columns_up_to = std::stoll(v);
    else {
      std::fprintf(stderr,
                   "usage: bench_plan [--min-ranks N] [--max-ranks N] [--system-levels 2|4] [--columns-up-to N] "
                   "[--program P]\n");
      return 2;
    }
  }
  fmt::print("bench_plan: rank-local plans (rank 0 and rank N/2+1), every program of the shape, max size 5\n");
  fmt::print("{:>9} {:<30} {:>5} {:>12} {:>12} {:>12} {:>12} {:>12}  {}\n", "ranks", "system", "progs", "resolve(us)",
             "plan med(us)", "heap med(B)", "heap max(B)", "its plan(us)", "program with the largest heap");
  for (std::int64_t n = min_ranks; n <= max_ranks; n *= 2) {
    const auto sys = engine::parse_system_arg(system_for(n, levels));
    const auto cards = sys.cardinalities();
    engine::ParallelismMatrix x = {cards};
    const auto shape = engine::make_shape(cards, sys.level_names(), x, {0}, engine::HierarchyKind::ReductionAxes);
    engine::SynthOptions opt;
    const auto res = engine::synthesize_shape(shape, opt);
    std::vector<double> resolve_t, plan_t, heap, col_t;
    double worst_heap = -1, worst_t = 0;
    std::string worst_name;
    for (const auto& prog : res.programs) {
      const std::string name = engine::program_name(res, prog);
      if (!only.empty() && name != only) continue;
      runtime::ResolvedProgram r;
      resolve_t.push_back(
          time_call([&] { r = runtime::resolve_patterns(sys, x, {0}, engine::HierarchyKind::ReductionAxes, name); }));
      for (std::int64_t rank : {std::int64_t{0}, n / 2 + 1}) {
        const double t = time_call([&] { (void)runtime::make_rank_plan(r.program, rank, false); });
        const std::size_t base = g_current;
        g_peak = base;
        { const auto p = runtime::make_rank_plan(r.program, rank, false); }
        heap.push_back(static_cast<double>(g_peak - base));
        plan_t.push_back(t);
        if (heap.back() > worst_heap) {
          worst_heap = heap.back();
          worst_t = t;
          worst_name = name;
        }
        if (n <= columns_up_to)
          col_t.push_back(time_call([&] { (void)runtime::make_rank_plan(r.program, rank, true); }));
      }
    }
    if (heap.empty()) continue;
    fmt::print("{:>9} {:<30} {:>5} {:>12.1f} {:>12.1f} {:>12.0f} {:>12.0f} {:>12.1f}  {}\n", n, sys.name,
               resolve_t.size(), median(resolve_t) * 1e6, median(plan_t) * 1e6, median(heap), worst_heap, worst_t * 1e6,
               worst_name);
    if (!col_t.empty())
      fmt::print("{:>9} {:<30} with the checked run's columns: median {:.1f} us, max {:.1f} us\n", "", "",
                 median(col_t) * 1e6, *std::max_element(col_t.begin(), col_t.end()) * 1e6);
    std::fflush(stdout);
  }
  return 0;
}
