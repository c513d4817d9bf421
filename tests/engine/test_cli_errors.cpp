// The error contract of the p2v binary, end to end: usage and input errors print
// "p2v: error: ..." and exit 2 (option-parser errors included), --help exits 0, a standard output
// that cannot be written is an error, solver options are checked before use, and running out of
// memory is reported, not a crash.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>
#include "cli_run.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct Run {
  int code;
  std::string out, err;
};

// Runs `sh -c "<prefix> p2v <args> 2>ERR"`, capturing stdout (unless args redirect it).
Run p2v(const std::string& args, const std::string& prefix = "") {
  const auto c = p2v_test::run_cli(args, prefix);
  return Run{c.code, c.out, c.err};
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// The solver commands live in p2v-smt beside p2v; without it they cannot be tested here.
bool have_smt() { return std::filesystem::exists(std::filesystem::path(P2V_BIN).parent_path() / "p2v-smt"); }

const std::string kSys = std::string(P2V_SOURCE_DIR) + "/examples/systems/";

}  // namespace

TEST_CASE("cli errors: option-parser errors are 'p2v: error:' with exit 2 and a hint; --help exits 0") {
  struct Case {
    std::string args, message, hint;
  };
  const Case cases[] = {
      {"matrices --system node=4,gpu=16 --axes 4,16 --bogus", "not expected: --bogus", "see p2v matrices --help"},
      {"matrices --system node=4,gpu=16", "--axes is required", "see p2v matrices --help"},
      {"synth --system node=2,gpu=2 --axes 4 --reduce 0 --max-size 99999999999999999999", "--max-size",
       "see p2v synth --help"},
      {"synth --system node=2,gpu=2 --axes 4 --reduce 0 --max-size 2x", "--max-size", "see p2v synth --help"},
      {"", "A subcommand is required", "see p2v --help"},
      {"nosuchcommand", "nosuchcommand", "see p2v --help"},
      // an empty value would fall back to the option's default (another system, preset, matrix)
      {"simulate --system '' --axes 16 --reduce 0", "--system: an empty value", "see p2v simulate --help"},
      {"simulate --system node=2,gpu=8 --preset '' --axes 16 --reduce 0", "--preset: an empty value",
       "see p2v simulate --help"},
      {"matrices --system node=4,gpu=16 --axes 4,16 --matrix ''", "--matrix: an empty value",
       "see p2v matrices --help"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const Run r = p2v(c.args);
    CHECK(r.code == 2);
    CHECK(r.err.rfind("p2v: error: ", 0) == 0);
    CHECK(has(r.err, c.message));
    CHECK(has(r.err, c.hint));
  }
  for (const std::string& help : {std::string("--help"), std::string("matrices --help"), std::string("--version")}) {
    CAPTURE(help);
    const Run r = p2v(help);
    CHECK(r.code == 0);
    CHECK(!r.out.empty());
    CHECK(r.err.empty());
  }
}

TEST_CASE("cli errors: a standard output that cannot be written is exit 2, never a silent success") {
  if (!std::filesystem::exists("/dev/full")) return;
  for (const std::string& args :
       std::vector<std::string>{"matrices --system node=4,gpu=16 --axes 4,16", "matrices --help",
                                "synth --system " + kSys + "a100-2node.json --axes 2,16 --reduce 0 --json"}) {
    CAPTURE(args);
    const Run r = p2v(args + " >/dev/full");
    CHECK(r.code == 2);
    CHECK(has(r.err, "p2v: error: cannot write standard output: No space left on device"));
  }
}

TEST_CASE("cli errors: integers in options are parsed strictly") {
  // --inject-fault's numbers (needs the runtime, p2v-run).
  if (std::filesystem::exists(std::filesystem::path(P2V_BIN).parent_path() / "p2v-run")) {
    const std::string run =
        "run --backend threads --system node=2,gpu=2 --axes 4 --reduce 0 --matrix [[2,2]] --program "
        "'AllReduce@(node,Inside) ; AllReduce@(node,Parallel(root))' --bytes 4K --iters 1 --warmup 0";
    Run r = p2v(run + " --inject-fault 0:");
    CHECK(r.code == 2);
    CHECK(has(r.err, "p2v: error: --inject-fault STEP: expected an integer from 1 to"));
    r = p2v(run + " --inject-fault 1:99999999999999999999");
    CHECK(r.code == 2);
    CHECK(has(r.err, "--inject-fault RANK: expected an integer from 0 to"));
    r = p2v(run + " --inject-fault 2:4");
    CHECK(r.code == 2);
    CHECK(has(r.err, "--inject-fault 2:4: RANK is a rank from 0 to 3 (the system has 4 devices)"));
    r = p2v(run + " --inject-fault 3:0");
    CHECK(r.code == 2);
    CHECK(has(r.err, "--inject-fault 3:0: STEP is a step from 1 to 2 of program"));
    r = p2v(run + " --inject-fault 2:3");
    CHECK(r.code == 1);  // inside the program: the checked run catches it
    CHECK(has(r.err, "RESULT MISMATCH"));
  }
}

TEST_CASE("cli errors: solver options are checked before any solver runs") {
  if (!have_smt()) return;
  const std::string verify = "verify --system node=2,gpu=2 --axes 2,2 --reduce 1 --max-size 2 --solver z3";
  for (const std::string& logic : {std::string("NOTALOGIC"), std::string("qf_fd")}) {
    CAPTURE(logic);
    const Run r = p2v(verify + " --z3-logic " + logic);
    CHECK(r.code == 2);  // was a segmentation fault (a null solver)
    CHECK(has(r.err, "p2v: error: --z3-logic '" + logic + "': Z3 does not know this logic; use one of QF_FD, QF_BV"));
  }
  const Run ok = p2v(verify + " --z3-logic QF_BV");
  CHECK(ok.code == 0);
  const Run bad =
      p2v("verify --system node=2,gpu=2 --axes 2,2 --reduce 1 --max-size 2 --solver cvc5 "
          "--cvc5-option no-such-option=1");
  CHECK(bad.code == 2);
  CHECK(has(bad.err, "p2v: error: --cvc5-option no-such-option=1: cvc5 does not accept it"));
  // synth --certify --json over several placements: refused before the first result is printed.
  const std::string dir = "/tmp/p2v_cli_errors_certs_" + std::to_string(::getpid());
  const Run s =
      p2v("synth --system node=2,gpu=4 --axes 2,4 --reduce 1 --json --certify " + dir + " --z3-logic NOTALOGIC");
  CHECK(s.code == 2);
  CHECK(has(s.err, "p2v: error: --z3-logic 'NOTALOGIC'"));
  CHECK(s.out.empty());
  std::filesystem::remove_all(dir);
}

TEST_CASE("cli errors: out of memory with worker threads is exit 2 with a message, never an abort") {
  // Under a 128 MiB address-space limit the suite's workers cannot all start or allocate: the
  // started ones are joined and the failure reported (was: "terminate called without an active
  // exception", SIGABRT).
  const Run r = p2v("prove --suite " + std::string(P2V_SOURCE_DIR) + "/examples/suites/lemmas.json --jobs 2 >/dev/null",
                    "ulimit -v 131072;");
  CAPTURE(r.err);
  CHECK(r.code == 2);
  CHECK((has(r.err, "p2v: error: out of memory") || has(r.err, "p2v: error: cannot start worker thread")));
  CHECK(!has(r.err, "terminate called"));
}
