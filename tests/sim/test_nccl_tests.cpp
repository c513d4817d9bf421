// nccl-tests log reader (sim/nccl_tests.hpp): golden parses of published logs in bench/fidelity/data and
// the strict errors on malformed input.
#include <doctest/doctest.h>
#include <algorithm>

#include "helpers.hpp"

#include <fmt/core.h>

#include <string>
#include <utility>
#include <vector>

#include "p2v/engine/error.hpp"
#include "p2v/sim/fit.hpp"
#include "p2v/sim/nccl_tests.hpp"

using namespace p2v::sim;
using p2v::engine::Collective;

namespace {
std::string data(const std::string& rel) { return std::string(P2V_SOURCE_DIR) + "/bench/fidelity/data/" + rel; }

NcclTestsOptions with_ranks(int r) {
  NcclTestsOptions o;
  o.ranks = r;
  return o;
}
NcclTestsOptions with_collective(Collective c) {
  NcclTestsOptions o;
  o.collective = c;
  return o;
}

// The error message parse_nccl_tests throws for `text` ("" if none).
std::string error_of(const std::string& text, const NcclTestsOptions& opt = {}) {
  try {
    parse_nccl_tests(text, "log.txt", opt);
  } catch (const p2v::Error& e) {
    return e.what();
  }
  return "";
}

// nccl-tests' column header line.
const char* kColumns =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong\n";

const char* kHeader =
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid  1 on hostA device  0 [0x0f] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  2 on hostB device  0 [0x0f] NVIDIA H100 80GB HBM3\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
    "#wrong\n";
}  // namespace

TEST_CASE("nccl-tests: golden parse of a published 2-node H100 all_reduce_perf log") {
  const auto log = load_nccl_tests(data("dgx-h100/allreduce_2n16g_xe9680.txt"));
  CHECK(log.test == "all_reduce_perf");
  CHECK(log.collective == Collective::AllReduce);
  CHECK(log.ranks == 16);
  CHECK(log.nodes == 2);
  REQUIRE(log.hosts.size() == 2);
  CHECK(log.hosts[0] == "bm-h100-01");
  CHECK(log.hosts[1] == "bm-h100-02");
  REQUIRE(log.devices.size() == 16);
  CHECK(log.devices[15] == "NVIDIA H100 80GB HBM3");
  CHECK(log.nthread == 1);
  CHECK(log.ngpus == 1);
  REQUIRE(log.rows.size() == 32);  // 8 B .. 16 GiB
  CHECK(log.rows[0].bytes == 8);
  CHECK(log.rows[0].count == 2);
  CHECK(log.rows[0].type == "float");
  CHECK(log.rows[0].redop == "sum");
  CHECK(log.rows[0].root == -1);
  CHECK(log.rows[0].time_us == simtest::rel(68.52));  // out-of-place, not the in-place 24.70
  CHECK(log.rows[20].bytes == 8388608);
  CHECK(log.rows[20].time_us == simtest::rel(132.6));
  CHECK(log.rows[20].algbw_gbps == simtest::rel(63.24));
  CHECK(log.rows[20].busbw_gbps == simtest::rel(118.57));
  CHECK(log.rows.back().bytes == 17179869184.0);
  CHECK(log.rows.back().time_us == simtest::rel(68652));
  CHECK(log.rows.back().busbw_gbps == simtest::rel(469.21));
  CHECK(log.rows[0].line == 29);  // line numbers are the file's
}

TEST_CASE("nccl-tests: rows of size 0 (-b 0) are skipped and counted") {
  // The verbatim p5 log (Markdown-indented, with its two 0-byte rows) and the suite's copy without them.
  const auto raw = load_nccl_tests(data("p5/allreduce_2n16g_eks_raw.md"));
  const auto txt = load_nccl_tests(data("p5/allreduce_2n16g_eks.txt"));
  CHECK(raw.zero_rows == 2);
  CHECK(txt.zero_rows == 0);
  REQUIRE(raw.rows.size() == txt.rows.size());
  REQUIRE(!raw.rows.empty());
  for (std::size_t i = 0; i < raw.rows.size(); ++i) {
    CHECK(raw.rows[i].bytes == txt.rows[i].bytes);
    CHECK(raw.rows[i].time_us == txt.rows[i].time_us);
  }
  CHECK(raw.ranks == txt.ranks);
  CHECK(raw.nodes == txt.nodes);
}

TEST_CASE("nccl-tests: 8 nodes, 64 ranks; one process driving 8 GPUs") {
  const auto big = load_nccl_tests(data("dgx-h100/allreduce_8n64g.txt"));
  CHECK(big.ranks == 64);
  CHECK(big.nodes == 8);
  CHECK(big.rows.size() == 14);
  const auto one = load_nccl_tests(data("dgx-a100/allreduce_1n8g_oci.txt"));
  CHECK(one.ranks == 8);
  CHECK(one.nodes == 1);
  CHECK(one.ngpus == 8);
  CHECK(one.devices[0] == "NVIDIA A100-SXM4-40GB");
}

TEST_CASE("nccl-tests: mpirun tag prefixes, no rank lines, ranks from the caller") {
  const auto log = load_nccl_tests(data("p5/allreduce_1n8g.txt"), with_ranks(8));
  CHECK(log.ranks == 8);
  CHECK(log.nodes == 0);  // the log names no host
  REQUIRE(log.rows.size() == 32);
  CHECK(log.rows[0].time_us == simtest::rel(12.90));
  CHECK(log.rows[2].time_us == simtest::rel(22.25));  // out-of-place (in-place: 13.34)
}

TEST_CASE("nccl-tests: header lines without '#', all_gather sizes") {
  const auto log = load_nccl_tests(data("a3-mega/allgather_2n16g_dstack.txt"), with_ranks(16));
  CHECK(log.collective == Collective::AllGather);
  REQUIRE(log.rows.size() == 11);
  CHECK(log.rows[0].redop == "none");
  CHECK(log.rows[0].bytes == 8388608);
  CHECK(log.rows[0].count == 131072);
  CHECK(log.rows[0].time_us == simtest::rel(166.6));
}

