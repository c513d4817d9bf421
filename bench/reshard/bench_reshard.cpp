// Synthesis time and optimality of `p2v reshard` on random problems in the paper's style (docs/reshard.md
// targets: median synthesis < 5 ms; the exact optimum on every problem small enough to
// brute-force; never costlier than the program of the previous search, which placed its one
// allpermute last). Usage:
//   bench_reshard [N] [SEED] [TODAY.tsv]   N problems per mesh (a=2,b=2,c=2; x=4,y=6; x=3,y=5; x=4,y=4)
//   bench_reshard --list [N] [SEED]        prints the problems (mesh, from, to; tab-separated)
// TODAY.tsv (bench/reshard/today_costs.tsv) holds the previous search's cost of each listed problem
// (how it was made is in its first line). Prints, per mesh, the median / p99 / max time of
// reshard::plan (parse, search, lowering, baseline, pricing), how many problems were compared with
// the brute force and equal to it, and how many are cheaper / costlier than before. Exit 1 on any
// problem over the bound, costlier than the baseline, the brute force or before.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "brute_force.hpp"
#include "p2v/reshard/plan.hpp"

int main(int argc, char** argv) {
  namespace rs = p2v::reshard;
  const bool list = argc > 1 && std::strcmp(argv[1], "--list") == 0;
  const int a0 = list ? 2 : 1;
  const int n = argc > a0 ? std::atoi(argv[a0]) : 250;
  const unsigned long long seed = argc > a0 + 1 ? std::strtoull(argv[a0 + 1], nullptr, 10) : 1;
  std::map<std::string, std::int64_t> today;
  if (!list && argc > a0 + 2) {
    std::ifstream in(argv[a0 + 2]);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const auto t = line.rfind('\t');
      today[line.substr(0, t)] = std::stoll(line.substr(t + 1));
    }
  }
  const char* names[] = {"a=2,b=2,c=2 (1-6-D)", "x=4,y=6 (1-4-D)", "x=3,y=5 (1-4-D)", "x=4,y=4 (1-4-D)"};
  int bad = 0;
  std::vector<double> all_ms;
  for (int kind = 0; kind < rs::kRandomMeshKinds; ++kind) {
    std::mt19937_64 rng(seed + static_cast<unsigned long long>(kind));
    std::vector<double> ms;
    int compared = 0, equal = 0, cheaper = 0, costlier = 0, known = 0;
    for (int i = 0; i < n; ++i) {
      const auto p = rs::random_problem(rng, kind);
      const std::string id = p.mesh + "\t" + p.from + "\t" + p.to;
      if (list) {
        fmt::print("{}\n", id);
        continue;
      }
      rs::Request r{p.mesh, p.from, p.to, {}, "f32", rs::CostKind::Paper, {}, {}};
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
        fmt::print("BAD (bound or baseline): --mesh {} --from \"{}\" --to \"{}\"\n", p.mesh, p.from, p.to);
      }
      const auto best = rs::testing::brute_force_optimum(pl.mesh, pl.from, pl.to, pl.limit);
      if (best >= 0) {
        ++compared;
        if (pl.program.cost == best) {
          ++equal;
        } else {
          ++bad;
          fmt::print("NOT OPTIMAL: --mesh {} --from \"{}\" --to \"{}\": {} vs brute force {}\n", p.mesh, p.from, p.to,
                     pl.program.cost, best);
        }
      }
      if (auto it = today.find(id); it != today.end()) {
        ++known;
        cheaper += pl.program.cost < it->second;
        if (pl.program.cost > it->second) {
          ++costlier;
          ++bad;
          fmt::print("COSTLIER than before: --mesh {} --from \"{}\" --to \"{}\": {} vs {}\n", p.mesh, p.from, p.to,
                     pl.program.cost, it->second);
        }
      }
    }
    if (list) continue;
    all_ms.insert(all_ms.end(), ms.begin(), ms.end());
    std::sort(ms.begin(), ms.end());
    fmt::print(
        "{:<22} n={} median {:.3f} ms  p99 {:.3f} ms  max {:.3f} ms | brute force: {} compared, {} equal | "
        "vs before ({} known): {} cheaper, {} costlier\n",
        names[kind], n, ms[ms.size() / 2], ms[ms.size() * 99 / 100], ms.back(), compared, equal, known, cheaper,
        costlier);
  }
  if (!list) {
    std::sort(all_ms.begin(), all_ms.end());
    fmt::print("all {} problems: median {:.3f} ms, max {:.3f} ms; {} bad\n", all_ms.size(), all_ms[all_ms.size() / 2],
               all_ms.back(), bad);
  }
  return bad ? 1 : 0;
}
