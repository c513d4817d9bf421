// p2v: synthesizes certified reduction programs for hierarchical accelerator systems.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <unistd.h>

#include "command.hpp"
#include "p2v/engine/error.hpp"

namespace p2v::tools {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
}  // namespace p2v::tools

namespace {

// Subcommands that live in companion executables (see tools/CMakeLists.txt).
struct External {
  const char* name;
  const char* exe;
  const char* description;
  int order;
};
constexpr External kExternal[] = {
    {"verify", "p2v-smt", "Enumerate with Z3/cvc5 and the enumerator and check the sets are identical", 40},
    {"check", "p2v-smt", "Check certificates with the independent checker", 50},
    {"prove", "p2v-smt", "Check Theorem 3.2 and lemmas B.1-B.8, at any size (per shape)", 60},
    {"rewrite", "p2v-smt", "Rewrite a program into a faster equal one with the verified rules, with a certificate", 66},
    {"rules", "p2v-smt", "Rewrite rules over collectives, proved by Z3 and cvc5 against the counting semantics", 65},
    {"run", "p2v-run", "Run programs on MPI (CPUs) or NCCL (GPUs) and check the results", 70},
};

bool registered(const std::string& name) {
  for (const auto& c : p2v::tools::registry())
    if (c.name == name) return true;
  return false;
}

// Replaces this process with the companion executable beside it (same argv and pid).
[[noreturn]] void exec_companion(const char* exe, char** argv) {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = ".";
  if (n > 0) {
    self[n] = 0;
    dir = self;
    dir = dir.substr(0, dir.rfind('/'));
  }
  const std::string path = dir + "/" + exe;
  ::execv(path.c_str(), argv);
  fmt::print(stderr, "p2v: error: this subcommand needs {} ({}), which is not installed beside p2v: {}\n", exe, path,
             std::strerror(errno));
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace p2v::tools;
  if (argc > 1) {
    const std::string sub = argv[1];
    for (const auto& e : kExternal)
      if (sub == e.name && !registered(sub)) exec_companion(e.exe, argv);
#ifndef P2V_TOOL_SMT
    // Certificates need the solvers: hand `synth --certify` to p2v-smt.
    if (sub == "synth")
      for (int i = 2; i < argc; ++i)
        if (std::strncmp(argv[i], "--certify", 9) == 0 || std::strcmp(argv[i], "--proofs") == 0)
          exec_companion("p2v-smt", argv);
    // reshard: certificates need the checker and solvers (p2v-smt), --run needs MPI (p2v-run).
    if (sub == "reshard")
      for (int i = 2; i < argc; ++i) {
        if (std::strncmp(argv[i], "--certify", 9) == 0) exec_companion("p2v-smt", argv);
#ifndef P2V_TOOL_RUN
        if (std::strcmp(argv[i], "--run") == 0) exec_companion("p2v-run", argv);
#endif
      }
#endif
  }
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
  for (const auto& e : kExternal)
    if (!registered(e.name)) app.add_subcommand(e.name, e.description)->allow_extras()->group("Subcommands");
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