TEST_CASE("nccl-tests: old column layout (no root, 'error' column)") {
  const auto log = load_nccl_tests(data("p4d/allreduce_2n_issue527.txt"), with_ranks(16));
  CHECK(log.collective == Collective::AllReduce);
  REQUIRE(log.rows.size() == 1);
  CHECK(log.rows[0].root == -1);
  CHECK(log.rows[0].time_us == simtest::rel(35215));
  CHECK(log.rows[0].busbw_gbps == simtest::rel(57.17));
}

TEST_CASE("nccl-tests: the collective from the table when the log does not name its test") {
  const std::string rows_ar = "   64   16  float  sum  -1  10.0  0.01  0.01  0  10.0  0.01  0.01  0\n";
  CHECK(parse_nccl_tests(std::string(kHeader) + rows_ar, "x").collective == Collective::AllReduce);
  const std::string rows_rs = "   64    8  float  sum  -1  10.0  0.01  0.01  0  10.0  0.01  0.01  0\n";
  CHECK(parse_nccl_tests(std::string(kHeader) + rows_rs, "x").collective == Collective::ReduceScatter);
  const std::string rows_bc = "   64   16  float  none  0  10.0  0.01  0.01  0  10.0  0.01  0.01  0\n";
  CHECK(parse_nccl_tests(std::string(kHeader) + rows_bc, "x").collective == Collective::Broadcast);
  const std::string rows_rd = "   64   16  float  sum  0  10.0  0.01  0.01  0  10.0  0.01  0.01  0\n";
  CHECK(parse_nccl_tests(std::string(kHeader) + rows_rd, "x").collective == Collective::Reduce);
  // The test's name wins and must agree with the table.
  CHECK(parse_nccl_tests("# Collective test starting: reduce_scatter_perf\n" + std::string(kHeader) + rows_rs, "x")
            .collective == Collective::ReduceScatter);
  CHECK(error_of("# Collective test starting: all_gather_perf\n" + std::string(kHeader) + rows_ar)
            .find("look like AllReduce") != std::string::npos);
  CHECK(error_of("# Collective test starting: alltoall_perf\n" + std::string(kHeader) + rows_ar)
            .find("not one p2v models") != std::string::npos);
}

TEST_CASE("nccl-tests: strict errors name the file and line") {
  const std::string ok = "   64   16  float  sum  -1  10.0  0.01  0.01  0  10.0  0.01  0.01  0\n";
  CHECK(error_of(kHeader) ==
        "log.txt: no result rows (expected the nccl-tests table: a header naming size, count, "
        "type, time, algbw, busbw and rows below it)");
  CHECK(error_of(std::string(kHeader) + "   64   16  float  sum  -1  1o.0  0.01  0.01  0  10.0  0.01  0.01  0\n") ==
        "log.txt:7: time: '1o.0' is not a number");
  CHECK(error_of(std::string(kHeader) + "   64   16  float  sum  -1\n").find("log.txt:7: 5 fields") == 0);
  CHECK(error_of(std::string(kHeader) + "   64   16  float  sum  -1  10.0  0.01  0.01  0  10.0  0.01  0.01  0  9\n")
            .find("log.txt:7: 14 fields, more than the 13") == 0);
  CHECK(error_of(std::string(kHeader) + "   64   16  float9  sum  -1  10.0  0.01  0.01  0  10.0  0.01  0.01  0\n") ==
        "log.txt:7: unknown data type 'float9'");
  CHECK(error_of(std::string(kHeader) + "   64   16  float  sum  -1  0  0.01  0.01  0  10.0  0.01  0.01  0\n") ==
        "log.txt:7: time 0 us is not positive");
  CHECK(error_of(std::string(kHeader) + ok + ok).find("log.txt:8: size 64 repeats") == 0);
  // A rank twice (two unrelated jobs' output mixed), a gap in the ranks.
  CHECK(error_of("#  Rank  0 Group  0 Pid  1 on hostA device  0 [0x0f] X\n" + std::string(kHeader) + ok)
            .find("log.txt:5: rank 0 is listed twice (first at line 1)") == 0);
  // A gap in the Rank lines is a cut list (a note, no shape from it), but a listed rank beyond the run's is an error.
  CHECK(error_of("#  Rank  3 Group  0 Pid  1 on hostC device  0 [0x0f] X\n" + std::string(kHeader) + ok, with_ranks(2))
            .find("log.txt:1: rank 3 listed, but the run has 2 ranks") == 0);
  CHECK(error_of("#  Rank  0 Group  0 Pid  1 device  0\n" + ok).find("log.txt:1: rank line without") == 0);
  // Two tables in one log.
  CHECK(error_of(std::string(kHeader) + ok +
                 "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
                 "algbw   busbw #wrong\n" +
                 ok)
            .find("log.txt:8: a second result table (the first starts at line 6)") == 0);
  // Ranks given by the caller must match the log.
  CHECK(error_of(std::string(kHeader) + ok, with_ranks(8)) == "log.txt: the log lists 2 ranks, 8 expected");
  // The table of nccl-tests -C 1 (CPU time) is refused, not read as GPU time.
  CHECK(error_of("#       size         count      type   redop    root  cputime   algbw   busbw #wrong  cputime   algbw"
                 "   busbw #wrong\n" +
                 ok)
            .find("log.txt:1: the table reports CPU time (nccl-tests -C 1)") == 0);
  // A collective asked for that the log contradicts.
  CHECK(error_of("# Collective test starting: all_reduce_perf\n" + std::string(kHeader) + ok,
                 with_collective(Collective::AllGather))
            .find("the log runs all_reduce_perf, AllGather was asked") != std::string::npos);
  // Nothing to read.
  CHECK(error_of("hello\n").find("no result rows") != std::string::npos);
  CHECK_THROWS_AS(load_nccl_tests("/nonexistent/log.txt"), p2v::Error);
}

