#pragma once
// Certificate directories (docs/formats.md "Certificate directories"): what synth/verify --certify,
// reshard --certify and rules prove --certify do before and after writing certificates.
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace p2v::tools {

// Makes `dir` ready for a run: creates it when missing. A non-empty directory is refused
// (p2v::Error naming `option`) unless `force`: then the files its MANIFEST.json lists and the
// manifest are removed, and anything else left in it is still refused (p2v did not write it).
// With `resume` (--resume): a directory without MANIFEST.json (an interrupted run) is kept as it
// is; one with a manifest is complete and refused (nothing to resume).
void prepare_certificate_dir(const std::string& dir, bool force, const std::string& option, bool resume = false);

// --resume: whether the certificate at `path` can stay: the independent checker accepts it in
// this directory with the run's `solvers` (re-checked now), and it is the certificate of
// `program` on `matrix` for `system` (its JSON form), with this max_size and Master setting.
// The directory is listed once, when the function is made (the proofs the certificates cite).
using CertificateReuse =
    std::function<bool(const std::string& path, const std::string& program, const std::vector<std::vector<int>>&)>;
CertificateReuse certificate_reuse(const std::string& dir, const std::vector<std::string>& solvers,
                                   const nlohmann::json& system, int max_size, const std::string& master);

// Writes dir/MANIFEST.json (format p2v-manifest/1), last and atomically: this process's command
// line, the solvers the run asked, and every file in `dir` with its size and SHA-256.
void write_manifest(const std::string& dir, const std::vector<std::string>& solvers);

}  // namespace p2v::tools
