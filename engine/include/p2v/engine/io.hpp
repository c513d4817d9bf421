#pragma once
// File input shared by every reader of p2v's formats.
#include <cstddef>
#include <string>

namespace p2v::engine {

// The largest input file p2v reads (256 MiB): far above any file p2v writes or a user writes by
// hand, and small enough that a wrong path (/dev/zero, a disk image) fails at once instead of
// filling the memory.
inline constexpr std::size_t kMaxInputBytes = std::size_t{256} << 20;

// The whole text of file `path` (regular files, pipes, FIFOs and devices alike, read up to
// `max_bytes`); throws p2v::Error "<what> '<path>': cannot open it (<reason>)", "...: it is a
// directory" or "...: larger than 256 MiB, the limit for input files".
std::string read_text_file(const std::string& path, const std::string& what, std::size_t max_bytes = kMaxInputBytes);

}  // namespace p2v::engine
