// Synthesis time per request (all matrices of a config, size 5), and how it grows with
// cardinality at fixed depth. Run: ./build/bench/bench_synth [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "p2v/engine/synth.hpp"

using namespace p2v::engine;

namespace {

struct Config {
  std::vector<int> levels, axes, reduce;
};

// One request: every parallelism matrix of the config, hierarchy (d), size 5.
void BM_PaperConfig(benchmark::State& st, Config c) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < c.levels.size(); ++i) names.push_back("l" + std::to_string(i));
  const auto matrices = enumerate_matrices(c.levels, c.axes);
  std::size_t programs = 0;
  for (auto _ : st) {
    programs = 0;
    for (const auto& x : matrices) {
      Placement p(c.levels, c.axes, x, c.reduce);
      programs += synthesize(p, names, HierarchyKind::ReductionAxes, {}).programs.size();
    }
    benchmark::DoNotOptimize(programs);
  }
  st.counters["matrices"] = static_cast<double>(matrices.size());
  st.counters["programs"] = static_cast<double>(programs);
}

// A (d) hierarchy given by its cardinalities, reducing over all devices, size 5.
void BM_Hierarchy(benchmark::State& st, std::vector<int> cards) {
  std::vector<int> full{1};
  full.insert(full.end(), cards.begin(), cards.end());
  auto h = make_plain_hierarchy(full);
  std::vector<int> all(h.num_local());
  for (int i = 0; i < h.num_local(); ++i) all[i] = i;
  std::size_t programs = 0;
  std::int64_t nodes = 0;
  for (auto _ : st) {
    auto r = synthesize(h, {all}, {});
    programs = r.programs.size();
    nodes = r.nodes;
    benchmark::DoNotOptimize(programs);
  }
  st.counters["devices"] = h.num_local();
  st.counters["programs"] = static_cast<double>(programs);
  st.counters["attempts"] = static_cast<double>(nodes);
}

}  // namespace

// The paper's configurations (4 nodes).
BENCHMARK_CAPTURE(BM_PaperConfig, a100_64_r0, Config{{4, 16}, {64}, {0}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PaperConfig, a100_4x16_r0, Config{{4, 16}, {4, 16}, {0}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PaperConfig, a100_4x16_r1, Config{{4, 16}, {4, 16}, {1}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PaperConfig, a100_16x2x2_r02, Config{{4, 16}, {16, 2, 2}, {0, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PaperConfig, a100_8x2x4_r02, Config{{4, 16}, {8, 2, 4}, {0, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PaperConfig, v100_2x2x8_r02, Config{{4, 8}, {2, 2, 8}, {0, 2}})->Unit(benchmark::kMillisecond);

// Growth with cardinality at fixed depth.
BENCHMARK_CAPTURE(BM_Hierarchy, d1_4, std::vector<int>{4})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d1_16, std::vector<int>{16})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d1_64, std::vector<int>{64})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d1_256, std::vector<int>{256})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d2_2x2, std::vector<int>{2, 2})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d2_4x4, std::vector<int>{4, 4})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d2_8x8, std::vector<int>{8, 8})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d2_16x16, std::vector<int>{16, 16})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d3_2x2x2, std::vector<int>{2, 2, 2})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d3_2x2x4, std::vector<int>{2, 2, 4})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d3_4x4x4, std::vector<int>{4, 4, 4})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d3_4x4x8, std::vector<int>{4, 4, 8})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Hierarchy, d3_8x8x4, std::vector<int>{8, 8, 4})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
