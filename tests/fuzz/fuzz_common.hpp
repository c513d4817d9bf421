#pragma once
// Shared by the fuzz targets of p2v's file readers (tests/fuzz/README.md).
//
// The classifier: a reader given any bytes either returns or throws p2v::Error (the CLI prints
// "p2v: error: ..." and exits 2). Any other exception would reach the CLI as "internal error"
// (exit 3) and is a bug: the target prints it and aborts, which libFuzzer (and the fallback
// driver) report as a crash with the input saved. Crashes, sanitizer reports and hangs are
// caught by the sanitizers and the fuzzer's -timeout themselves.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include "p2v/engine/error.hpp"

namespace p2v::fuzz {

[[noreturn]] inline void unexpected(const char* reader, const char* type, const char* what) {
  std::fprintf(stderr, "p2v fuzz: BUG in the %s reader: unexpected exception %s: %s\n", reader, type, what);
  std::fflush(stderr);
  std::abort();
}

// Runs `read` on the input as text; p2v::Error is the expected refusal of bad input.
template <class F>
int run(const char* reader, const std::uint8_t* data, std::size_t size, F&& read) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    read(text);
  } catch (const p2v::Error&) {
  } catch (const std::exception& e) {
    unexpected(reader, typeid(e).name(), e.what());
  } catch (...) {
    unexpected(reader, "(not a std::exception)", "");
  }
  return 0;
}

}  // namespace p2v::fuzz
