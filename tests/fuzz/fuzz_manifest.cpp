// Fuzz target: certificate directory manifests (p2v-manifest/1, MANIFEST.json) as read by
// p2v check DIR and --force. Its refusals are checker::ManifestError (the checker does not use
// p2v::Error); any other exception is a finding.
#include "fuzz_common.hpp"
#include "p2v/checker/manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("manifest", data, size, [](const std::string& text) {
    try {
      (void)p2v::checker::parse_manifest(text);
    } catch (const p2v::checker::ManifestError&) {
    }
  });
}
