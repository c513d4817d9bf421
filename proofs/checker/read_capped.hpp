#pragma once
// The checker's one file reader (the checker shares no code with the engine, so it does not use
// engine::read_text_file): at most 256 MiB, read in blocks, so that a device or FIFO such as
// /dev/zero stops at the cap instead of filling the memory.
#include <cstddef>
#include <fstream>
#include <string>

namespace p2v::checker::detail {

inline constexpr std::size_t kMaxInputBytes = std::size_t{256} << 20;

enum class Read { Ok, CannotRead, TooLarge };

inline Read read_capped(const std::string& path, std::string& text) {
  text.clear();
  std::ifstream f(path, std::ios::binary);
  if (!f) return Read::CannotRead;
  char buf[1 << 16];
  while (f.read(buf, sizeof buf) || f.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(f.gcount()));
    if (text.size() > kMaxInputBytes) return Read::TooLarge;
  }
  return f.bad() ? Read::CannotRead : Read::Ok;
}

}  // namespace p2v::checker::detail
