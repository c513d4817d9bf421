// p2v calibrate: fit per-link α and β to measured collective times and write a calibrated
// system file (issue 5).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/sim/calibrate.hpp"
#include "p2v/sim/report.hpp"

namespace p2v::tools {
namespace {

struct CalArgs {
  std::string system, measurements, output, algo = "ring";
  bool json = false;
};

struct CalResult {
  engine::System system;
  sim::CalibrationReport report;
  std::string text;  // the calibrated system file
};

CalResult run(const CalArgs& a) {
  CalResult r{engine::parse_system_arg(a.system), {}, {}};
  sim::Simulator simulator(r.system);
  const auto algo = sim::parse_algorithm(a.algo);
  const auto ms = sim::load_measurements(a.measurements, simulator.topology().num_devices());
  const auto cal = sim::calibrate(simulator, ms, algo);
  nlohmann::json calibrated = sim::calibrated_system_json(
      r.system, simulator.topology(),
      fmt::format("{} calibrated by p2v calibrate from {} ({} measurements; mean |error| {:.1f}% -> {:.1f}%)",
                  r.system.name, a.measurements, ms.size(), 100 * cal.error_before, 100 * cal.error_after));
  r.text = calibrated.dump(2) + "\n";
  if (!a.output.empty()) write_file(a.output, r.text);
  r.report = sim::calibration_report(cal, ms.size(), std::move(calibrated), a.output);
  return r;
}

void print_table(const CalArgs& a, const CalResult& r) {
  const auto& c = r.report;
  fmt::print("calibrated {} from {} measurements ({} iterations)\n", r.system.name, c.measurements, c.iterations);
  fmt::print("  {:<10} {:>12} {:>12} {:>12} {:>12}  {}\n", "class", "GB/s before", "GB/s after", "us before",
             "us after", "");
  for (const auto& k : c.classes)
    fmt::print("  {:<10} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f}  {}\n", k.cls, k.bandwidth_gbps_before,
               k.bandwidth_gbps_after, k.latency_us_before, k.latency_us_after,
               k.constrained ? "" : "(no measurement uses it: unchanged)");
  fmt::print("  {:<10} {:>12} {:>12} {:>12.3f} {:>12.3f}  (per collective call)\n", "step", "", "",
             c.step_overhead_us_before, c.step_overhead_us_after);
  fmt::print("  mean |relative error|: {:.2f}% before, {:.2f}% after\n", 100 * c.error_before, 100 * c.error_after);
  if (a.output.empty())
    fmt::print("\n{}", r.text);
  else
    fmt::print("wrote {}\n", a.output);
}

Registrar reg("calibrate", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<CalArgs>();
  sub.add_option("--system", a->system, "system file (JSON)")->required();
  sub.add_option("--measurements", a->measurements,
                 "CSV with a header naming collective,groups,bytes,seconds (e.g. written by p2v run --csv)")
      ->required();
  sub.add_option("-o,--output", a->output, "write the calibrated system file here (default: print it)");
  sub.add_option("--algo", a->algo, "NCCL algorithm the measurements used: ring, tree or auto")->capture_default_str();
  sub.add_flag("--json", a->json, "machine-readable report (the calibrated system is in \"system\")");
  return [a] {
    const auto r = run(*a);
    if (a->json)
      fmt::print("{}\n", sim::to_json(r.report).dump(2));
    else
      print_table(*a, r);
    return 0;
  };
});

}  // namespace
}  // namespace p2v::tools
