#include "p2v/engine/io.hpp"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{} '{}': cannot open it ({})", what, path, std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("{} '{}': read error", what, path));
  return ss.str();
}

}  // namespace p2v::engine
