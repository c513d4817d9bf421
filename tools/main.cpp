// p2v: synthesizes certified reduction programs for hierarchical accelerator systems.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fmt/core.h>

#include "command.hpp"
#include "p2v/engine/error.hpp"

namespace p2v::tools {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
}  // namespace p2v::tools

int main(int argc, char** argv) {
  using namespace p2v::tools;
  CLI::App app{"p2v: synthesize, certify, simulate and run reduction programs for "
               "hierarchical accelerator systems"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "p2v 0.1.0");
  auto& cmds = registry();
  std::stable_sort(cmds.begin(), cmds.end(),
                   [](const Command& a, const Command& b) { return a.order < b.order; });
  std::vector<std::function<int()>> runners(cmds.size());
  std::vector<CLI::App*> subs(cmds.size());
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    subs[i] = app.add_subcommand(cmds[i].name, cmds[i].description);
    runners[i] = cmds[i].setup(*subs[i]);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (std::size_t i = 0; i < cmds.size(); ++i)
      if (subs[i]->parsed()) return runners[i]();
  } catch (const p2v::Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "p2v: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "p2v: internal error: {}\n", e.what());
    return 3;
  }
  return 1;
}
