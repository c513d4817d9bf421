// Certificate directories: the manifest's writer and strict reader (manifest.hpp), and
// check_directory (checker.hpp). Its own strict reading, like the rest of the checker.
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
  if (!j.is_object()) throw ManifestError(where + ": not an object");
  for (const char* k : keys)
    if (!j.contains(k)) throw ManifestError(where + ": missing field '" + k + "'");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }))
      throw ManifestError(where + ": unknown field '" + it.key() + "'");
}
std::string text(const json& j, const std::string& where) {
  if (!j.is_string()) throw ManifestError(where + ": not a string");
  return j.get<std::string>();
}
std::vector<std::string> texts(const json& j, const std::string& where) {
  if (!j.is_array()) throw ManifestError(where + ": not an array");
  std::vector<std::string> out;
  for (const auto& v : j) out.push_back(text(v, where));
  return out;
}

}  // namespace

std::string manifest_text(const Manifest& m) {
  json files = json::array();
  for (const auto& f : m.files) files.push_back({{"name", f.name}, {"sha256", f.sha256}, {"bytes", f.bytes}});
  const json j = {{"format", kManifestFormat},
                  {"run", {{"argv", m.argv}}},
                  {"options", {{"solvers", m.solvers}}},
                  {"files", std::move(files)}};
  return j.dump(1) + "\n";
}

Manifest parse_manifest(const std::string& text_) {
  json m;
  try {
    m = parse_json_strict(text_);
  } catch (const json::exception& e) {
    throw ManifestError(std::string("malformed JSON: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw ManifestError(std::string("malformed JSON: ") + e.what());
  }
  Manifest out;
  only(m, "manifest", {"format", "run", "options", "files"});
  if (text(m["format"], "manifest.format") != kManifestFormat)
    throw ManifestError(std::string("manifest.format: expected ") + kManifestFormat);
  only(m["run"], "manifest.run", {"argv"});
  out.argv = texts(m["run"]["argv"], "manifest.run.argv");
  if (out.argv.empty()) throw ManifestError("manifest.run.argv: non-empty array expected");
  only(m["options"], "manifest.options", {"solvers"});
  out.solvers = texts(m["options"]["solvers"], "manifest.options.solvers");
  for (std::size_t i = 0; i < out.solvers.size(); ++i) {
    const auto& v = out.solvers[i];
    if (v != "z3" && v != "cvc5") throw ManifestError("manifest.options.solvers: expected z3 or cvc5, got " + v);
    if (std::find(out.solvers.begin(), out.solvers.begin() + i, v) != out.solvers.begin() + i)
      throw ManifestError("manifest.options.solvers: " + v + " listed twice");
  }
  const json& files = m["files"];
  if (!files.is_array()) throw ManifestError("manifest.files: not an array");
  std::set<std::string> listed;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string at = "manifest.files[" + std::to_string(i) + "]";
    only(files[i], at, {"name", "sha256", "bytes"});
    ManifestFile f;
    f.name = text(files[i]["name"], at + ".name");
    if (f.name.empty() || f.name == "." || f.name == ".." || f.name == kManifestName ||
        f.name.find('/') != std::string::npos)
      throw ManifestError(at + ".name: a file name in the directory expected");
    if (!listed.insert(f.name).second) throw ManifestError(at + ".name: " + f.name + " listed twice");
    f.sha256 = text(files[i]["sha256"], at + ".sha256");
    if (!files[i]["bytes"].is_number_unsigned()) throw ManifestError(at + ".bytes: a size in bytes expected");
    f.bytes = files[i]["bytes"].get<std::uint64_t>();
    out.files.push_back(std::move(f));
  }
  return out;
}

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
    if (fs::is_symlink(root / kManifestName, ec))
      throw Bad(std::string(kManifestName) + ": a symbolic link, not the manifest the run wrote");
    const Manifest m = parse_manifest(read_file(root / kManifestName));
    for (const auto& a : m.argv) d.run += (d.run.empty() ? "" : " ") + a;
    d.context.solvers = m.solvers;
    if (m.files.empty()) throw Bad("manifest.files: non-empty array expected");
    for (const auto& f : m.files) {
      // p2v writes regular files; a link's target is not a file of the run, wherever it points
      if (fs::is_symlink(root / f.name, ec))
        throw Bad(f.name + ": a symbolic link, not a file the run wrote (the manifest lists regular files)");
      const std::string content = read_file(root / f.name);
      if (f.sha256 != sha256_hex(content))
        throw Bad(f.name + ": SHA-256 differs from the manifest's (the file was changed after the run)");
      if (f.bytes != content.size())
        throw Bad(f.name + ": " + std::to_string(content.size()) + " bytes, the manifest says " +
                  std::to_string(f.bytes));
      d.context.files.push_back(f.name);
    }
    for (const auto& e : fs::directory_iterator(root)) {
      const std::string name = e.path().filename().string();
      if (name == kManifestName) continue;
      if (std::none_of(m.files.begin(), m.files.end(), [&](const ManifestFile& f) { return f.name == name; }))
        throw Bad(name + ": not in the manifest (not written by this run)");
    }
    d.context.in_directory = true;
    d.ok = true;
  } catch (const Bad& e) {
    d.reason = e.what();
  } catch (const ManifestError& e) {
    d.reason = std::string(kManifestName) + ": " + e.what();
  } catch (const std::exception& e) {
    d.reason = std::string(dir) + ": " + e.what();
  }
  return d;
}

}  // namespace p2v::checker