TEST_CASE("nccl-tests: a row is one measurement; a terminal's or a web page's dressing is undone") {
  const std::string r64 = "   64   16  float  sum  -1  10.0  0.01  0.01  0  10.0  0.01  0.01  0\n";
  const std::string r1m = "1048576  262144  float  sum  -1  100.0  10.49  10.49  0  100.0  10.49  10.49  0\n";
  const std::string r2m = "2097152  524288  float  sum  -1  150.0  13.98  13.98  0  150.0  13.98  13.98  0\n";
  const auto clean = parse_nccl_tests(std::string(kHeader) + r64 + r1m + r2m, "log.txt");
  REQUIRE(clean.rows.size() == 3);
  // algbw disagreeing with size / time (an edited time): an error naming the row.
  CHECK(error_of(std::string(kHeader) + r64 +
                 "1048576  262144  float  sum  -1  999.0  10.49  10.49  0  100.0  10.49  10.49  0\n")
            .find("log.txt:8: time 999.0 us and algbw 10.49 GB/s do not agree (size / time = 1.05 GB/s") == 0);
  CHECK(error_of(std::string(kHeader) + "1048576  262144  float  sum  -1  1e-30  10.49  10.49  0  1  1  1  0\n")
            .find("log.txt:7: time 1e-30 us and algbw 10.49 GB/s do not agree") == 0);
  // Printed precision is allowed for: 100.0 us is 99.95-100.05, algbw 10.49 is 10.485-10.495.
  CHECK(
      error_of(std::string(kHeader) + "1048576  262144  float  sum  -1  100.0  10.48  10.48  0  1  1  1  0\n").empty());
  CHECK_FALSE(
      error_of(std::string(kHeader) + "1048576  262144  float  sum  -1  100.0  10.47  10.47  0  1  1  1  0\n").empty());
  // A size that is not count x type (x ranks): not a row nccl-tests prints.
  CHECK(error_of(std::string(kHeader) + "1048577  262144  float  sum  -1  100.0  10.49  10.49  0  1  1  1  0\n")
            .find("log.txt:7: size 1048577 is not a whole multiple of count x type (262144 x 4 B)") == 0);
  // A size seen before, not only on the line before (a table pasted twice).
  CHECK(error_of(std::string(kHeader) + r64 + r1m + r64).find("log.txt:9: size 64 repeats the row of line 7") == 0);
  // Wrong results (#wrong > 0): the row is left out, and said.
  const auto wrong = parse_nccl_tests(
      std::string(kHeader) + r64 + "1048576  262144  float  sum  -1  100.0  10.49  10.49  7  100.0  10.49  10.49  0\n",
      "log.txt");
  REQUIRE(wrong.rows.size() == 1);
  CHECK(wrong.notes.at(0).find("log.txt:8: size 1048576: nccl-tests counted 7 wrong element(s)") == 0);
  // Colours (ANSI escapes), no-break spaces from a web page, kubectl --timestamps, a quoted paste: the same rows.
  for (const std::string& dressed :
       {std::string("\x1b[32m") + r1m.substr(0, r1m.size() - 1) + "\x1b[0m\n",
        "1048576\xc2\xa0\xc2\xa0" + r1m.substr(8), "2025-01-02T03:04:05.123456789Z " + r1m, "> " + r1m}) {
    CAPTURE(dressed);
    const auto log = parse_nccl_tests(std::string(kHeader) + r64 + dressed + r2m, "log.txt");
    REQUIRE(log.rows.size() == 3);
    CHECK(log.rows[1].bytes == 1048576);
    CHECK(log.rows[1].time_us == 100.0);
  }
  // A line shaped like a row behind a prefix this reader does not know: left out, said.
  const auto prefixed = parse_nccl_tests(std::string(kHeader) + r64 + "WARN: " + r1m + r2m, "log.txt");
  CHECK(prefixed.rows.size() == 2);
  REQUIRE(!prefixed.notes.empty());
  CHECK(prefixed.notes.back().find("log.txt:8: a line shaped like a row of the table, but its first word 'WARN:'") ==
        0);
  // UTF-16 (a Windows editor's) or binary text: said so, not "no result rows".
  CHECK(error_of("\xff\xfe#\0 \0n\0" + std::string(kHeader)).find("log.txt: UTF-16 text") == 0);
  CHECK(error_of(std::string("abc\0def", 7)).find("log.txt: NUL bytes") == 0);
}

TEST_CASE("nccl-tests: test names and element sizes") {
  CHECK(collective_of_test("all_reduce_perf_mpi") == Collective::AllReduce);
  CHECK(collective_of_test("reduce_perf") == Collective::Reduce);
  CHECK(!collective_of_test("alltoall_perf"));
  CHECK(nccl_type_bytes("bfloat16") == 2);
  CHECK(nccl_type_bytes("double") == 8);
  CHECK(nccl_type_bytes("quad") == 0);
  // "reduce_perf" inside "all_reduce_perf" is not a separate test name.
  const auto log = parse_nccl_tests("$ ./build/all_reduce_perf -b 8 -e 64\n" + std::string(kHeader) +
                                        "   64   16  float  sum  -1  10.0  0.01  0.01  0  10.0  0.01  0.01  0\n",
                                    "x");
  CHECK(log.test == "all_reduce_perf");
}

TEST_CASE("nccl-tests: the NCCL version a log prints") {
  const auto xe = load_nccl_tests(data("dgx-h100/allreduce_2n16g_xe9680.txt"));
  CHECK(xe.nccl_version == "2.26.2+cuda12.8");
  CHECK(xe.nccl_version_line == 24);
  CHECK(load_nccl_tests(data("dgx-a100/allreduce_1n8g_oci.txt")).nccl_version.empty());
  const std::string row =
      "           8             2     float     sum      -1    12.90    0.00    0.00      0    12.87"
      "    0.00    0.00      0\n";
  // nccl-tests' own header (NCCL_VERSION_CODE), and NCCL's INFO line.
  auto log = parse_nccl_tests(
      std::string("# nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703\n") + kHeader + row, "log.txt");
  CHECK(log.nccl_version == "2.27.3");
  log =
      parse_nccl_tests(std::string("host:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n") + kHeader + row, "log.txt");
  CHECK(log.nccl_version == "2.21.5+cuda12.4");
  // One run per log: a second, different version is an error; the same one again is not.
  CHECK(error_of(std::string("NCCL version 2.21.5+cuda12.4\nNCCL version 2.21.5+cuda12.4\n") + kHeader + row).empty());
  CHECK(error_of(std::string("NCCL version 2.21.5+cuda12.4\nNCCL version 2.26.2+cuda12.8\n") + kHeader + row)
            .find("log.txt:2: NCCL version 2.26.2+cuda12.8 after 2.21.5+cuda12.4") != std::string::npos);
}

