// Fuzz target: measurements CSV (p2v calibrate / simulate --measurements: collective,groups,
// bytes,seconds), read for a 32-device system and, when it parses, calibrated against it as
// p2v calibrate does.
#include "fuzz_common.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/sim/calibrate.hpp"
#include "p2v/sim/simulate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("measurements", data, size, [](const std::string& text) {
    static const p2v::sim::Simulator base(p2v::engine::parse_system_inline("node=2,gpu=16"));
    p2v::sim::Simulator simulator = base;
    const auto ms = p2v::sim::parse_measurements(text, "fuzz-measurements.csv", simulator.topology().num_devices());
    if (ms.size() <= 16) (void)p2v::sim::calibrate(simulator, ms, p2v::sim::Algorithm::Ring);
  });
}
