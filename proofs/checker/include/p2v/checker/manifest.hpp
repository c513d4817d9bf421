#pragma once
// The manifest of a certificate directory, MANIFEST.json, format p2v-manifest/1 (docs/formats.md,
// "Certificate directories"): the run's command line, the solvers it asked and every other file of
// the directory with its size and SHA-256. One home for the format: the writer (tools/certify_dir
// writes the manifest last) and the strict reader (check_directory, and --force, which removes
// the files an old manifest lists). Part of the checker: nlohmann-json only.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace p2v::checker {

inline constexpr const char* kManifestName = "MANIFEST.json";
inline constexpr const char* kManifestFamily = "p2v-manifest";
inline constexpr int kManifestVersion = 1;
inline constexpr const char* kManifestFormat = "p2v-manifest/1";

struct ManifestFile {
  std::string name;    // a file name in the directory (no '/', not "." or "..", not the manifest)
  std::string sha256;  // 64 lower-case hex digits
  std::uint64_t bytes = 0;
  bool operator==(const ManifestFile&) const = default;
};

struct Manifest {
  std::vector<std::string> argv;     // the run's command line, non-empty
  std::vector<std::string> solvers;  // z3, cvc5
  std::vector<ManifestFile> files;   // no name twice (check_directory also refuses an empty list)
  bool operator==(const Manifest&) const = default;
};

// What parse_manifest refuses, naming the field ("manifest.files[2].bytes: ...").
struct ManifestError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The manifest's text (JSON, one field per line, a final newline).
std::string manifest_text(const Manifest& m);
// Strict: the format and version, every field present and of its type, no other field, the
// constraints above; throws ManifestError. Does not look at the directory.
Manifest parse_manifest(const std::string& text);

}  // namespace p2v::checker
