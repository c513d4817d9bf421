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
#include <set>
#include <string>
#include <vector>

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

std::filesystem::path parent_dir(const std::filesystem::path& target) {
  return target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
}

// A temporary beside `target` holding `content` (fsync'ed when `sync`) with permissions `mode`,
// closed; its name in `tmp`. Returns 0, or the errno of the failing call with the temporary removed.
int write_temporary(const std::filesystem::path& target, std::string_view content, mode_t mode, bool sync,
                    std::string& tmp) {
  tmp = (parent_dir(target) / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return errno;
  int err = write_all(fd, content);
  if (err == 0 && sync && ::fsync(fd) != 0) err = errno;
  if (err == 0 && ::fchmod(fd, mode) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) ::unlink(tmp.c_str());
  return err;
}

// mkstemp creates 0600: a replaced file keeps its permissions, a new one gets those an ordinary
// create would (0666 & ~umask).
mode_t file_mode(bool exists, const struct stat& st) {
  return exists ? (st.st_mode & 07777) : (0666 & ~current_umask());
}

// Makes renames into `dir` durable; a directory that cannot be opened or synced loses nothing
// already written, so only a failing fsync on an opened directory is an error (naming `path`).
void sync_directory(const std::filesystem::path& dir, const std::string& what, const std::string& path) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  const int r = ::fsync(dfd);
  const int e = errno;
  ::close(dfd);
  if (r != 0 && e != EINVAL && e != EROFS) fail(what, path, e);
}

// The file a write of `path` replaces: `path` itself, or for a symbolic link the file it points
// to (a dangling or looping link: the link's own path).
std::filesystem::path link_target(const std::string& path) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    std::error_code ec;
    auto real = std::filesystem::canonical(path, ec);
    if (!ec) return real;
  }
  return path;
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
  const std::filesystem::path target = link_target(path);
  std::string tmp;
  int err = write_temporary(target, content, file_mode(exists, st), /*sync=*/true, tmp);
  if (err == 0 && ::rename(tmp.c_str(), target.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
  }
  if (err != 0) fail(what, path, err);
  sync_directory(parent_dir(target), what, path);
}

void check_writable(const std::string& path, const std::string& what) {
  if (path.empty()) throw Error(fmt::format("cannot write {}: empty file name", what));
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists) {
    if (S_ISDIR(st.st_mode)) fail(what, path, EISDIR);
    if (standard_stream(st) >= 0) return;
    if (!S_ISREG(st.st_mode)) {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0 && errno != ENXIO) fail(what, path, errno);  // ENXIO: a FIFO with no reader yet
      if (fd >= 0) ::close(fd);
      return;
    }
  }
  const std::filesystem::path target = link_target(path);
  std::string tmp;
  if (const int err = write_temporary(target, {}, 0600, /*sync=*/false, tmp); err != 0) fail(what, path, err);
  ::unlink(tmp.c_str());
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files, const std::string& what) {
  struct Pending {
    std::string tmp, path, dir;
  };
  std::vector<Pending> pending;
  auto discard = [&](std::size_t from) {
    for (std::size_t i = from; i < pending.size(); ++i) ::unlink(pending[i].tmp.c_str());
  };
  for (const auto& [path, content] : files) {
    if (path.empty()) {
      discard(0);
      throw Error(fmt::format("cannot write {}: empty file name", what));
    }
    struct stat lst {};
    const bool exists = ::lstat(path.c_str(), &lst) == 0;
    if (exists && (S_ISLNK(lst.st_mode) || !S_ISREG(lst.st_mode))) {
      try {
        write_file_atomic(path, content, what);
      } catch (...) {
        discard(0);
        throw;
      }
      continue;
    }
    const std::filesystem::path target(path);
    std::string tmp;
    if (const int err = write_temporary(target, content, file_mode(exists, lst), /*sync=*/false, tmp); err != 0) {
      discard(0);
      fail(what, path, err);
    }
    pending.push_back({tmp, path, parent_dir(target).string()});
  }
  std::set<std::string> dirs;
  for (const auto& p : pending) dirs.insert(p.dir);
  // One flush of each file system the temporaries are on (syncfs reports writeback errors since
  // Linux 5.8); where syncfs is refused, each temporary is synced on its own.
  for (const auto& d : dirs) {
    const int dfd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int err = dfd < 0 ? errno : 0;
    if (dfd >= 0 && ::syncfs(dfd) != 0) err = errno;
    if (dfd >= 0) ::close(dfd);
    if (err == 0) continue;
    if (dfd >= 0 && err != ENOSYS && err != EINVAL && err != EROFS) {  // a writeback error
      discard(0);
      fail(what, d, err);
    }
    for (const auto& p : pending) {
      if (p.dir != d) continue;
      const int fd = ::open(p.tmp.c_str(), O_RDONLY | O_CLOEXEC);
      int e = fd < 0 ? errno : 0;
      if (fd >= 0 && ::fsync(fd) != 0) e = errno;
      if (fd >= 0) ::close(fd);
      if (e != 0) {
        discard(0);
        fail(what, p.path, e);
      }
    }
  }
  for (std::size_t i = 0; i < pending.size(); ++i)
    if (::rename(pending[i].tmp.c_str(), pending[i].path.c_str()) != 0) {
      const int e = errno;
      discard(i);
      fail(what, pending[i].path, e);
    }
  for (const auto& d : dirs) sync_directory(d, what, d);
}

bool flush_stdout(int* err) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int e = flushed ? 0 : errno;
  if (err != nullptr) *err = e;
  return flushed && !std::ferror(stdout);
}

}  // namespace p2v::engine