TEST_CASE("nccl-tests: the collective channels NCCL_DEBUG=INFO prints") {
  // The p4d EKS log: every rank prints "NCCL INFO 8 coll channels, 8 p2p channels, 1 p2p channels per peer".
  const auto eks = load_nccl_tests(data("p4d/allreduce_2n16g_efaeks.txt"));
  CHECK(eks.coll_channels == 8);
  CHECK(eks.coll_channels_line > 0);
  CHECK(eks.nodes == 2);
  CHECK(load_nccl_tests(data("dgx-a100/allreduce_1n8g_oci.txt")).coll_channels == 0);
  const std::string row =
      "           8             2     float     sum      -1    12.90    0.00    0.00      0    12.87"
      "    0.00    0.00      0\n";
  // v2.19 on: "N coll channels, N collnet channels, N nvls channels, ...".
  auto log = parse_nccl_tests(
      std::string("h:1:1 [0] NCCL INFO 32 coll channels, 32 collnet channels, 16 nvls channels, 32 p2p channels, "
                  "32 p2p channels per peer\n") +
          kHeader + row,
      "log.txt");
  CHECK(log.coll_channels == 32);
  const std::string a = "h:1:1 [0] NCCL INFO 16 coll channels, 16 p2p channels, 2 p2p channels per peer\n";
  const std::string b = "h:1:2 [1] NCCL INFO 24 coll channels, 24 p2p channels, 2 p2p channels per peer\n";
  log = parse_nccl_tests(a + a + kHeader + row, "log.txt");
  CHECK(log.coll_channels == 16);
  CHECK(log.coll_channels_line == 1);
  // Counts that disagree (several communicators): none is used, and a note says so.
  log = parse_nccl_tests(a + b + kHeader + row, "log.txt");
  CHECK(log.coll_channels == 0);
  REQUIRE(!log.notes.empty());
  CHECK(log.notes.back().find("2 collective channel counts (first at lines 1 and 2)") != std::string::npos);
  // Multi-node NVLink (MNNVL): NCCL's node is the NVLink domain, so its channels are not used.
  log = parse_nccl_tests(
      "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 1\n" + a + kHeader + row,
      "log.txt");
  CHECK(log.coll_channels == 0);
  CHECK(std::any_of(log.notes.begin(), log.notes.end(),
                    [](const std::string& n) { return n.find("MNNVL: its 16 coll channels") != std::string::npos; }));
  // A count out of range is not NCCL's: ignored.
  CHECK(
      parse_nccl_tests("h:1:1 [0] NCCL INFO 0 coll channels, 0 p2p channels\n" + std::string(kHeader) + row, "log.txt")
          .coll_channels == 0);
}

TEST_CASE("nccl-tests: launcher prefixes (srun -l, kubectl --prefix) are stripped") {
  // The verbatim README log with srun -l's "0: " on every line reads as the suite's copy without it.
  const auto raw = load_nccl_tests(data("p5/allreduce_2n16g_awsome_raw.md"));
  const auto txt = load_nccl_tests(data("p5/allreduce_2n16g_awsome.txt"));
  REQUIRE(raw.rows.size() == txt.rows.size());
  REQUIRE(raw.rows.size() == 32);
  for (std::size_t i = 0; i < raw.rows.size(); ++i) {
    CHECK(raw.rows[i].bytes == txt.rows[i].bytes);
    CHECK(raw.rows[i].time_us == txt.rows[i].time_us);
  }
  // Right-aligned task labels, kubectl's pod prefix, and both with mpirun's tag.
  const std::string text =
      " 1: #  Rank  0 Group  0 Pid  1 on hostA device  0 [0x0f] GPU\n"
      "[pod/nccl-launcher-x/mpi] [1,1]<stdout>:#  Rank  1 Group  0 Pid  2 on hostB device  0 [0x0f] GPU\n"
      "12: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
      "   busbw #wrong\n"
      "12:           64            16     float     sum      -1    10.00    0.01    0.01      0    10.00    0.01"
      "    0.01      0\n";
  const auto log = parse_nccl_tests(text, "log.txt");
  CHECK(log.ranks == 2);
  CHECK(log.nodes == 2);
  REQUIRE(log.rows.size() == 1);
  CHECK(log.rows[0].time_us == 10.0);
}

TEST_CASE("nccl-tests: the ranks from NCCL INFO lines, the sizes or the bandwidths when the Rank lines are missing") {
  // All-reduce without Rank lines: busbw / algbw = 2 (n-1) / n within the printed digits.
  CHECK(load_nccl_tests(data("p5/allreduce_2n16g_awsome.txt")).ranks == 16);
  CHECK(load_nccl_tests(data("p4d/allreduce_3n_issue527.txt")).ranks == 24);
  CHECK(load_nccl_tests(data("p5/allreduce_1n8g.txt")).ranks == 8);
  // All-gather: count = size / (element x ranks).
  const auto ag = load_nccl_tests(data("a3-mega/allgather_2n16g_dstack.txt"));
  CHECK(ag.ranks == 16);
  CHECK(ag.nodes == 0);
  // Every source a log has agrees on the suite's logs that list their ranks.
  for (const auto& [f, n] :
       std::vector<std::pair<const char*, int>>{{"dgx-h100/allreduce_2n16g_xe9680.txt", 16},
                                                {"dgx-h100/allreduce_8n64g.txt", 64},
                                                {"dgx-h100/allgather_10n80g_xxrjun.txt", 80},
                                                {"dgx-h100/reducescatter_10n80g_xxrjun.txt", 80}}) {
    CAPTURE(f);
    const auto log = load_nccl_tests(data(f));
    CHECK(log.ranks == n);
    CHECK(log.ranks_said == fmt::format("the log lists {} ranks", n));
    CHECK(log.ranks_per_node == 8);
  }
  // NCCL INFO: "nRanks 16 nNodes 2" (v2.19 on) and "nranks 16" (Init COMPLETE).
  const std::string row16 =
      "  1048576   262144  float  sum  -1  100.0  10.49  19.66  0  100.0  10.49  19.66  0\n";  // 1.875 = 30/16
  const std::string head = kColumns;
  auto log = parse_nccl_tests(
      "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0\n" + head +
          row16,
      "log.txt");
  CHECK(log.ranks == 16);
  CHECK(log.nodes == 2);
  CHECK(log.ranks_per_node == 8);
  // Sources that disagree (mixed output) are an error naming both.
  CHECK(error_of("h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 busId 1000 - Init COMPLETE\n" + head + row16)
            .find("NCCL INFO lines say 8 ranks, but the log's busbw/algbw ratios (2 (n-1) / n) give 16 ranks") !=
        std::string::npos);
  CHECK(error_of(std::string(kHeader) + row16).find("the log lists 2 ranks, but") != std::string::npos);
  // INFO lines of communicators of several sizes are noted and not used; the bandwidths still tell.
  log = parse_nccl_tests(
      "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 - Init COMPLETE\n"
      "h:1:1 [0] NCCL INFO comm 0x2 rank 0 nranks 2 cudaDev 0 - Init COMPLETE\n" +
          head + row16,
      "log.txt");
  CHECK(log.ranks == 16);
  REQUIRE(log.notes.size() == 1);
  CHECK(log.notes[0].find("communicators of 2 sizes") != std::string::npos);
  // Rows too coarse to tell leave the count to the caller.
  const std::string coarse = "   64   16  float  sum  -1  10.0  0.01  0.01  0  10.0  0.01  0.01  0\n";
  CHECK(parse_nccl_tests(head + coarse, "log.txt").ranks == 0);
  CHECK(parse_nccl_tests(head + coarse, "log.txt", with_ranks(32)).ranks == 32);
}

