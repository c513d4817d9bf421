#pragma once
// File input shared by every reader of p2v's formats.
#include <string>

namespace p2v::engine {

// The whole text of file `path`; throws p2v::Error "<what> '<path>': cannot open it (<reason>)".
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace p2v::engine
