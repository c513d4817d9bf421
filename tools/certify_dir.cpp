// Certificate directories: refusing a used directory, --force, and the manifest written last.
#include "certify_dir.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
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

void prepare_certificate_dir(const std::string& dir, bool force, const std::string& option, bool resume) {
  std::error_code ec;
  if (dir.empty()) throw Error(option + ": give a directory");
  if (resume && force)
    throw Error("give --resume (go on with an interrupted run) or --force (replace a run), not both");
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error(fmt::format("{} {}: not a directory", option, dir));
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) throw Error(fmt::format("{}: cannot create directory '{}': {}", option, dir, ec.message()));
    return;
  }
  if (fs::is_empty(dir, ec)) return;
  if (resume) {
    if (fs::exists(fs::path(dir) / checker::kManifestName, ec))
      throw Error(
          fmt::format("{} {} --resume: the run is complete (its {} exists); nothing to resume (check it with "
                      "p2v check {}, or give --force to redo it)",
                      option, dir, checker::kManifestName, dir));
    for (const auto& e : fs::directory_iterator(dir))
      if (!e.is_regular_file())
        throw Error(fmt::format("{} {} --resume: {} is not a regular file (p2v writes only files)", option, dir,
                                e.path().filename().string()));
    return;  // certificates kept where the checker accepts them (certificate_reuse), the rest redone
  }
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

CertificateReuse certificate_reuse(const std::string& dir, const std::vector<std::string>& solvers,
                                   const nlohmann::json& system, int max_size, const std::string& master) {
  checker::Context ctx;
  ctx.in_directory = true;
  ctx.solvers = solvers;
  for (const auto& e : fs::directory_iterator(dir)) ctx.files.push_back(e.path().filename().string());
  std::sort(ctx.files.begin(), ctx.files.end());
  return [ctx, system, max_size, master](const std::string& path, const std::string& program,
                                         const std::vector<std::vector<int>>& matrix) {
    try {
      const std::string text = read_all(path);
      if (!checker::check_certificate(text, ctx).ok) return false;
      const auto j = nlohmann::json::parse(text);
      // A shape certificate holds its smallest instance's certificate; a concrete one is that.
      const bool shape = j.at("format").get<std::string>().rfind("p2v-shape-certificate/", 0) == 0;
      const auto& inst = shape ? j.at("instance") : j;
      const std::string notation =
          shape ? j.at("program").get<std::string>() : j.at("program").at("notation").get<std::string>();
      return notation == program && j.at("matrix") == nlohmann::json(matrix) && j.at("system") == system &&
             inst.at("max_size") == max_size && inst.at("master_collectives") == master;
    } catch (const std::exception&) {
      return false;  // unreadable or not ours: written again
    }
  };
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
