#pragma once
// Runs the p2v binary under test as a user would (through the shell), capturing stdout, stderr
// and the exit code; shared by the CLI tests of this binary.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace p2v_test {

struct CliResult {
  int code = -1;  // the exit code, or 128 + the signal that ended it
  std::string out, err;
};

// `sh -c "<prefix> p2v <args> 2>FILE"`; `args` may redirect stdout itself.
inline CliResult run_cli(const std::string& args, const std::string& prefix = "") {
  static int serial = 0;
  const std::string errf = "/tmp/p2v_cli_err_" + std::to_string(::getpid()) + "_" + std::to_string(serial++);
  const std::string cmd = prefix + " " + std::string(P2V_BIN) + " " + args + " 2>" + errf;
  CliResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  std::ifstream e(errf);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  std::remove(errf.c_str());
  return r;
}

}  // namespace p2v_test
