#pragma once
// Certificates (docs/formats.md "Certificates") as the runtime uses them: the program they certify and whether the
// independent checker (proofs/checker, when built) accepts them.
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::runtime {

struct Certificate {
  bool checked = false;  // the independent checker accepted it
  std::string reason;    // why not
  std::optional<engine::System> system;
  std::vector<int> axes, reduce;
  engine::ParallelismMatrix matrix;
  std::string notation;
  engine::LoweredProgram lowered;  // empty if the certificate has no lowered groups
};

// Reads the certificate and runs the checker on it. Throws p2v::Error only when the file cannot
// be read at all; a certificate that fails the checker comes back with checked = false.
Certificate load_certificate(const std::string& path);

bool checker_available();

}  // namespace p2v::runtime
