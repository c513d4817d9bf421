// Fuzz target: measurements CSV (p2v calibrate / simulate --measurements: collective,groups,
// bytes,seconds), read for the 32 devices of examples/systems/a100-2node.json and, when it
// parses, calibrated against that system as p2v calibrate does.
#include "fuzz_common.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/calibrate.hpp"
#include "p2v/sim/simulate.hpp"

#ifndef P2V_FUZZ_SYSTEM
#define P2V_FUZZ_SYSTEM "examples/systems/a100-2node.json"
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Outside the classifier: a system that cannot be simulated stops the target at once.
  static const p2v::sim::Simulator base(p2v::engine::load_system_file(P2V_FUZZ_SYSTEM));
  return p2v::fuzz::run("measurements", data, size, [](const std::string& text) {
    p2v::sim::Simulator simulator = base;
    const auto ms = p2v::sim::parse_measurements(text, "fuzz-measurements.csv", simulator.topology().num_devices());
    if (ms.size() <= 16) (void)p2v::sim::calibrate(simulator, ms, p2v::sim::Algorithm::Ring);
  });
}
