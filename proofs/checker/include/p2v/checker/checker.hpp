#pragma once
// The independent certificate checker (the trusted core). It re-derives the synthesis hierarchy
// from the placement, the device groups of every step from the hierarchy, the lowered groups and
// the goal, replays the program under the five Hoare rules (SPEC §4) with its own small code, and
// accepts only if every recorded state and the goal match. Solver facts are reported, not
// re-proved.
#include <string>

namespace p2v::checker {

struct Verdict {
  bool ok = false;
  std::string reason;   // why rejected ("" when accepted)
  std::string summary;  // when accepted: the program and the facts it records
};

Verdict check_certificate(const std::string& json_text);
Verdict check_certificate_file(const std::string& path);
// Reshard certificates (format p2v-reshard-certificate/1, SPEC §10); check_certificate dispatches
// to it by the format field.
Verdict check_reshard_certificate(const std::string& json_text);

}  // namespace p2v::checker
