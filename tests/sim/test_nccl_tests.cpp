// nccl-tests log reader (sim/nccl_tests.hpp): golden parses of published logs in bench/fidelity/data and
// the strict errors on malformed input.
#include <doctest/doctest.h>

#include <string>

#include "p2v/engine/error.hpp"
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
  CHECK(log.rows[0].time_us == doctest::Approx(68.52));  // out-of-place, not the in-place 24.70
  CHECK(log.rows[20].bytes == 8388608);
  CHECK(log.rows[20].time_us == doctest::Approx(132.6));
  CHECK(log.rows[20].algbw_gbps == doctest::Approx(63.24));
  CHECK(log.rows[20].busbw_gbps == doctest::Approx(118.57));
  CHECK(log.rows.back().bytes == 17179869184.0);
  CHECK(log.rows.back().time_us == doctest::Approx(68652));
  CHECK(log.rows.back().busbw_gbps == doctest::Approx(469.21));
  CHECK(log.rows[0].line == 28);  // line numbers are the file's
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
  CHECK(log.rows[0].time_us == doctest::Approx(12.90));
  CHECK(log.rows[2].time_us == doctest::Approx(22.25));  // out-of-place (in-place: 13.34)
}

TEST_CASE("nccl-tests: header lines without '#', all_gather sizes") {
  const auto log = load_nccl_tests(data("a3-mega/allgather_2n16g_dstack.txt"), with_ranks(16));
  CHECK(log.collective == Collective::AllGather);
  REQUIRE(log.rows.size() == 11);
  CHECK(log.rows[0].redop == "none");
  CHECK(log.rows[0].bytes == 8388608);
  CHECK(log.rows[0].count == 131072);
  CHECK(log.rows[0].time_us == doctest::Approx(166.6));
}

TEST_CASE("nccl-tests: old column layout (no root, 'error' column)") {
  const auto log = load_nccl_tests(data("p4d/allreduce_2n_issue527.txt"), with_ranks(16));
  CHECK(log.collective == Collective::AllReduce);
  REQUIRE(log.rows.size() == 1);
  CHECK(log.rows[0].root == -1);
  CHECK(log.rows[0].time_us == doctest::Approx(35215));
  CHECK(log.rows[0].busbw_gbps == doctest::Approx(57.17));
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
  CHECK(error_of("#  Rank  3 Group  0 Pid  1 on hostC device  0 [0x0f] X\n" + std::string(kHeader) + ok)
            .find("rank 3 listed but rank 2 missing") != std::string::npos);
  CHECK(error_of("#  Rank  0 Group  0 Pid  1 device  0\n" + ok).find("log.txt:1: rank line without") == 0);
  // Two tables in one log.
  CHECK(error_of(std::string(kHeader) + ok +
                 "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
                 "algbw   busbw #wrong\n" +
                 ok)
            .find("log.txt:8: a second result table (the first starts at line 6)") == 0);
  // Ranks given by the caller must match the log.
  CHECK(error_of(std::string(kHeader) + ok, with_ranks(8)) == "log.txt: the log lists 2 ranks, 8 expected");
  // A collective asked for that the log contradicts.
  CHECK(error_of("# Collective test starting: all_reduce_perf\n" + std::string(kHeader) + ok,
                 with_collective(Collective::AllGather))
            .find("the log runs all_reduce_perf, AllGather was asked") != std::string::npos);
  // Nothing to read.
  CHECK(error_of("hello\n").find("no result rows") != std::string::npos);
  CHECK_THROWS_AS(load_nccl_tests("/nonexistent/log.txt"), p2v::Error);
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
  CHECK(xe.nccl_version_line == 23);
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
