#pragma once
// The one size parser (--bytes, --memory, ...) and the number parsers of every command and CSV reader.
#include <string>

namespace p2v::engine {

// "8589934592", "1e9", "512MiB", "64M" (= MiB), "8GB" (decimal), "1K"/"1k"/"1KiB" (1024), "2KB"
// (2000); optional space before the unit; B alone is bytes. Throws p2v::Error naming `what`,
// the text and the accepted forms when it is malformed, not positive or above `max`.
double parse_size(const std::string& text, const std::string& what, double max = 1e15);

// A whole decimal number in [lo, hi] (optional sign, digits only, nothing else; no overflow).
// Throws p2v::Error "<what>: expected an integer from <lo> to <hi>, got '<text>'" otherwise.
long long parse_integer(const std::string& text, const std::string& what, long long lo, long long hi);

// A finite decimal number, the whole text ("0.5", "1e-6", "-3"); `sign` narrows it. Throws
// p2v::Error "<what>: '<text>' is not a [positive |non-negative ]number" otherwise.
enum class Sign { Any, NonNegative, Positive };
double parse_double(const std::string& text, const std::string& what, Sign sign = Sign::Any);

}  // namespace p2v::engine
