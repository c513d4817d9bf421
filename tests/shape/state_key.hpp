// A hashable key of an engine state (its packed words), shared by the shape tests' graph walks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "p2v/engine/state.hpp"

namespace shape_test {

using Key = std::vector<std::uint64_t>;
struct KeyHash {
  std::size_t operator()(const Key& k) const {
    std::size_t h = 1469598103934665603ull;
    for (auto x : k) h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
  }
};
inline Key key(const p2v::engine::StateSet& s) {
  const std::size_t n = static_cast<std::size_t>(s.words()) * (s.k() + 1) * s.k();
  return Key(s.dev(0), s.dev(0) + n);
}

}  // namespace shape_test
