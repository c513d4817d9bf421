// Certificate directories: the manifest's reader (checker.hpp check_directory). Its own strict
// reading, like the rest of the checker.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "p2v/checker/checker.hpp"
#include "read_capped.hpp"

namespace p2v::checker {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct Bad : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_file(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) throw Bad(p.filename().string() + ": not a regular file");
  std::string text;
  switch (detail::read_capped(p.string(), text)) {
    case detail::Read::CannotRead:
      throw Bad("cannot read " + p.string());
    case detail::Read::TooLarge:
      throw Bad(p.filename().string() + ": larger than 256 MiB");
    case detail::Read::Ok:
      break;
  }
  return text;
}

void only(const json& j, const std::string& where, std::initializer_list<const char*> keys) {
  if (!j.is_object()) throw Bad(where + ": not an object");
  for (const char* k : keys)
    if (!j.contains(k)) throw Bad(where + ": missing field '" + k + "'");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }))
      throw Bad(where + ": unknown field '" + it.key() + "'");
}
std::string text(const json& j, const std::string& where) {
  if (!j.is_string()) throw Bad(where + ": not a string");
  return j.get<std::string>();
}

}  // namespace

Directory check_directory(const std::string& dir) {
  Directory d;
  try {
    const fs::path root(dir);
    std::error_code ec;
    if (!fs::is_directory(root, ec)) throw Bad(dir + ": not a directory");
    if (!fs::exists(root / kManifestName, ec)) {
      // p2v writes the manifest last: certificates without it are an interrupted (or foreign) run.
      std::size_t n = 0;
      for (const auto& e : fs::directory_iterator(root, ec)) n += e.path().extension() == ".json" ? 1 : 0;
      if (n > 0)
        throw Bad(std::string(kManifestName) + ": missing: the run that wrote these " + std::to_string(n) +
                  " file(s) did not finish (p2v writes the manifest last), so the directory is incomplete and "
                  "nothing in it is accepted as a run; finish it with the same command and --resume");
      throw Bad(std::string(kManifestName) + ": missing (not a certificate directory written by p2v)");
    }
    const json m = json::parse(read_file(root / kManifestName));
    only(m, "manifest", {"format", "run", "options", "files"});
    if (text(m["format"], "manifest.format") != kManifestFormat)
      throw Bad(std::string("manifest.format: expected ") + kManifestFormat);
    only(m["run"], "manifest.run", {"argv"});
    if (!m["run"]["argv"].is_array() || m["run"]["argv"].empty())
      throw Bad("manifest.run.argv: non-empty array expected");
    for (const auto& a : m["run"]["argv"]) d.run += (d.run.empty() ? "" : " ") + text(a, "manifest.run.argv");
    only(m["options"], "manifest.options", {"solvers"});
    if (!m["options"]["solvers"].is_array()) throw Bad("manifest.options.solvers: not an array");
    for (const auto& s : m["options"]["solvers"]) {
      const std::string v = text(s, "manifest.options.solvers");
      if (v != "z3" && v != "cvc5") throw Bad("manifest.options.solvers: expected z3 or cvc5, got " + v);
      d.context.solvers.push_back(v);
    }
    const json& files = m["files"];
    if (!files.is_array() || files.empty()) throw Bad("manifest.files: non-empty array expected");
    std::set<std::string> listed;
    for (std::size_t i = 0; i < files.size(); ++i) {
      const std::string at = "manifest.files[" + std::to_string(i) + "]";
      only(files[i], at, {"name", "sha256", "bytes"});
      const std::string name = text(files[i]["name"], at + ".name");
      if (name.empty() || name == "." || name == ".." || name == kManifestName || name.find('/') != std::string::npos)
        throw Bad(at + ".name: a file name in the directory expected");
      if (!listed.insert(name).second) throw Bad(at + ".name: " + name + " listed twice");
      const std::string content = read_file(root / name);
      if (text(files[i]["sha256"], at + ".sha256") != sha256_hex(content))
        throw Bad(name + ": SHA-256 differs from the manifest's (the file was changed after the run)");
      if (!files[i]["bytes"].is_number_unsigned() || files[i]["bytes"].get<std::uint64_t>() != content.size())
        throw Bad(name + ": " + std::to_string(content.size()) + " bytes, the manifest says " +
                  files[i]["bytes"].dump());
      d.context.files.push_back(name);
    }
    for (const auto& e : fs::directory_iterator(root)) {
      const std::string name = e.path().filename().string();
      if (name == kManifestName) continue;
      if (!listed.count(name)) throw Bad(name + ": not in the manifest (not written by this run)");
    }
    d.context.in_directory = true;
    d.ok = true;
  } catch (const Bad& e) {
    d.reason = e.what();
  } catch (const json::exception& e) {
    d.reason = std::string(kManifestName) + ": malformed JSON: " + e.what();
  } catch (const std::exception& e) {
    d.reason = std::string(dir) + ": " + e.what();
  }
  return d;
}

}  // namespace p2v::checker
