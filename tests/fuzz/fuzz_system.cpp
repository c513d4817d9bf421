// Fuzz target: system files (--system FILE, a JSON object) and inline systems (--system node=4,gpu=16).
#include "fuzz_common.hpp"
#include "p2v/engine/system.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("system", data, size, [](const std::string& text) {
    if (text.find('{') != std::string::npos) {
      const auto s = p2v::engine::parse_system_json(text, "fuzz-system.json");
      (void)p2v::engine::system_json(s);  // what a read system is written back as (calibrate -o)
    } else {
      (void)p2v::engine::parse_system_inline(text);
    }
  });
}
