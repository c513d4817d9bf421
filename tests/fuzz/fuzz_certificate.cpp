// Fuzz target: program certificates (p2v-certificate/1, p2v-shape-certificate/1) as read by
// p2v check (the independent checker, which also dispatches p2v-reshard-certificate/1 by its
// format field) and by p2v run --certificate (the engine's strict reader, then the checker).
// A checker rejection is a verdict, not an exception; any exception out of the checker is a bug.
#include "fuzz_common.hpp"
#include "p2v/checker/checker.hpp"
#include "p2v/engine/certificate_format.hpp"
#include "p2v/engine/json_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("certificate", data, size, [](const std::string& text) {
    (void)p2v::checker::check_certificate(text);
    const auto j = p2v::engine::parse_json(text, "fuzz-certificate.json");
    (void)p2v::engine::any_certificate_from_json(j, "fuzz-certificate.json");
  });
}
