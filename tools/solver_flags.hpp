#pragma once
// Solver set-up flags shared by the commands that run Z3 / cvc5 (synth --certify, verify):
// --z3-logic LOGIC and --cvc5-option NAME=VALUE (repeatable). They replace the former
// P2V_Z3_LOGIC / P2V_CVC5_OPTS environment variables; certificates record the resulting settings
// (facts.*.settings). Header-only: `p2v` (no solvers) registers them too, so that it can say
// they need --certify.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#ifdef P2V_HAVE_ENCODINGS
#include "p2v/encodings/search.hpp"
#endif

namespace p2v::tools {

struct SolverFlags {
  std::string z3_logic;
  std::vector<std::string> cvc5_options;
  bool given() const { return !z3_logic.empty() || !cvc5_options.empty(); }
};

inline void add_solver_flags(CLI::App& sub, SolverFlags& f, const std::string& prefix = "") {
  sub.add_option("--z3-logic", f.z3_logic,
                 prefix +
                     "the logic Z3's solver is created for (default QF_FD: Z3's incremental SAT-based "
                     "solver; e.g. QF_BV for the combined solver); recorded in certificates");
  sub.add_option("--cvc5-option", f.cvc5_options,
                 prefix +
                     "set a cvc5 option, NAME=VALUE (repeatable; after p2v's own: bitblast=eager, "
                     "bv-sat-solver=cadical, ...); recorded in certificates")
      ->allow_extra_args(false);
}

#ifdef P2V_HAVE_ENCODINGS
// Copies the flags into the solver-neutral options and checks them with the solvers (throws
// p2v::Error on a malformed NAME=VALUE, a logic Z3 does not know, an option cvc5 refuses).
inline void apply_solver_flags(const SolverFlags& f, encodings::SearchOptions& so) {
  so.z3_logic = f.z3_logic;
  so.cvc5_options.clear();
  for (const auto& o : f.cvc5_options)
    so.cvc5_options.push_back(encodings::smt::parse_option_assignment(o, "--cvc5-option"));
  // Validated now, before any worker thread creates a solver with them.
  encodings::smt::SolverOptions check;
  check.z3_logic = so.z3_logic;
  check.cvc5_options = so.cvc5_options;
  encodings::smt::check_solver_options(check);
}
#endif

}  // namespace p2v::tools
