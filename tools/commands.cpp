// Every subcommand of p2v, wherever it is built: the one place its description lives, so that
// `p2v --help`, `p2v-smt --help` and `p2v-run --help` list the same commands the same way.
#include <fmt/core.h>

#include <cstdlib>

#include "command.hpp"

namespace p2v::tools {

const std::vector<CommandInfo>& command_table() {
  // exe: the executable that has the command when this one does not (p2v execs it, same argv).
  static const std::vector<CommandInfo> table = {
      {"matrices", "p2v", "List every parallelism matrix (placement) of the axes over the system", 10},
      {"groups", "p2v", "Show the instructions of a synthesis hierarchy and the device groups each forms", 20},
      {"synth", "p2v", "Synthesize every valid reduction program up to a size bound, for each placement", 30},
      {"reshard", "p2v", "Synthesize a memory-bounded, cost-optimal redistribution of an array between two layouts",
       35},
      {"verify", "p2v-smt",
       "Cross-check the enumerator with the SMT encodings (Z3, cvc5): same set of programs per matrix", 40},
      {"check", "p2v-smt",
       "Check certificates independently: re-derive groups, replay the program, compare every state and the goal", 45},
      {"simulate", "p2v", "Rank placements and reduction programs by predicted time on the system's topology", 50},
      {"explore", "p2v", "Rank all placements by the weighted total predicted time of several reductions", 51},
      {"calibrate", "p2v",
       "Fit per-link latency and bandwidth to measured collective times; write a calibrated system file", 52},
      {"step", "p2v",
       "Simulate a training step (compute + bucketed gradient sync) and choose buckets, programs and placement", 55},
      {"export", "p2v",
       "Write a reduction program as a torch.distributed module (with a self-check) or an MSCCL algorithm (XML)", 60},
      {"prove", "p2v-smt", "Check Theorem 3.2 ((d)>=(c)>=(b)>=(a)) and lemmas B.1-B.8, at any size (per shape)", 61},
      {"rules", "p2v-smt", "Rewrite rules over collectives, proved by Z3 and cvc5 against the counting semantics", 65},
      {"rewrite", "p2v-smt",
       "Rewrite a program into a faster equal one with the verified rules (cost-guided by the simulator), with a "
       "certificate",
       66},
      {"run", "p2v-run",
       "Run reduction programs on MPI ranks or NCCL GPUs (under mpirun), check the results, time them", 70},
  };
  return table;
}

const CommandInfo& command_info(const std::string& name) {
  for (const auto& c : command_table())
    if (name == c.name) return c;
  // A cmd_<name>.cpp registered a command the table does not list: a build mistake, not a user's.
  fmt::print(stderr, "p2v: internal error: subcommand '{}' is not in tools/commands.cpp\n", name);
  std::abort();
}

}  // namespace p2v::tools