TEST_CASE("nccl-tests: '...' lines, nccl-tests' own cut Rank line, split groups, MNNVL") {
  const std::string head = kColumns;
  const std::string row2 = "  1048576   262144  float  sum  -1  100.0  10.49  10.49  0  100.0  10.49  10.49  0\n";
  const std::string ranks =
      "#  Rank  0 Group  0 Pid  1 on hostA device  0 [0x0f] GPU\n"
      "#  Rank  1 Group  0 Pid  2 on hostB device  0 [0x0f] GPU\n";
  // A '...' after the whole list (eliding INFO lines) while the bandwidths give the listed count: complete.
  auto log = parse_nccl_tests(ranks + "...\n" + head + row2, "log.txt");
  CHECK(log.ranks == 2);
  CHECK(log.nodes == 2);
  CHECK(log.notes.empty());
  // Rank lines after a '...': cut, whatever the count.
  log = parse_nccl_tests(
      "#  Rank  0 Group  0 Pid  1 on hostA device  0 [0x0f] GPU\n...\n"
      "#  Rank  1 Group  0 Pid  2 on hostB device  0 [0x0f] GPU\n" +
          head + row2,
      "log.txt");
  CHECK(log.nodes == 0);
  REQUIRE(log.notes.size() == 1);
  // nccl-tests' own cut (src/util.cu: "..." over the end of a process's 2 KiB of Rank lines).
  log = parse_nccl_tests(ranks + "#  Rank  2 Group  0 Pid  3 on hostB dev...\n" + head + row2, "log.txt");
  CHECK(log.ranks == 2);  // the bandwidths
  CHECK(log.nodes == 0);
  REQUIRE(log.notes.size() == 1);
  CHECK(log.notes[0].find("the list was cut") != std::string::npos);
  // NCCL_TESTS_SPLIT: Rank lines of two groups are several communicators at once.
  CHECK(error_of("#  Rank  0 Group  0 Pid  1 on hostA device  0 [0x0f] GPU\n"
                 "#  Rank  1 Group  1 Pid  2 on hostA device  1 [0x0f] GPU\n" +
                 head + row2)
            .find("log.txt:1: the Rank lines name 2 groups (NCCL_TESTS_SPLIT") == 0);
  // nNodes under MNNVL counts NVLink domains: not used; against the hosts, the hosts win.
  log = parse_nccl_tests(
      "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 1\n" + head + row2,
      "log.txt");
  CHECK(log.nodes == 0);
  CHECK(log.ranks == 2);
  log = parse_nccl_tests(
      "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n" + ranks + head + row2,
      "log.txt");
  CHECK(log.nodes == 2);
  REQUIRE(log.notes.size() == 1);
  CHECK(log.notes[0].find("the Rank lines name 2 hosts, NCCL INFO says nNodes 1") != std::string::npos);
  // srun -l running mpirun --tag-output: both prefixes go, <stderr> lines are skipped.
  log = parse_nccl_tests("0: [1,0]<stdout>:" + head + "0: [1,0]<stderr>:  64 16 float sum -1 1 1 1 0 1 1 1 0\n" +
                             "0: [1,0]<stdout>:" + row2,
                         "log.txt");
  REQUIRE(log.rows.size() == 1);
  CHECK(log.rows[0].bytes == 1048576);
  // Open MPI's aggregated help message between the rows is skipped with a note; a row with a bad count is not.
  log = parse_nccl_tests(head + "8 more processes have sent help message help-mtl-ofi.txt / OFI call fail\n" + row2,
                         "log.txt");
  REQUIRE(log.rows.size() == 1);
  REQUIRE(log.notes.size() == 1);
  CHECK(log.notes[0].find("log.txt:2: not a row of the table, skipped: '8 more processes") == 0);
  CHECK(error_of(head + "  1048576   x  float  sum  -1  100.0  10.49  10.49  0  100.0  10.49  10.49  0\n") ==
        "log.txt:2: count 'x' is not an element count");
  // Integers out of range are p2v errors naming the line, not library exceptions.
  CHECK(error_of("#  Rank  99999999999 Group  0 Pid  1 on hostA device  0 [0x0f] GPU\n" + head + row2) ==
        "log.txt:1: rank '99999999999' is out of range");
  CHECK(error_of("#  Rank  2147483647 Group  0 Pid  1 on hostA device  0 [0x0f] GPU\n" + head + row2, with_ranks(2))
            .find("rank 2147483647 listed, but the run has 2 ranks") != std::string::npos);
  CHECK(error_of(head + "  1048576  99999999999999999999  float  sum  -1  100.0  10.49  10.49  0  100.0  10.49  "
                        "10.49  0\n") == "log.txt:2: count '99999999999999999999' is out of range");
}

