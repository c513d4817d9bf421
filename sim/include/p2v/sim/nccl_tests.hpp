#pragma once
// Reader of nccl-tests output (docs/simulator.md, "Calibration"): the text all_reduce_perf, all_gather_perf,
// reduce_scatter_perf, broadcast_perf and reduce_perf print (NVIDIA/nccl-tests, src/common.cu),
// as users paste it into issues and logs. docs/simulator.md ("nccl-tests logs") states the format.
//
// What is read:
// - the test: "# Collective test starting: all_reduce_perf" or the command line naming a
//   *_perf binary (also *_perf_mpi); without either, the table decides (redop none and root -1:
//   all_gather; root >= 0: broadcast / reduce; sum with count = size / element: all_reduce,
//   count = size / (element x ranks): reduce_scatter);
// - the ranks, from the first source the log has, all of which must agree: the complete list of
//   "#  Rank  3 Group  0 Pid 123 on HOST device  3 [0x..] NAME" lines (also the older form without
//   "Group"; nodes = distinct hosts); NCCL INFO's "nRanks N" / "nranks N" (and "nNodes N"); for
//   all-gather / reduce-scatter the sizes (count = size / (element x ranks)); for all-reduce the
//   bandwidths (busbw / algbw = 2 (n-1) / n within the printed digits). A Rank list with gaps, a
//   Rank line nccl-tests ended in "..." (its per-process buffer), or a "..." line followed by more
//   Rank lines is cut: noted in `notes`, not used; a "..." line after the last Rank line counts as a
//   cut unless another source gives the listed count. NCCL INFO's nNodes is the node count where the
//   log lists no hosts (not under MNNVL, where it counts NVLink domains). Rank lines of several
//   groups (NCCL_TESTS_SPLIT) are an error: several communicators at once;
// - the column header ("size count type redop root time algbw busbw #wrong time ...", "root"
//   absent and "error" for "#wrong" in old versions; per-iteration and timestamp columns of
//   nccl-tests 2.19) and the rows below it; the out-of-place columns (the first time / algbw /
//   busbw) are kept. A "cputime" table (-C 1) is refused.
// Rows of size 0 (nccl-tests -b 0) move no data and are skipped (counted in zero_rows).
// Lines may carry kubectl's "[pod/NAME/CONTAINER] ", mpirun's --tag-output ("[1,0]<stdout>:";
// <stderr> lines are skipped) and srun -l's "0: " prefixes, and may lack the leading '#'. Other
// lines (NCCL INFO, warnings, shell prompts) are ignored; a line among the rows that starts with a
// number but has a word as its count and no data type (Open MPI's "8 more processes have sent help
// message ...") is skipped with a note. A row that does not match the header, a
// second result table, a rank listed twice, rank counts that disagree, or no rows at all is an
// error "<origin>:<line>: ...".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"

