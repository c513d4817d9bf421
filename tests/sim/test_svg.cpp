// Pictures people read (docs/step.md, docs/simulator.md pictures): the step Gantt chart's time axis, bucket labels and
// default-beside-chosen panels; topology colours distinct per group; readable font sizes; legends
// that name only what is drawn.
#include <doctest/doctest.h>

#include <regex>
#include <set>

#include "helpers.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/step.hpp"
#include "p2v/sim/svg.hpp"

using namespace p2v::engine;
namespace sim = p2v::sim;
namespace st = p2v::sim::step;

namespace {

// Every font-size in an SVG, and the smallest.
int min_font(const std::string& svg) {
  int lo = 1000;
  const std::regex re("font-size=\"([0-9]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    lo = std::min(lo, std::stoi((*it)[1].str()));
  return lo;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("svg: nice ticks and their labels") {
  const auto t = sim::nice_ticks(53.2e-3, 8);
  REQUIRE(t.size() == 6);  // 0, 10, ..., 50 ms
  CHECK(t[1] == simtest::rel(0.01));
  CHECK(t.back() == simtest::rel(0.05));
  CHECK(sim::tick_label(0.02, 0.0532) == "20 ms");
  CHECK(sim::tick_label(2.5e-6, 1e-5) == "2.5 us");
  CHECK(sim::tick_label(1.5, 2.0) == "1.5 s");
  CHECK(sim::tick_label(0, 1) == "0");
  CHECK(sim::nice_ticks(0, 5).empty());
}

TEST_CASE("svg: the step chart has a time axis, bucket labels and the default beside the chosen schedule") {
  const System sys = simtest::two_level(2, 1, 1, 10, 100, 1);
  sim::Simulator s{sys};
  const LoweredProgram ar = sim::single_allreduce({{0, 1}});
  st::SyncCosts costs(s, {ar}, sim::Algorithm::Ring, false);
  std::vector<st::LayerCost> lc;
  for (int i = 0; i < 6; ++i) lc.push_back({1e-3, 2e-3, 1e6});
  const auto ddp = st::simulate_step(lc, st::ddp_buckets(lc, 1e6), std::vector<int>(6, 0), costs, 0);
  const auto one = st::simulate_step(lc, {{0, 5}}, {0}, costs, 0);
  const std::string svg = st::step_svg(one, &ddp, {"AllReduce (DDP default)"}, "t");
  CHECK(svg.find("default (DDP's buckets and program)") != std::string::npos);
  CHECK(svg.find("chosen: step") != std::string::npos);
  // Ticks with units: more than the two ends.
  const double span = std::max(ddp.step_s, one.step_s);
  int ticks = 0;
  for (double v : sim::nice_ticks(span, 8))
    if (v > 0) ticks += svg.find(">" + sim::tick_label(v, span) + "<") != std::string::npos;
  CHECK(ticks >= 4);
  // Six DDP buckets b0..b5 labelled in the chart; the chosen one bucket b0 in the table.
  for (int b = 0; b < 6; ++b) CHECK(svg.find(">b" + std::to_string(b) + "<") != std::string::npos);
  CHECK(min_font(svg) >= 11);
  // Without a default only the schedule.
  const std::string solo = st::step_svg(ddp, {"AllReduce"}, "t");
  CHECK(solo.find("default (DDP") == std::string::npos);
  CHECK(solo.find("schedule: step") != std::string::npos);
}

TEST_CASE("svg: topology colours differ for every group of a step (beyond 16) and labels are >= 11 px") {
  const System sys = simtest::two_level(8, 8, 10, 5, 100, 1);  // 64 devices
  sim::Simulator s{sys};
  Groups pairs;
  for (int d = 0; d < 64; d += 2) pairs.push_back({d, d + 1});  // 32 groups
  const LoweredProgram prog{{Collective::AllReduce, pairs}};
  const std::string svg = sim::topology_svg(s.topology(), prog, nullptr, "t");
  std::set<std::string> fills;
  const std::regex re("fill=\"(hsl\\([^\"]*\\))\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it)
    fills.insert((*it)[1].str());
  CHECK(fills.size() == 32);
  CHECK(min_font(svg) >= 11);
}

TEST_CASE("svg: the ranking legend names only what is drawn") {
  std::vector<sim::RankPoint> pts = {{"A", 1e-3}, {"B", 2e-3}};
  const std::string pred = sim::ranking_svg(pts, 0, "t");
  CHECK(pred.find("measured") == std::string::npos);
  CHECK(pred.find("single AllReduce") == std::string::npos);
  CHECK(min_font(pred) >= 11);
  pts[1].measured_s = 2.5e-3;
  const std::string both = sim::ranking_svg(pts, 1.5e-3, "t");
  CHECK(count(both, "measured") >= 2);  // the legend and the point's tooltip
  CHECK(both.find("- - single AllReduce") != std::string::npos);
}
