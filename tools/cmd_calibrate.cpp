// p2v calibrate: fit per-link α and β to measured collective times and write a calibrated
// system file (issue 5).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/sim/calibrate.hpp"
#include "p2v/sim/report.hpp"

namespace p2v::tools {
namespace {


struct CalArgs {
  std::string system, measurements, output, algo = "ring";
  bool json = false;
};

Registrar reg(
    "calibrate", "Fit per-link latency and bandwidth to measured collective times; write a calibrated system file",
    52, [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<CalArgs>();
      sub.add_option("--system", a->system, "system file (JSON)")->required();
      sub.add_option("--measurements", a->measurements,
                     "CSV with a header naming collective,groups,bytes,seconds (e.g. written by p2v run --csv)")
          ->required();
      sub.add_option("-o,--output", a->output, "write the calibrated system file here (default: print it)");
      sub.add_option("--algo", a->algo, "NCCL algorithm the measurements used: ring, tree or auto")
          ->capture_default_str();
      sub.add_flag("--json", a->json, "machine-readable report (the calibrated system is in \"system\")");
      return [a] {
        const auto system = engine::parse_system_arg(a->system);
        sim::Simulator simulator(system);
        const auto algo = sim::parse_algorithm(a->algo);
        const auto ms = sim::load_measurements(a->measurements, simulator.topology().num_devices());
        const auto cal = sim::calibrate(simulator, ms, algo);
        const auto text = sim::calibrated_system_json(
            system, simulator.topology(),
            fmt::format("{} calibrated by p2v calibrate from {} ({} measurements; mean |error| {:.1f}% -> {:.1f}%)",
                        system.name, a->measurements, ms.size(), 100 * cal.error_before, 100 * cal.error_after));
        if (!a->output.empty()) {
          std::ofstream out(a->output);
          if (!out) throw Error("cannot write '" + a->output + "'");
          out << text;
        }
        if (a->json) {
          nlohmann::json j;
          j["measurements"] = ms.size();
          j["error_before"] = cal.error_before;
          j["error_after"] = cal.error_after;
          j["iterations"] = cal.iterations;
          j["step_overhead_us_before"] = cal.overhead_before * 1e6;
          j["step_overhead_us_after"] = cal.overhead_after * 1e6;
          j["classes"] = nlohmann::json::array();
          for (const auto& c : cal.classes)
            j["classes"].push_back({{"class", c.cls},
                                    {"bandwidth_gbps_before", c.bandwidth_before / 1e9},
                                    {"bandwidth_gbps_after", c.bandwidth_after / 1e9},
                                    {"latency_us_before", c.latency_before * 1e6},
                                    {"latency_us_after", c.latency_after * 1e6},
                                    {"constrained", c.alpha_weight > 0 || c.beta_weight > 0}});
          j["system"] = nlohmann::json::parse(text);
          if (!a->output.empty()) j["output"] = a->output;
          fmt::print("{}\n", j.dump(2));
          return 0;
        }
        fmt::print("calibrated {} from {} measurements ({} iterations)\n", system.name, ms.size(), cal.iterations);
        fmt::print("  {:<10} {:>12} {:>12} {:>12} {:>12}  {}\n", "class", "GB/s before", "GB/s after", "us before",
                   "us after", "");
        for (const auto& c : cal.classes)
          fmt::print("  {:<10} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f}  {}\n", c.cls, c.bandwidth_before / 1e9,
                     c.bandwidth_after / 1e9, c.latency_before * 1e6, c.latency_after * 1e6,
                     c.alpha_weight > 0 || c.beta_weight > 0 ? "" : "(no measurement uses it: unchanged)");
        fmt::print("  {:<10} {:>12} {:>12} {:>12.3f} {:>12.3f}  (per collective call)\n", "step", "", "",
                   cal.overhead_before * 1e6, cal.overhead_after * 1e6);
        fmt::print("  mean |relative error|: {:.2f}% before, {:.2f}% after\n", 100 * cal.error_before,
                   100 * cal.error_after);
        if (a->output.empty()) fmt::print("\n{}", text);
        else fmt::print("wrote {}\n", a->output);
        return 0;
      };
    });

}  // namespace
}  // namespace p2v::tools
