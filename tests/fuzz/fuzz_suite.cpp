// Fuzz target: suite files (p2v prove --suite FILE). System paths in the suite are resolved
// against the directory of the name given here (P2V_FUZZ_SUITE_DIR: examples/suites, so
// "../systems/fig2a.json" of the seeds resolves).
#include "fuzz_common.hpp"
#include "p2v/proofs/expressiveness.hpp"

#ifndef P2V_FUZZ_SUITE_DIR
#define P2V_FUZZ_SUITE_DIR "."
#endif

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("suite", data, size, [](const std::string& text) {
    (void)p2v::proofs::parse_suite(text, P2V_FUZZ_SUITE_DIR "/fuzz-suite.json");
  });
}
