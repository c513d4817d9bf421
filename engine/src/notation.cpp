#include "p2v/engine/notation.hpp"

#include <fmt/core.h>

#include <cctype>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

namespace {

std::string normalize(std::string s) {
  std::string o;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) o += c;
  for (std::size_t p; (p = o.find("InsideGroup")) != std::string::npos;) o.replace(p, 11, "Inside");
  return o;
}

std::vector<std::string> split_steps(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == ';') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

}  // namespace

LoweredProgram resolve_program(const SynthesisHierarchy& h, const std::string& notation) {
  const auto ins = instructions(h, MasterCollectives::All);
  std::vector<std::string> names;
  for (const auto& in : ins) names.push_back(normalize(instruction_name(h, in)));
  LoweredProgram prog;
  const auto steps = split_steps(notation);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const std::string want = normalize(steps[i]);
    if (want.empty()) {
      if (steps.size() == 1) throw Error("the program is empty");
      throw Error(fmt::format("program '{}': step {} is empty", notation, i + 1));
    }
    std::size_t found = names.size();
    for (std::size_t j = 0; j < names.size(); ++j)
      if (names[j] == want) {
        found = j;
        break;
      }
    if (found == names.size()) {
      std::string avail;
      for (std::size_t j = 0; j < names.size() && j < 12; ++j) avail += "\n  " + instruction_name(h, ins[j]);
      if (names.size() > 12) avail += fmt::format("\n  ... ({} in all)", names.size());
      std::string lv;
      for (const auto& n : h.names) {
        if (!lv.empty()) lv += ' ';
        lv += n;
      }
      throw Error(
          fmt::format("program step {} '{}' is not an instruction of this placement's hierarchy [{}] (is the "
                      "program for another system or matrix?). Instructions here:{}",
                      i + 1, steps[i], lv, avail));
    }
    prog.push_back({ins[found].collective, lower_groups(h, ins[found].grouping.groups)});
  }
  return prog;
}

std::string program_notation(const SynthesisHierarchy& h, const LoweredProgram& p) {
  const auto ins = instructions(h, MasterCollectives::All);
  std::string out;
  for (const auto& st : p) {
    std::string name;
    for (const auto& in : ins)
      if (in.collective == st.collective && lower_groups(h, in.grouping.groups) == st.groups) {
        name = instruction_name(h, in);
        break;
      }
    if (name.empty())
      throw Error(fmt::format("a {} step is not an instruction of the hierarchy", to_string(st.collective)));
    if (!out.empty()) out += " ; ";
    out += name;
  }
  return out;
}

}  // namespace p2v::engine
