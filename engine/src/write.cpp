#include "p2v/engine/write.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "p2v/engine/error.hpp"

namespace p2v::engine {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw Error(fmt::format("cannot write {} '{}': {}", what, path, std::strerror(err)));
}

// Writes all of `data` to `fd`; returns 0 or the errno of the failing write.
int write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

void write_in_place(const std::string& path, std::string_view content, const std::string& what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail(what, path, errno);
  int err = write_all(fd, content);
  // fsync on a device or FIFO may be unsupported (EINVAL, EROFS): that is not a lost write.
  if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) fail(what, path, err);
}

// The process's umask without changing it (umask(2) can only be read by setting it, which races
// with threads creating files): Linux reports it in /proc/self/status.
mode_t current_umask() {
  static const mode_t mask = [] {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
    const mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  return mask;
}

// The standard stream (1 or 2) that `st` is, or -1: `-o /dev/stdout` with stdout redirected to a
// file must append to that stream, not replace the file behind it.
int standard_stream(const struct stat& st) {
  for (int fd : {1, 2}) {
    struct stat s {};
    if (::fstat(fd, &s) == 0 && s.st_dev == st.st_dev && s.st_ino == st.st_ino) return fd;
  }
  return -1;
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view content, const std::string& what) {
  if (path.empty()) throw Error(fmt::format("cannot write {}: empty file name", what));
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists) {
    if (S_ISDIR(st.st_mode)) fail(what, path, EISDIR);
    if (const int fd = standard_stream(st); fd >= 0) {
      // Keep the order of what was printed before: flush the C stream, then write behind it.
      std::fflush(fd == 1 ? stdout : stderr);
      if (const int err = write_all(fd, content); err != 0) fail(what, path, err);
      return;
    }
    if (!S_ISREG(st.st_mode)) return write_in_place(path, content, what);
  }
  // A symbolic link to a file: the file it points to is replaced (in its own directory), the
  // link stays a link.
  std::filesystem::path target(path);
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    std::error_code ec;
    const auto real = std::filesystem::canonical(target, ec);
    if (!ec) target = real;
  }
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) fail(what, path, errno);
  int err = write_all(fd, content);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  // mkstemp creates 0600: a replaced file keeps its permissions, a new one gets those an ordinary
  // create would (0666 & ~umask).
  if (err == 0 && ::fchmod(fd, exists ? (st.st_mode & 07777) : (0666 & ~current_umask())) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmpl.c_str(), target.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmpl.c_str());
    fail(what, path, err);
  }
  // Make the rename itself durable; a directory that cannot be opened or synced loses nothing
  // already written, so only a failing fsync on an opened directory is an error.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    const int r = ::fsync(dfd);
    const int e = errno;
    ::close(dfd);
    if (r != 0 && e != EINVAL && e != EROFS) fail(what, path, e);
  }
}

bool flush_stdout(int* err) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int e = flushed ? 0 : errno;
  if (err != nullptr) *err = e;
  return flushed && !std::ferror(stdout);
}

}  // namespace p2v::engine
