// Fuzz target: reshard certificates (p2v-reshard-certificate/1, p2v reshard --certify) as read
// by p2v check.
#include "fuzz_common.hpp"
#include "p2v/checker/checker.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("reshard certificate", data, size,
                        [](const std::string& text) { (void)p2v::checker::check_reshard_certificate(text); });
}
