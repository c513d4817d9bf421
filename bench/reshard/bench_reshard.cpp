// Synthesis time of `p2v reshard` on random problems in the paper's style (the targets of docs/reshard.md:
// median < 5 ms, max < 100 ms over 1,000 problems). Usage: bench_reshard [N] [SEED]
// Prints, per mesh kind, the median / p99 / max time of engine::reshard::plan (parse, search,
// final permute, baseline, pricing) and checks each result is within the bound and no costlier
// than the baseline.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>

#include "p2v/engine/reshard.hpp"

int main(int argc, char** argv) {
  namespace rs = p2v::engine::reshard;
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  const unsigned long long seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
  const char* names[] = {"a=2,b=2,c=2 (1-6-D)", "x=4,y=6 (1-4-D)", "x=3,y=5 (1-4-D)"};
  int bad = 0;
  for (int kind = 0; kind < 3; ++kind) {
    std::mt19937_64 rng(seed + static_cast<unsigned long long>(kind));
    std::vector<double> ms;
    double worse = 1.0, sum_ratio = 0.0;
    int cheaper = 0;
    for (int i = 0; i < n; ++i) {
      const auto p = rs::random_problem(rng, kind);
      rs::Request r{p.mesh, p.from, p.to, {}, "f32", rs::CostKind::Paper, {}};
      const auto t0 = std::chrono::steady_clock::now();
      rs::Plan pl;
      try {
        pl = rs::plan(r);
      } catch (const std::exception& e) {
        fmt::print("FAILED: --mesh {} --from \"{}\" --to \"{}\": {}\n", p.mesh, p.from, p.to, e.what());
        ++bad;
        continue;
      }
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (pl.program.peak > pl.bound || pl.program.cost > pl.baseline.cost) {
        ++bad;
        fmt::print("BAD: --mesh {} --from \"{}\" --to \"{}\"\n", p.mesh, p.from, p.to);
      }
      if (pl.program.cost < pl.baseline.cost) ++cheaper;
      const double ratio =
          pl.program.cost ? static_cast<double>(pl.baseline.cost) / static_cast<double>(pl.program.cost) : 1.0;
      worse = std::max(worse, ratio);
      sum_ratio += std::log(std::max(ratio, 1.0));
    }
    std::sort(ms.begin(), ms.end());
    fmt::print(
        "{:<22} n={} median {:.3f} ms  p99 {:.3f} ms  max {:.3f} ms  | cheaper than baseline in {} "
        "(geo-mean baseline/p2v cost {:.2f}x, max {:.1f}x)\n",
        names[kind], n, ms[ms.size() / 2], ms[ms.size() * 99 / 100], ms.back(), cheaper, std::exp(sum_ratio / n),
        worse);
  }
  return bad ? 1 : 0;
}
