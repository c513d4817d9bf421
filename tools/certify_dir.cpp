// Certificate directories: refusing a used directory, --force, and the manifest written last.
#include "certify_dir.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "p2v/checker/checker.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/write.hpp"

namespace p2v::tools {

namespace fs = std::filesystem;

namespace {
std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  if (!f) throw Error(fmt::format("cannot read '{}'", p.string()));
  return ss.str();
}
}  // namespace

void prepare_certificate_dir(const std::string& dir, bool force, const std::string& option) {
  std::error_code ec;
  if (dir.empty()) throw Error(option + ": give a directory");
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error(fmt::format("{} {}: not a directory", option, dir));
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) throw Error(fmt::format("{}: cannot create directory '{}': {}", option, dir, ec.message()));
    return;
  }
  if (fs::is_empty(dir, ec)) return;
  if (!force)
    throw Error(
        fmt::format("{} {}: the directory is not empty (an earlier run's certificates?); give --force to "
                    "replace the files its {} lists, or an empty directory",
                    option, dir, checker::kManifestName));
  const fs::path manifest = fs::path(dir) / checker::kManifestName;
  if (fs::exists(manifest, ec)) {
    try {
      for (const auto& f : checker::parse_manifest(read_all(manifest)).files) fs::remove(fs::path(dir) / f.name, ec);
    } catch (const checker::ManifestError& e) {
      throw Error(fmt::format("{} {} --force: its {} is not readable ({}); remove the directory yourself", option, dir,
                              checker::kManifestName, e.what()));
    }
    fs::remove(manifest, ec);
  }
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  if (!left.empty()) {
    std::sort(left.begin(), left.end());
    throw Error(
        fmt::format("{} {} --force: {} file(s) not listed in a p2v manifest remain (e.g. {}); p2v removes only "
                    "what it wrote: remove them yourself or use an empty directory",
                    option, dir, left.size(), left.front()));
  }
}

void write_manifest(const std::string& dir, const std::vector<std::string>& solvers) {
  checker::Manifest m;
  {
    std::ifstream f("/proc/self/cmdline", std::ios::binary);
    std::string arg;
    while (std::getline(f, arg, '\0')) m.argv.push_back(arg);
  }
  if (m.argv.empty()) m.argv.push_back("p2v");
  m.solvers = solvers;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name == checker::kManifestName) continue;
    if (!e.is_regular_file()) throw Error(fmt::format("{}: {} is not a regular file", dir, name));
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const std::string content = read_all(fs::path(dir) / name);
    m.files.push_back({name, checker::sha256_hex(content), content.size()});
  }
  engine::write_file_atomic((fs::path(dir) / checker::kManifestName).string(), checker::manifest_text(m), "manifest");
}

}  // namespace p2v::tools
