#pragma once
// The one size parser of every command (--bytes, --memory, ...).
#include <string>

namespace p2v::engine {

// "8589934592", "1e9", "512MiB", "64M" (= MiB), "8GB" (decimal), "1K"/"1k"/"1KiB" (1024), "2KB"
// (2000); optional space before the unit; B alone is bytes. Throws p2v::Error naming `what`,
// the text and the accepted forms when it is malformed, not positive or above `max`.
double parse_size(const std::string& text, const std::string& what, double max = 1e15);

}  // namespace p2v::engine
