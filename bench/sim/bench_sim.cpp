// Simulating every program of every paper config (the foundation issue's list) — target: < 1 s
// in total. BM_SimulateAll times the cost model alone over pre-lowered programs; BM_RankAll also
// synthesizes (what `p2v simulate` does for every matrix).
#include <benchmark/benchmark.h>
#include <fmt/core.h>

#include "p2v/engine/placement.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/rank.hpp"

using namespace p2v::engine;
using namespace p2v::sim;

namespace {

struct Config {
  const char* system;
  std::vector<int> axes, reduce;
};

const std::vector<Config>& configs() {
  static const std::vector<Config> c{
      {"a100-4node.json", {64}, {0}},         {"a100-4node.json", {4, 16}, {0}},
      {"a100-4node.json", {4, 16}, {1}},      {"a100-4node.json", {16, 2, 2}, {0, 2}},
      {"a100-4node.json", {8, 2, 4}, {0, 2}}, {"v100-4node.json", {2, 2, 8}, {0, 2}},
  };
  return c;
}

System load(const char* f) { return load_system_file(std::string(P2V_SOURCE_DIR) + "/examples/systems/" + f); }

struct Work {
  std::vector<Simulator> sims;
  std::vector<std::pair<int, LoweredProgram>> programs;  // (simulator index, program)
  std::vector<double> bytes;
};

const Work& work() {
  static const Work work_ = [] {
    Work w;
    for (const auto& c : configs()) {
      const auto s = load(c.system);
      w.sims.emplace_back(s);
      w.bytes.push_back(default_bytes(s));
      ProgramSource source(s, c.axes, {});
      for (const auto& x : enumerate_matrices(s.cardinalities(), c.axes)) {
        Placement p(s.cardinalities(), c.axes, x, c.reduce);
        const auto pp = source.programs_for(x, c.reduce);
        for (const auto& prog : pp.result->programs)
          w.programs.emplace_back(static_cast<int>(w.sims.size()) - 1, pp.lower(prog));
        w.programs.emplace_back(static_cast<int>(w.sims.size()) - 1, single_allreduce(p.reduction_groups()));
      }
    }
    return w;
  }();
  return work_;
}

void BM_SimulateAll(benchmark::State& st) {
  const auto& w = work();
  const auto algo = static_cast<Algorithm>(st.range(0));
  double sink = 0;
  for (auto _ : st) {
    for (const auto& [si, prog] : w.programs) {
      CostOptions o;
      o.algo = algo;
      o.bytes = w.bytes[static_cast<std::size_t>(si)];
      sink += w.sims[static_cast<std::size_t>(si)].time(prog, o);
    }
  }
  benchmark::DoNotOptimize(sink);
  st.counters["programs"] = static_cast<double>(w.programs.size());
  st.SetLabel(to_string(algo));
}
BENCHMARK(BM_SimulateAll)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_SimulateAllBreakdown(benchmark::State& st) {
  const auto& w = work();
  double sink = 0;
  for (auto _ : st) {
    for (const auto& [si, prog] : w.programs) {
      CostOptions o;
      o.bytes = w.bytes[static_cast<std::size_t>(si)];
      sink += w.sims[static_cast<std::size_t>(si)].simulate(prog, o).time_s;
    }
  }
  benchmark::DoNotOptimize(sink);
  st.counters["programs"] = static_cast<double>(w.programs.size());
}
BENCHMARK(BM_SimulateAllBreakdown)->Unit(benchmark::kMillisecond);

// Synthesis + lowering + simulation + sorting, from the system files (topology graphs included).
void BM_RankAll(benchmark::State& st) {
  std::size_t n = 0;
  for (auto _ : st) {
    n = 0;
    for (const auto& c : configs()) {
      const auto s = load(c.system);
      Simulator sim(s);
      CostOptions o;
      o.bytes = default_bytes(s);
      ProgramSource programs(s, c.axes, {});
      for (const auto& x : enumerate_matrices(s.cardinalities(), c.axes)) {
        auto r = rank_placement(sim, programs, Placement(s.cardinalities(), c.axes, x, c.reduce), o);
        n += r.programs.size() + 1;
        benchmark::DoNotOptimize(r);
      }
    }
  }
  st.counters["programs"] = static_cast<double>(n);
}
BENCHMARK(BM_RankAll)->Unit(benchmark::kMillisecond);

void BM_BuildTopology(benchmark::State& st) {
  const auto s = load(st.range(0) ? "v100-4node.json" : "a100-4node.json");
  for (auto _ : st) benchmark::DoNotOptimize(Topology::build(s));
  st.SetLabel(st.range(0) ? "v100-4node" : "a100-4node");
}
BENCHMARK(BM_BuildTopology)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
