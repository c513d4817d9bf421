#pragma once
// The one size parser (--bytes, --memory, ...) and integer parser of every command.
#include <string>

namespace p2v::engine {

// "8589934592", "1e9", "512MiB", "64M" (= MiB), "8GB" (decimal), "1K"/"1k"/"1KiB" (1024), "2KB"
// (2000); optional space before the unit; B alone is bytes. Throws p2v::Error naming `what`,
// the text and the accepted forms when it is malformed, not positive or above `max`.
double parse_size(const std::string& text, const std::string& what, double max = 1e15);

// A whole decimal number in [lo, hi] (optional sign, digits only, nothing else; no overflow).
// Throws p2v::Error "<what>: expected an integer from <lo> to <hi>, got '<text>'" otherwise.
long long parse_integer(const std::string& text, const std::string& what, long long lo, long long hi);

}  // namespace p2v::engine
