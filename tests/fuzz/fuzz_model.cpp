// Fuzz target: model files (p2v step --model FILE).
#include "fuzz_common.hpp"
#include "p2v/sim/step.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("model", data, size, [](const std::string& text) {
    (void)p2v::sim::step::parse_model_json(text, "fuzz-model.json");
  });
}