TEST_CASE("nccl-tests: a cut Rank list is noted, not read as the run's shape") {
  // The README printed ranks 0-4 of 128 and "..." (CoreWeave); OCI's doc printed 4 of 16 ranks.
  const auto cw = load_nccl_tests(data("dgx-a100/allreduce_16n128g_coreweave_raw.md"));
  CHECK(cw.ranks == 0);  // 128 ranks: busbw/algbw at two decimals does not single out n
  CHECK(cw.nodes == 0);
  REQUIRE(cw.notes.size() == 1);
  CHECK(cw.notes[0].find("lists 5 of its ranks") != std::string::npos);
  CHECK(load_nccl_tests(data("dgx-a100/allreduce_16n128g_coreweave_raw.md"), with_ranks(128)).ranks == 128);
  const auto b4 = load_nccl_tests(data("dgx-a100/allreduce_2n16g_oci_b4_raw.md"));
  CHECK(b4.ranks == 16);  // from the bandwidths
  CHECK(b4.nodes == 0);
  REQUIRE(b4.notes.size() == 1);
  CHECK(b4.notes[0].find("lists 4 of its ranks (up to rank 15") != std::string::npos);
}

TEST_CASE("nccl-tests: the timestamp column (-T 1) and per-iteration columns") {
  // nccl-tests 2.19's header and row forms (src/util.cu writeResultHeader / writeBenchmarkLineBody).
  const std::string ts =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong           timestamp\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"
      "         %Y-%m-%d %H:%M:%S\n"
      "     1048576        262144     float     sum      -1    100.0   10.49   19.66      0    101.0   10.38   19.46"
      "      0 2026-11-27 07:40:01\n";
  auto log = parse_nccl_tests(ts, "log.txt");
  REQUIRE(log.rows.size() == 1);
  CHECK(log.rows[0].time_us == 100.0);
  CHECK(log.ranks == 16);
  const std::string iter =
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    "
      "i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%\n"
      "     1048576        262144     float     sum      -1    100.0   10.49   19.66       0     98.0    104.0    "
      "103.0     1.20    101.0   10.38   19.46       0     99.0    105.0    104.0     1.30\n";
  log = parse_nccl_tests(iter, "log.txt");
  REQUIRE(log.rows.size() == 1);
  CHECK(log.rows[0].time_us == 100.0);
  CHECK(log.rows[0].busbw_gbps == simtest::rel(19.66));
}

