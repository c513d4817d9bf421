// Fuzz target: program files in the p2v-simulate/1 format (the --json output of p2v simulate,
// read by p2v run --program-file).
#include "fuzz_common.hpp"
#include "p2v/sim/simulate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("p2v-simulate/1", data, size, [](const std::string& text) {
    (void)p2v::sim::parse_simulate_report(text, "fuzz-simulate.json");
  });
}
