// Fuzz target: program files in the p2v-synth/2 format (the --json output of p2v synth, read by
// p2v run/export --program-file).
#include "fuzz_common.hpp"
#include "p2v/engine/synth_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("p2v-synth/2", data, size,
                        [](const std::string& text) { (void)p2v::engine::parse_synth_file(text, "fuzz-synth.json"); });
}
