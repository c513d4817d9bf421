#pragma once
// Certificate directories (docs/formats.md "Certificate directories"): what synth/verify --certify,
// reshard --certify and rules prove --certify do before and after writing certificates.
#include <string>
#include <vector>

namespace p2v::tools {

// Makes `dir` ready for a run: creates it when missing. A non-empty directory is refused
// (p2v::Error naming `option`) unless `force`: then the files its MANIFEST.json lists and the
// manifest are removed, and anything else left in it is still refused (p2v did not write it).
void prepare_certificate_dir(const std::string& dir, bool force, const std::string& option);

// Writes dir/MANIFEST.json (format p2v-manifest/1), last and atomically: this process's command
// line, the solvers the run asked, and every file in `dir` with its size and SHA-256.
void write_manifest(const std::string& dir, const std::vector<std::string>& solvers);

}  // namespace p2v::tools
