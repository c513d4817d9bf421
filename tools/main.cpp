// p2v: synthesizes certified reduction programs for hierarchical accelerator systems.
#include <fmt/core.h>
#include <CLI/CLI.hpp>
#include <cstdio>

#include <unistd.h>
#include <cerrno>
#include <cstring>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <iostream>
#include <new>
#include <string>
#include <system_error>

#include "command.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/write.hpp"

namespace p2v::tools {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
}  // namespace p2v::tools

namespace {

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

bool has_flag(int argc, char** argv, const char* flag) {
  const std::size_t n = std::strlen(flag);
  for (int i = 2; i < argc; ++i)
    if (std::strncmp(argv[i], flag, n) == 0 && (argv[i][n] == 0 || argv[i][n] == '=')) return true;
  return false;
}

// The executable that runs `sub` with these arguments when this one cannot, decided from all of
// them (not their order): certificates need the solvers (p2v-smt), --run needs MPI (p2v-run).
// nullptr: this one. A combination no executable has ends here (exit 2) with what to do instead.
const char* companion_for(const std::string& sub, int argc, char** argv) {
  if (sub != "synth" && sub != "reshard") return nullptr;
  const bool certify = has_flag(argc, argv, "--certify") || has_flag(argc, argv, "--certificates") ||
                       (sub == "synth" && has_flag(argc, argv, "--proofs"));
  const bool run = sub == "reshard" && has_flag(argc, argv, "--run");
  if (certify && run) {
    fmt::print(stderr,
               "p2v: error: reshard: --certify and --run do not go together (certificates need the solvers of "
               "p2v-smt, the run needs MPI in p2v-run, and no executable has both); certify first, then run: "
               "p2v reshard ... --certify DIR, then mpirun -n N p2v reshard ... --run\n");
    std::exit(2);
  }
#ifndef P2V_HAVE_ENCODINGS
  if (certify) return "p2v-smt";
#endif
#ifndef P2V_HAVE_RUNTIME
  if (run) return "p2v-run";
#endif
  return nullptr;
}

// An option of `sub` given an empty value (--preset '', --system "$UNSET"), or nullptr: a usage
// error, since taken as given it would fall back to the option's default without a word (the run on
// another system or preset than the user meant).
const CLI::Option* option_given_empty(const CLI::App& sub) {
  for (const auto* o : sub.get_options())
    if (o->count() > 0 && o->get_type_size() != 0)
      for (const auto& v : o->results())
        if (v.empty()) return o;
  return nullptr;
}

// Every command's exit: stdout is flushed and checked, since a write to it that failed (a full
// disk, /dev/full, a closed pipe) would otherwise pass unnoticed with exit 0.
int finish(int code) {
  // flush_stdout first: it keeps the errno of the failing flush. std::cout (CLI11's --help and
  // --version) shares stdout's buffer (synced with stdio), so it is flushed by the same call.
  int err = 0;
  const bool flushed = p2v::engine::flush_stdout(&err);
  std::cout.flush();
  if (!flushed || !std::cout) {
    fmt::print(stderr, "p2v: error: cannot write standard output: {}\n",
               err != 0 ? std::strerror(err) : "a write to it failed");
    return 2;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace p2v::tools;
#ifdef __GLIBC__
  // Grow and shrink the heap in 64 MB steps: searches and solver runs allocate and free their
  // tables many times, and moving the heap top page by page (a page fault for each page touched
  // again) made `p2v prove --suite` 5x slower (7.8 s vs 1.5 s, same peak memory; bench note).
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  if (argc > 1) {
    const std::string sub = argv[1];
    for (const auto& e : command_table())
      if (sub == e.name && !registered(sub)) exec_companion(e.exe, argv);
    if (const char* exe = companion_for(sub, argc, argv)) exec_companion(exe, argv);
  }
  CLI::App app{
      "p2v: synthesize, certify, simulate and run reduction programs for "
      "hierarchical accelerator systems"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "p2v 0.1.0");
  // Every command of the table, in its order: built here (with its options), or handed to the
  // executable that has it.
  auto& cmds = registry();
  std::vector<std::function<int()>> runners(cmds.size());
  std::vector<CLI::App*> subs(cmds.size());
  for (const auto& e : command_table()) {
    if (!registered(e.name)) {
      app.add_subcommand(e.name, e.description)->allow_extras()->group("Subcommands");
      continue;
    }
    for (std::size_t i = 0; i < cmds.size(); ++i)
      if (cmds[i].name == e.name) {
        subs[i] = app.add_subcommand(e.name, e.description);
        runners[i] = cmds[i].setup(*subs[i]);
      }
  }
  for (const auto& c : cmds) command_info(c.name);  // every built command is in the table
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version: CLI11 prints them, exit 0. Every other parse error is a usage error.
    if (e.get_exit_code() == 0) return finish(app.exit(e));
    if (argc > 1 && argv[1][0] != '-') {
      bool known = false;
      for (const auto& c : command_table()) known |= argv[1] == std::string(c.name);
      if (!known) {
        std::string names;
        for (const auto& c : command_table()) names += (names.empty() ? "" : ", ") + std::string(c.name);
        fmt::print(stderr, "p2v: error: unknown command '{}'; the commands are {}\n  see p2v --help\n", argv[1], names);
        return 2;
      }
    }
    std::string sub;
    for (const auto* s : app.get_subcommands()) sub = " " + s->get_name();
    if (sub.empty() && argc > 1)
      for (const auto& c : command_table())
        if (argv[1] == std::string(c.name)) sub = std::string(" ") + argv[1];
    std::fflush(stdout);
    fmt::print(stderr, "p2v: error: {}\n  see p2v{} --help\n", e.what(), sub);
    return 2;
  }
  for (const auto* s : subs)
    if (s && s->parsed())
      if (const auto* o = option_given_empty(*s)) {
        std::fflush(stdout);
        fmt::print(stderr, "p2v: error: {}: an empty value; give one or leave the option out\n  see p2v {} --help\n",
                   o->get_name(), s->get_name());
        return 2;
      }
  int code = 1;
  try {
    for (std::size_t i = 0; i < cmds.size(); ++i)
      if (subs[i]->parsed()) {
        code = runners[i]();
        break;
      }
  } catch (const p2v::Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "p2v: error: {}\n", e.what());
    code = 2;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    fmt::print(stderr,
               "p2v: error: out of memory (an allocation failed; a smaller problem, fewer --jobs or more memory "
               "may help)\n");
    code = 2;
  } catch (const std::system_error& e) {
    // fmt::print throws this when a write to stdout fails (a full disk, /dev/full, a closed pipe).
    if (std::ferror(stdout)) {
      fmt::print(stderr, "p2v: error: cannot write standard output: {}\n", e.code().message());
      return 2;
    }
    fmt::print(stderr, "p2v: internal error: {}\n", e.what());
    code = 3;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "p2v: internal error: {}\n", e.what());
    code = 3;
  }
  return finish(code);
}
