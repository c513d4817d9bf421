// Fuzz target: measured-programs CSV (p2v simulate --measured-programs: program,seconds[,matrix]).
#include "fuzz_common.hpp"
#include "p2v/sim/rank.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("measured programs", data, size, [](const std::string& text) {
    (void)p2v::sim::parse_program_measurements(text, "fuzz-programs.csv");
  });
}