TEST_CASE("nccl-tests: a file of several runs is read run by run") {
  // Two ranks on two hosts; an all-reduce, an alltoall and an all-gather run, as a script running the
  // tests one after another into one log prints them (nccl-tests 2.17: version line, marker, header).
  auto run = [](const std::string& test, const std::string& rows) {
    return "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902\n# Collective test starting: " + test +
           "\n" + kHeader + rows + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n#\n" +
           "# Collective test concluded: " + test + "\n#\n";
  };
  const std::string ar =
      "          64            16     float     sum      -1    10.0    0.01    0.01      0    10.0    0.01    0.01     "
      " 0\n"
      "         128            32     float     sum      -1    11.0    0.01    0.01      0    11.0    0.01    0.01     "
      " 0\n";
  const std::string ag =
      "          64             8     float    none      -1    12.0    0.01    0.00      0    12.0    0.01    0.00     "
      " 0\n";
  const std::string text = run("all_reduce_perf", ar) + run("alltoall_perf", ag) + run("all_gather_perf", ag);
  auto logs = parse_nccl_tests_runs(text, "log.txt");
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].collective == Collective::AllReduce);
  CHECK(logs[1].collective == Collective::AllGather);
  REQUIRE(logs[0].rows.size() == 2);
  REQUIRE(logs[1].rows.size() == 1);
  CHECK(logs[0].rows[0].line == 9);  // the file's line numbers
  CHECK(logs[1].rows[0].line == 38);
  CHECK(logs[0].rows[1].time_us == 11.0);
  CHECK(logs[1].rows[0].time_us == 12.0);
  CHECK(logs[0].ranks == 2);
  CHECK(logs[1].ranks == 2);
  CHECK(logs[1].nccl_version == "2.29.2");
  REQUIRE(!logs[0].notes.empty());
  CHECK(logs[0].notes[0] == "log.txt:16: the run of alltoall_perf left out (not a test p2v models)");
  // The collective asked for picks its run.
  logs = parse_nccl_tests_runs(text, "log.txt", with_collective(Collective::AllGather));
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].collective == Collective::AllGather);
  CHECK(logs[0].rows[0].line == 38);
  CHECK(logs[0].notes.at(0) == "log.txt:1: the run of all_reduce_perf left out (AllGather was asked)");
  // None left: an error naming the runs.
  try {
    parse_nccl_tests_runs(run("alltoall_perf", ag) + run("sendrecv_perf", ag), "log.txt");
    FAIL("no error");
  } catch (const p2v::Error& e) {
    CHECK(std::string(e.what()) ==
          "log.txt: none of its 2 runs (alltoall_perf, sendrecv_perf) is of a test p2v models (all_reduce, "
          "all_gather, reduce_scatter, broadcast, reduce)");
  }
  try {
    parse_nccl_tests_runs(text, "log.txt", with_collective(Collective::Broadcast));
    FAIL("no error");
  } catch (const p2v::Error& e) {
    CHECK(std::string(e.what()).find("log.txt: none of its 3 runs (all_reduce_perf, alltoall_perf, all_gather_perf) is "
                                     "a run of Broadcast") == 0);
  }
  // A malformed row of a later run is an error at its line in the file.
  const std::string bad =
      "          64             8     float    none      -1    1o.0    0.01    0.00      0    12.0    0.01    0.00     "
      " 0\n";
  try {
    parse_nccl_tests_runs(run("all_reduce_perf", ar) + run("all_gather_perf", bad), "log.txt");
    FAIL("no error");
  } catch (const p2v::Error& e) {
    CHECK(std::string(e.what()) == "log.txt:24: time: '1o.0' is not a number");
  }
  // A run of a file of several reads as its own text does, shifted by the lines before it; a line naming
  // the test after the last table (a script's echo) stays with that run.
  logs = parse_nccl_tests_runs(text + "all_gather_perf finished\n", "log.txt");
  REQUIRE(logs.size() == 2);
  const auto alone = parse_nccl_tests(run("all_gather_perf", ag) + "all_gather_perf finished\n", "log.txt");
  REQUIRE(logs[1].rows.size() == alone.rows.size());
  CHECK(logs[1].rows[0].line == alone.rows[0].line + 29);
  CHECK(logs[1].rows[0].time_us == alone.rows[0].time_us);
  CHECK(logs[1].ranks == alone.ranks);
  CHECK(logs[1].hosts == alone.hosts);
  CHECK(logs[1].test == alone.test);
  // A test that stopped before its table (its header, then an error) is left out with a note; the
  // runs around it are read.
  const std::string failed =
      "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902\n"
      "# Collective test starting: reduce_scatter_perf\n" +
      std::string(kHeader).substr(0, std::string(kHeader).find("#  Rank")) +
      "host:1:1 [0] some NCCL WARN Cuda failure 'out of memory'\n";
  logs = parse_nccl_tests_runs(run("all_reduce_perf", ar) + failed + run("all_gather_perf", ag), "log.txt");
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].collective == Collective::AllReduce);
  CHECK(logs[1].collective == Collective::AllGather);
  CHECK(logs[0].notes.at(0) == "log.txt:16: the run of reduce_scatter_perf left out (it printed no result rows)");
  CHECK(logs[1].rows[0].line == 16 + 6 + 8);
  // Launcher prefixes (mpirun --tag-output) and CRLF line ends, as in a single run.
  std::string tagged;
  for (std::size_t p = 0, q; p < text.size(); p = q + 1) {
    q = text.find('\n', p);
    tagged += "[1,0]<stdout>:" + text.substr(p, q - p) + "\r\n";
  }
  logs = parse_nccl_tests_runs(tagged, "log.txt");
  REQUIRE(logs.size() == 2);
  CHECK(logs[1].collective == Collective::AllGather);
  CHECK(logs[1].rows[0].line == 38);
  // A script's echo of the test before, then the next command line: the echo stays with its run.
  const std::string echoed = "$ ./build/all_reduce_perf -b 64 -e 128\n" + std::string(kHeader) + ar +
                             "all_reduce_perf done\n$ ./build/all_gather_perf -b 64 -e 64\n" + kHeader + ag;
  logs = parse_nccl_tests_runs(echoed, "log.txt");
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].collective == Collective::AllReduce);
  CHECK(logs[1].collective == Collective::AllGather);
  CHECK(logs[1].test == "all_gather_perf");
  logs = parse_nccl_tests_runs(echoed, "log.txt", with_collective(Collective::AllGather));
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].rows.at(0).line == 18);
  // With a collective asked for, a run that does not name its test is read only if its table is of it.
  const std::string unnamed = std::string(kHeader) + ar + "# nThread 1 nGpus 1\n" + kHeader + ag;
  logs = parse_nccl_tests_runs(unnamed, "log.txt", with_collective(Collective::AllGather));
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].collective == Collective::AllGather);
  CHECK(logs[0].notes.at(0) == "log.txt:1: a run whose table is AllReduce left out (AllGather was asked)");
  // Older nccl-tests (no version line, no marker): a command line naming the test and the nThread line start a run.
  const std::string old = "$ mpirun -np 2 ./build/all_reduce_perf -b 64 -e 128\n" + std::string(kHeader) + ar +
                          "$ mpirun -np 2 ./build/all_gather_perf -b 64 -e 64\n" + kHeader + ag;
  logs = parse_nccl_tests_runs(old, "log.txt");
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].collective == Collective::AllReduce);
  CHECK(logs[1].collective == Collective::AllGather);
  CHECK(logs[1].rows[0].line == 17);
}

TEST_CASE("nccl-tests: the environment NCCL_DEBUG=INFO prints") {
  const std::string row =
      "       64            16     float     sum      -1    10.0    0.01    0.01      0    10.0    0.01    0.01      "
      "0\n";
  auto log = parse_nccl_tests(
      "hostA:1:1 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 8388608.\n"
      "hostA:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring,Tree\n"
      "hostB:2:2 [1] NCCL INFO NCCL_ALGO set by environment to Ring,Tree\n"
      "hostA:1:1 [0] NCCL INFO NCCL_PROTO set by environment to ^LL128\n"
      "hostB:2:2 [1] NCCL INFO NCCL_PROTO set by environment to Simple\n"
      "NCCL_SOCKET_IFNAME set by environment to eth0 (not an INFO line)\n" +
          std::string(kHeader) + row,
      "log.txt");
  REQUIRE(log.env.size() == 2);
  CHECK(log.env[0].name == "NCCL_BUFFSIZE");
  CHECK(log.env[0].value == "8388608");  // the integer's closing '.' dropped
  CHECK(log.env[0].line == 1);
  CHECK(log.env[1].name == "NCCL_ALGO");
  CHECK(log.env[1].value == "Ring,Tree");
  CHECK(log.env[1].line == 2);
  // A name printed with two values (mixed runs) is left out with a note.
  REQUIRE(!log.notes.empty());
  CHECK(log.notes[0] == "log.txt:5: NCCL_PROTO set by environment to Simple and (line 4) ^LL128: not used");
}

