#pragma once
// Subcommand registry: each tools/cmd_<name>.cpp registers itself with a static Registrar.
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace p2v::tools {

// Adds the subcommand's options to `sub` and returns the function that runs it (exit code).
using Setup = std::function<std::function<int()>(CLI::App& sub)>;

// Every subcommand of p2v, in whichever executable it is built (tools/commands.cpp).
struct CommandInfo {
  const char* name;
  const char* exe;          // the executable that has it (p2v, p2v-smt or p2v-run)
  const char* description;  // the line every --help shows
  int order;                // position in --help
};
const std::vector<CommandInfo>& command_table();
const CommandInfo& command_info(const std::string& name);  // aborts for a name not in the table

// The subcommands built into this executable.
struct Command {
  std::string name;
  Setup setup;
};
std::vector<Command>& registry();

struct Registrar {
  Registrar(std::string name, Setup setup) { registry().push_back({std::move(name), std::move(setup)}); }
};

}  // namespace p2v::tools
