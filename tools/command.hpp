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

struct Command {
  std::string name, description;
  int order;  // position in `p2v --help`
  Setup setup;
};

std::vector<Command>& registry();

struct Registrar {
  Registrar(std::string name, std::string description, int order, Setup setup) {
    registry().push_back({std::move(name), std::move(description), order, std::move(setup)});
  }
};

}  // namespace p2v::tools
