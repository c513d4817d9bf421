#pragma once
// The independent certificate checker (the trusted core). It re-derives the synthesis hierarchy
// from the placement, the device groups of every step from the hierarchy, the lowered groups and
// the goal, replays the program under the five Hoare rules (docs/model.md §4) with its own small code, and
// accepts only if every recorded state and the goal match. It re-derives what it can on the
// replayed instance (the notation, shortest, minimal, the number of valid programs up to the bound
// by its own enumeration), refuses any field it does not know or that is missing, and reports every
// other claim (the solvers' answers) per claim as recorded, not re-checked.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "p2v/checker/manifest.hpp"

namespace p2v::checker {

// One claim of an accepted certificate and how the checker established it.
struct Claim {
  std::string path;   // the JSON path of the field that states it ("" for the certificate as a whole)
  std::string claim;  // in words
  std::string how;    // "replayed", "re-derived" (by the checker's own code) or "recorded" (not re-checked)
};

struct Verdict {
  bool ok = false;
  std::string reason;         // why rejected ("" when accepted)
  std::string summary;        // when accepted: the program and the facts it records
  std::vector<Claim> claims;  // when accepted: every claim and how it was established
};

// What a certificate directory's manifest adds to the check of each of its files: the solvers the
// run asked (each must have answered) and the files beside it (its proofs must be among them).
struct Context {
  bool in_directory = false;
  std::vector<std::string> solvers, files;
};

// The reshard certificate's format (docs/formats.md), which check_certificate dispatches on.
inline constexpr const char* kReshardCertificateFormat = "p2v-reshard-certificate/1";

// JSON as the checker reads it: nlohmann's parser, refusing what other readers take differently
// (an object with a key twice, where readers keep the first or the last copy). Throws
// std::invalid_argument naming the key, nlohmann::json::exception for text that is not JSON.
nlohmann::json parse_json_strict(const std::string& text);

Verdict check_certificate(const std::string& json_text, const Context& ctx = {});
// The same on a document the caller has already parsed (p2v check parses each file once to
// dispatch on its format); `json_text` is its text, used only by the reshard checker.
Verdict check_certificate(const nlohmann::json& doc, const std::string& json_text, const Context& ctx = {});
Verdict check_certificate_file(const std::string& path);
// Reshard certificates (format p2v-reshard-certificate/1, docs/model.md §10); check_certificate dispatches
// to it by the format field.
Verdict check_reshard_certificate(const std::string& json_text);

// The checker's own test of the summed-levels form that symbolic-closure facts over summed levels
// rely on (encodings/README.md): state[d][r][j] says that device d holds row r with column j,
// coords[d][l] is device d's digit at level l. True when every device that holds rows holds, on its
// first row, the columns of exactly the devices that agree with it outside some set of levels.
bool summed_levels_form(const std::vector<std::vector<std::vector<bool>>>& state,
                        const std::vector<std::vector<int>>& coords);

// SHA-256 of `data`, 64 lower-case hex digits (sha256.cpp, FIPS 180-4).
std::string sha256_hex(const std::string& data);

// Certificate directories (docs/formats.md "Certificate directories"): MANIFEST.json, format
// p2v-manifest/1 (manifest.hpp), lists the run (command line), its options and every file with its SHA-256 and
// size. check_directory refuses a missing or malformed manifest, a file not in it, a listed file
// that is missing or whose hash or size differs, and anything in the directory that is not a
// regular file; it does not check the certificates themselves (the caller does, with `context`).
struct Directory {
  bool ok = false;
  std::string reason;
  std::string run;  // the recorded command line
  Context context;  // in_directory, the options' solvers, the listed files (in manifest order)
};
Directory check_directory(const std::string& dir);

}  // namespace p2v::checker