namespace p2v::sim {

struct NcclTestsRow {
  double bytes = 0;        // size (B): nccl-tests' S (AllGather: output, ReduceScatter: input)
  std::int64_t count = 0;  // elements as printed
  std::string type, redop;
  int root = -1;       // -1 when the column is absent
  double time_us = 0;  // out-of-place
  double algbw_gbps = 0, busbw_gbps = 0;
  double algbw_half_ulp = 0, busbw_half_ulp = 0;  // half a unit of the last digit printed (0: exponent form)
  int line = 0;
};

struct NcclTestsLog {
  std::string origin;
  std::string test;  // "all_reduce_perf" ... ("" when the log does not name it)
  engine::Collective collective = engine::Collective::AllReduce;
  int ranks = 0;           // what the log says (see parse_nccl_tests), else NcclTestsOptions::ranks (0: unknown)
  int nodes = 0;           // distinct hosts of the Rank lines, or NCCL INFO's nNodes (0: the log does not say)
  int ranks_per_node = 0;  // ranks on each host when every host has as many (0: unknown)
  std::string ranks_said;  // where `ranks` comes from, e.g. "the log lists 16 ranks" ("" when from the caller)
  int top_rank = -1;       // the highest rank a Rank line names (-1: none); below `ranks` when that is known
  int top_rank_line = 0;
  std::vector<std::string> hosts;    // in order of first appearance
  std::vector<std::string> devices;  // GPU name per rank, as printed (may be empty)
  int nthread = 0, ngpus = 0;        // from the "nThread 1 nGpus 8 ..." line (0: absent)
  // The NCCL version as the log prints it ("NCCL version 2.26.2+cuda12.8", or nccl-tests'
  // "nccl-library=22602" as "2.26.2"); "" when the log does not say. Line where first stated.
  std::string nccl_version;
  int nccl_version_line = 0;
  // Collective channels as NCCL_DEBUG=INFO prints them ("NCCL INFO 8 coll channels, ..."); 0 when
  // the log does not say. Line where first stated.
  int coll_channels = 0;
  int coll_channels_line = 0;
  // NCCL's environment as NCCL_DEBUG=INFO prints it ("NCCL INFO NCCL_PROTO set by environment to
  // Simple", "NCCL INFO NCCL_BUFFSIZE set by environment to 8388608."): name, value (an integer's
  // closing '.' dropped) and the line where first printed, in order. A name printed with two values
  // is left out with a note.
  struct Env {
    std::string name, value;
    int line = 0;
  };
  std::vector<Env> env;
  // NCCL's pick per call as NCCL_DEBUG_SUBSYS=TUNING prints it on rank 0 (src/enqueue.cc; from v2.24
  // "AllReduce: 1048576 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..15}", bytes the call's count x
  // type size, i.e. a rank's input for AllGather and its output for ReduceScatter; v2.23 "AllReduce:
  // 1048576 Bytes -> Algo 1 proto 1 time 12.3", numbers, bytes the larger of send and receive, i.e.
  // nccl-tests' size): the function, the bytes, the algorithm and protocol as v2.24 names them (TREE,
  // RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT; LL, LL128, SIMPLE), whether the bytes are
  // the whole call's (`total`: v2.23), the channels the call ran (0: not printed) and the line where
  // first printed. Every iteration prints it; a size of one function printed with two picks is left out
  // with a note.
  struct Pick {
    std::string func;
    double bytes = 0;
    std::string algo, proto;
    bool total = false;
    int channels = 0;
    int line = 0;
  };
  std::vector<Pick> picks;
  std::vector<NcclTestsRow> rows;
  int zero_rows = 0;               // rows of size 0, skipped
  std::vector<std::string> notes;  // what the reader could not use and why ("<origin>:<line>: ...")
};

struct NcclTestsOptions {
  int ranks = 0;  // ranks when the log has no rank lines (0: unknown); must match them if it has
  std::optional<engine::Collective> collective;  // when set: must match what the log names
};

// Element size in bytes of an nccl-tests type name (float, half, bfloat16, double, int8, ...);
// 0 for an unknown name.
int nccl_type_bytes(const std::string& type);
// "all_reduce_perf" -> AllReduce, ... (also "_mpi" suffix); nullopt otherwise.
std::optional<engine::Collective> collective_of_test(const std::string& test);

NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& origin, const NcclTestsOptions& opt = {});
// Gives `log` the rank count it ran with: a log that says its count must say `ranks`; one that does
// not takes `ranks`, unless a Rank line names a rank beyond it. `of` says where `ranks` comes from in
// that error ("the run has 8 ranks", "the system has 8 devices"). Throws p2v::Error. parse_nccl_tests
// applies it with NcclTestsOptions::ranks; `p2v calibrate` with its system's devices.
void expect_ranks(NcclTestsLog& log, int ranks, const std::string& of);
// Reads at most kMaxNcclTestsBytes (larger files are an error); path "-" is standard input (its
// messages name it "<stdin>").
inline constexpr std::size_t kMaxNcclTestsBytes = 64u << 20;
NcclTestsLog load_nccl_tests(const std::string& path, const NcclTestsOptions& opt = {});

// A file of several runs, one after another (a script running all_reduce_perf, all_gather_perf,
// ... into one log): one log per run, each read as parse_nccl_tests reads a file, with the file's
// line numbers. A run starts at a "nccl-tests version" header, a "Collective test starting" marker,
// an "nThread .. nGpus .." line or a line naming a test (a command line, a script's echo; not the
// closing "Collective test concluded" line) that comes after the previous run's rows, or after that
// run printed the same header (a test that stopped before its table; such a run is left out with a
// note). Runs of tests p2v does not model (alltoall_perf, sendrecv_perf, ...) and, with
// NcclTestsOptions::collective, runs that name another test (or none, with a table of another
// collective) are left out with a note on the first
// log returned; none left is an error. A file of one run reads exactly as parse_nccl_tests reads it.
std::vector<NcclTestsLog> parse_nccl_tests_runs(const std::string& text, const std::string& origin,
                                                const NcclTestsOptions& opt = {});
std::vector<NcclTestsLog> load_nccl_tests_runs(const std::string& path, const NcclTestsOptions& opt = {});

// NCCL's list syntax (src/graph/tuning.cc parseList) for collective `coll`, at NCCL version `nccl_version`
// (e.g. 22402):
// from v2.24 entries separated by ';', the first maybe without a prefix (every collective), the others
// "function:list", each entry replacing the lists of the functions it names; a list is "a,b" (only
// those) or "^a,b" (all but those); names case-insensitive, an unknown name or function an error (as
// in NCCL). Before v2.24 one list, unknown names ignored. nullopt: the value leaves `coll` at NCCL's
// default. `names` are NCCL's (lower case) for the variable, e.g. {"ll", "ll128", "simple"}; `where` ("file:line")
// starts errors and notes; a name ignored is a note in `notes`. Throws p2v::Error where NCCL errs.
std::optional<std::vector<std::string>> nccl_env_list(const std::string& value, engine::Collective coll,
                                                      int nccl_version, const std::vector<std::string>& names,
                                                      const std::string& where, std::vector<std::string>& notes);

}  // namespace p2v::sim
