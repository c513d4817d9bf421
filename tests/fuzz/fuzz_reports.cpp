// Fuzz target: the other reports p2v reads back, the --json outputs of p2v step
// (p2v-step) and p2v calibrate (p2v-calibrate); the input's first byte picks the reader.
#include "fuzz_common.hpp"
#include "p2v/sim/calibrate.hpp"
#include "p2v/sim/step_plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("report", data, size, [](const std::string& text) {
    if (text.find("p2v-calibrate") != std::string::npos)
      (void)p2v::sim::parse_calibration_report(text, "fuzz-calibrate.json");
    else
      (void)p2v::sim::step::parse_step_report(text, "fuzz-step.json");
  });
}
