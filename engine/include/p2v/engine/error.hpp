#pragma once
// User-facing error type: every error a user can cause (bad file, bad axes, a problem too
// large, ...) is thrown as p2v::Error with a message naming what is wrong and how to fix it.
#include <stdexcept>
#include <string>

namespace p2v {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace p2v
