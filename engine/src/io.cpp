#include "p2v/engine/io.hpp"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

namespace {

std::string limit_text(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_text_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
  Fd in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) throw Error(fmt::format("{} '{}': cannot open it ({})", what, path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0)
    throw Error(fmt::format("{} '{}': cannot read it ({})", what, path, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw Error(fmt::format("{} '{}': it is a directory, not a file", what, path));
  const auto too_large = [&] {
    return Error(fmt::format("{} '{}': larger than {}, the limit for input files", what, path, limit_text(max_bytes)));
  };
  // A regular file's size is known before reading; anything else (pipes, FIFOs, /dev/zero) is
  // read in chunks and refused as soon as it passes the limit.
  if (S_ISREG(st.st_mode) && static_cast<std::size_t>(st.st_size) > max_bytes) throw too_large();
  std::string text;
  if (S_ISREG(st.st_mode)) text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(fmt::format("{} '{}': read error ({})", what, path, std::strerror(errno)));
    }
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) throw too_large();
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

}  // namespace p2v::engine
