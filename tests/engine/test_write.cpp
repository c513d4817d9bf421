#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "p2v/engine/error.hpp"
#include "p2v/engine/write.hpp"

namespace fs = std::filesystem;
using p2v::engine::write_file_atomic;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / (name + "." + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
// Temporaries (".tmp." files) left anywhere under d.
std::size_t temporaries(const fs::path& d) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(d))
    n += e.path().filename().string().find(".tmp.") != std::string::npos;
  return n;
}
std::string error_of(const std::string& path, const std::string& content) {
  try {
    write_file_atomic(path, content, "test file");
  } catch (const p2v::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("write_file_atomic: writes the whole content and replaces an existing file, no temporary left") {
  const fs::path d = fresh_dir("p2v-write");
  const fs::path f = d / "out.json";
  write_file_atomic(f.string(), "first\n");
  CHECK(slurp(f) == "first\n");
  const std::string big(1 << 20, 'x');
  write_file_atomic(f.string(), big);
  CHECK(slurp(f) == big);
  CHECK(std::distance(fs::directory_iterator(d), fs::directory_iterator{}) == 1);
  fs::remove_all(d);
}

TEST_CASE("write_file_atomic: a failed write names the file, throws, and leaves the old file and no temporary") {
  const fs::path d = fresh_dir("p2v-write-fail");
  // Missing directory: nothing can be created.
  const std::string missing = (d / "no" / "such" / "f.json").string();
  const std::string e1 = error_of(missing, "x");
  CHECK(e1.find("cannot write test file '" + missing + "'") != std::string::npos);
  CHECK(!fs::exists(missing));
  // A directory as the target.
  CHECK(error_of(d.string(), "x").find("Is a directory") != std::string::npos);
  // A full device (written in place, never replaced by a rename).
  if (fs::exists("/dev/full")) {
    const std::string e2 = error_of("/dev/full", std::string(100000, 'y'));
    CHECK(e2.find("cannot write test file '/dev/full'") != std::string::npos);
    CHECK(e2.find("No space left on device") != std::string::npos);
    CHECK(fs::is_character_file("/dev/full"));
  }
  // A read-only directory (root ignores permissions, so only checked for other users).
  if (::geteuid() != 0) {
    const fs::path ro = d / "ro";
    fs::create_directories(ro);
    write_file_atomic((ro / "keep").string(), "old");
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    CHECK(!error_of((ro / "keep").string(), "new").empty());
    fs::permissions(ro, fs::perms::owner_all);
    CHECK(slurp(ro / "keep") == "old");
  }
  CHECK(temporaries(d) == 0);
  fs::remove_all(d);
}

TEST_CASE("write_file_atomic: through a symbolic link, the file it points to is replaced and the link kept") {
  const fs::path d = fresh_dir("p2v-write-link");
  fs::create_directories(d / "real");
  write_file_atomic((d / "real" / "f.json").string(), "old");
  fs::create_symlink(d / "real" / "f.json", d / "link.json");
  write_file_atomic((d / "link.json").string(), "new");
  CHECK(fs::is_symlink(d / "link.json"));
  CHECK(slurp(d / "real" / "f.json") == "new");
  fs::remove_all(d);
}

TEST_CASE("write_file_atomic: /dev/null is written in place and stays a device") {
  if (!fs::exists("/dev/null")) return;
  write_file_atomic("/dev/null", "discarded");
  CHECK(fs::is_character_file("/dev/null"));
}

TEST_CASE("write_file_atomic: a replaced file keeps its permissions") {
  const fs::path d = fresh_dir("p2v-write-mode");
  const fs::path f = d / "secret";
  write_file_atomic(f.string(), "old");
  fs::permissions(f, fs::perms::owner_read | fs::perms::owner_write);
  write_file_atomic(f.string(), "new");
  CHECK(slurp(f) == "new");
  CHECK(fs::status(f).permissions() == (fs::perms::owner_read | fs::perms::owner_write));
  fs::remove_all(d);
}

TEST_CASE("write_file_atomic: /dev/stdout redirected to a file appends behind what was printed") {
  if (!fs::exists("/dev/stdout")) return;
  const fs::path d = fresh_dir("p2v-write-stdout");
  const fs::path f = d / "out.txt";
  std::fflush(stdout);
  const int saved = ::dup(1);
  REQUIRE(saved >= 0);
  std::FILE* file = std::fopen(f.c_str(), "w");
  REQUIRE(file != nullptr);
  REQUIRE(::dup2(::fileno(file), 1) == 1);
  std::printf("table\n");  // buffered in stdout; must come first
  write_file_atomic("/dev/stdout", "rows\n");
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  std::fclose(file);
  CHECK(slurp(f) == "table\nrows\n");
  fs::remove_all(d);
}

TEST_CASE("write_files_atomic: every file whole, replaced ones keep their permissions, no temporary left") {
  const fs::path d = fresh_dir("p2v-write-many");
  write_file_atomic((d / "f1.json").string(), "old");
  fs::permissions(d / "f1.json", fs::perms::owner_read | fs::perms::owner_write);
  fs::create_directories(d / "real");
  write_file_atomic((d / "real" / "t.json").string(), "old target");
  fs::create_symlink(d / "real" / "t.json", d / "link.json");
  std::vector<std::pair<std::string, std::string>> files;
  for (int i = 0; i < 50; ++i)
    files.emplace_back((d / ("f" + std::to_string(i) + ".json")).string(), std::string(1000 + i, 'a' + i % 26));
  files.emplace_back((d / "link.json").string(), "through the link");
  p2v::engine::write_files_atomic(files, "test file");
  for (const auto& [p, c] : files) CHECK(slurp(p) == c);
  CHECK((fs::status(d / "f1.json").permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  CHECK(fs::is_symlink(d / "link.json"));
  CHECK(slurp(d / "real" / "t.json") == "through the link");
  CHECK(temporaries(d) == 0);
  fs::remove_all(d);
}

TEST_CASE("write_files_atomic: a file that cannot be written names it, and nothing of the batch is left behind") {
  const fs::path d = fresh_dir("p2v-write-many-fail");
  write_file_atomic((d / "a.json").string(), "old a");
  const std::string missing = (d / "no" / "such" / "b.json").string();
  std::string err;
  try {
    p2v::engine::write_files_atomic({{(d / "a.json").string(), "new a"}, {missing, "b"}}, "test file");
  } catch (const p2v::Error& e) {
    err = e.what();
  }
  CHECK(err.find("cannot write test file '" + missing + "'") != std::string::npos);
  CHECK(slurp(d / "a.json") == "old a");  // the failure came before any rename
  CHECK(temporaries(d) == 0);
  fs::remove_all(d);
}

TEST_CASE("check_writable: refuses what write_file_atomic would, with its message, and touches nothing") {
  using p2v::engine::check_writable;
  const auto d = fresh_dir("p2v-check-writable");
  auto refusal = [](const std::string& path) {
    try {
      check_writable(path, "test file");
    } catch (const p2v::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A new file in a writable directory, an existing file, a device the write takes in place: fine,
  // and neither the target nor a temporary is left behind.
  CHECK(refusal((d / "new.json").string()).empty());
  CHECK_FALSE(fs::exists(d / "new.json"));
  std::ofstream(d / "old.json") << "old";
  CHECK(refusal((d / "old.json").string()).empty());
  CHECK(slurp(d / "old.json") == "old");
  CHECK(refusal("/dev/null").empty());
  CHECK(temporaries(d) == 0);
  // What the write refuses, with the write's own message.
  CHECK(refusal(d.string()) == "cannot write test file '" + d.string() + "': Is a directory");
  CHECK(refusal(d.string()) == error_of(d.string(), "x"));
  const auto missing = (d / "no-such-dir" / "x.json").string();
  CHECK(refusal(missing) == error_of(missing, "x"));
  CHECK(refusal("") == error_of("", "x"));
  fs::remove_all(d);
}
