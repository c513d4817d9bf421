// Fuzz target: rule certificates (p2v-rule-certificate/1, p2v rules prove --certificates) as
// read by p2v check (built when the SMT encodings, which hold this reader, are).
#include "fuzz_common.hpp"
#include "p2v/encodings/rules.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("rule certificate", data, size, [](const std::string& text) {
    std::string summary;
    (void)p2v::encodings::check_rule_certificate(text, &summary);
  });
}