TEST_CASE("nccl-tests: NCCL's list syntax of NCCL_PROTO / NCCL_ALGO (parseList), per version") {
  const std::vector<std::string> protos = {"ll", "ll128", "simple"};
  const std::vector<std::string> algos = {"ring", "tree", "nvls", "nvlstree"};
  std::vector<std::string> notes;
  using C = Collective;
  using V = std::vector<std::string>;
  CHECK(nccl_env_list("Simple", C::AllReduce, 22402, protos, "f:1", notes) == V{"simple"});
  CHECK(nccl_env_list("^LL128,Simple", C::AllReduce, 22402, protos, "f:1", notes) == V{"ll"});
  CHECK(nccl_env_list("ll,LL128", C::AllGather, 21805, protos, "f:1", notes) == V{"ll", "ll128"});
  // v2.24's per-function form: the function's own entry, else the first entry, else NCCL's default.
  CHECK(nccl_env_list("allreduce:tree;allgather:ring", C::AllReduce, 22402, algos, "f:1", notes) == V{"tree"});
  CHECK(nccl_env_list("allreduce:tree;allgather:ring", C::AllGather, 22402, algos, "f:1", notes) == V{"ring"});
  CHECK(!nccl_env_list("allreduce:tree", C::ReduceScatter, 22402, algos, "f:1", notes).has_value());
  CHECK(nccl_env_list("ring;allreduce:^ring", C::AllReduce, 22402, algos, "f:1", notes) ==
        V{"tree", "nvls", "nvlstree"});
  CHECK(nccl_env_list("ring;allreduce:^ring", C::Broadcast, 22402, algos, "f:1", notes) == V{"ring"});
  CHECK(notes.empty());
  // Unknown names: NCCL's error from v2.24, ignored with a note before.
  CHECK_THROWS_WITH_AS(nccl_env_list("LL256", C::AllReduce, 22402, protos, "f:3", notes),
                       "f:3: 'LL256' is not one of NCCL's names (ll, ll128, simple)", p2v::Error);
  CHECK(nccl_env_list("LL256,Simple", C::AllReduce, 22300, protos, "f:3", notes) == V{"simple"});
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "f:3: 'LL256' is not one of NCCL's names: ignored, as NCCL does before v2.24");
  CHECK_THROWS_WITH_AS(nccl_env_list("sendrecv:ring", C::AllReduce, 22402, algos, "f:4", notes),
                       "f:4: 'sendrecv' is not one of NCCL's functions", p2v::Error);
  CHECK_THROWS_AS(nccl_env_list("ring;tree", C::AllReduce, 22402, algos, "f:5", notes), p2v::Error);
  // "CollNet" is a name of v2.9-v2.13 only (CollNetDirect and CollNetChain from v2.14).
  const std::vector<std::string> with_collnet = {"ring", "tree", "collnet", "collnetdirect", "collnetchain"};
  CHECK(nccl_env_list("CollNet,Ring", C::AllReduce, 21305, with_collnet, "f:6", notes) == V{"collnet", "ring"});
  CHECK(nccl_env_list("CollNet,Ring", C::AllReduce, 21805, with_collnet, "f:6", notes) == V{"ring"});
  CHECK(notes.back() == "f:6: 'CollNet' is not one of NCCL's names: ignored, as NCCL does before v2.24");
  CHECK_THROWS_AS(nccl_env_list("CollNet", C::AllReduce, 22402, with_collnet, "f:6", notes), p2v::Error);
}

TEST_CASE("nccl-tests: NCCL's pick per size as NCCL_DEBUG_SUBSYS=TUNING prints it") {
  const std::string text =
      "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#\n# Using devices\n"
      "#  Rank  0 Group  0 Pid  1 on hostA device  0 [0x0f] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid  2 on hostB device  0 [0x0f] NVIDIA H100 80GB HBM3\n"
      "hostA:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo TREE proto SIMPLE channel{Lo..Hi}={0..1}\n"
      "hostA:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo TREE proto SIMPLE channel{Lo..Hi}={0..1}\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
      "busbw #wrong\n"
      "     1048576        262144     float     sum      -1    100.0   10.49   10.49      0    101.0   10.38   10.38  "
      "    0\n"
      "hostA:1:1 [0] NCCL INFO AllReduce: 2097152 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..3}\n"
      "hostA:1:1 [0] NCCL INFO AllReduce: 2097152 Bytes -> Algo NVLS proto SIMPLE channel{Lo..Hi}={0..15}\n"
      "     2097152        524288     float     sum      -1    150.0   13.98   13.98      0    151.0   13.89   13.89  "
      "    0\n";
  const auto log = parse_nccl_tests(text, "t.txt");
  REQUIRE(log.picks.size() == 1);  // the second size was logged with two picks: left out
  CHECK(log.picks[0].func == "AllReduce");
  CHECK(log.picks[0].bytes == 1048576);
  CHECK(log.picks[0].algo == "TREE");
  CHECK(log.picks[0].proto == "SIMPLE");
  CHECK(log.picks[0].channels == 2);
  CHECK(log.picks[0].line == 6);
  REQUIRE(log.notes.size() == 1);
  CHECK(log.notes[0] ==
        "t.txt:11: NCCL picked NVLS/SIMPLE for AllReduce of 2097152 B and (line 10) RING/LL128: not used");
  CHECK(!log.picks[0].total);
  // v2.23 printed NCCL's numbers and the call's whole bytes.
  const auto v223 = parse_nccl_tests(
      "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20\n"
      "#\n# Using devices\n"
      "#  Rank  0 Group  0 Pid  1 on hostA device  0 [0x0f] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid  2 on hostB device  0 [0x0f] NVIDIA H100 80GB HBM3\n"
      "hostA:1:1 [0] NCCL INFO AllGather: 1048576 Bytes -> Algo 1 proto 2 time 54.300000\n"
      "hostA:1:1 [0] NCCL INFO AllReduce: 2048 Bytes -> Algo 0 proto 0 time 21.000000\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
      "busbw #wrong\n"
      "     1048576        131072     float    none      -1    100.0   10.49    5.24      0    101.0   10.38    5.19  "
      "    0\n",
      "v.txt");
  REQUIRE(v223.picks.size() == 2);
  CHECK(v223.picks[0].algo == "RING");
  CHECK(v223.picks[0].proto == "SIMPLE");
  CHECK(v223.picks[0].total);
  CHECK(v223.picks[0].channels == 0);
  CHECK(v223.picks[1].algo == "TREE");
  CHECK(v223.picks[1].proto == "LL");
  CHECK(nccl_algorithm("NVLS_TREE") == Algorithm::Nvls);
  CHECK(!nccl_algorithm("PAT").has_value());
  CHECK(nccl_protocol("LL128") == Protocol::LL128);
  CHECK(!nccl_protocol("Simple").has_value());  // as NCCL prints it: upper case
}
