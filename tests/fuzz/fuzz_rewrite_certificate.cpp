// Fuzz target: rewrite certificates (p2v-rewrite-certificate/2, p2v rewrite --certificate) as
// read by p2v check (built when the SMT encodings, which hold this reader, are).
#include "fuzz_common.hpp"
#include "p2v/encodings/rewrite_certificate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("rewrite certificate", data, size, [](const std::string& text) {
    std::string summary;
    (void)p2v::encodings::check_rewrite_certificate(text, &summary, nullptr, false);
  });
}
