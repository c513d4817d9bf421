// Size lists and ranges (engine/sizes.hpp), the crossover of a sweep, the progress line
// (engine/progress.hpp), and the CLI's sweep options and usage errors.
#include <doctest/doctest.h>
#include <chrono>
#include <thread>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/progress.hpp"
#include "p2v/engine/sizes.hpp"
#include "p2v/engine/workers.hpp"

using namespace p2v::engine;

namespace {
std::string error_of(const std::string& text) {
  try {
    parse_sizes(text, "--bytes");
  } catch (const p2v::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("size lists and ranges") {
  CHECK(parse_sizes("64M", "--bytes") == std::vector<double>{64.0 * 1024 * 1024});
  CHECK(parse_sizes("1K,1M,1G", "--bytes") == std::vector<double>{1024.0, 1024.0 * 1024, 1024.0 * 1024 * 1024});
  // sorted, duplicates dropped
  CHECK(parse_sizes("1M, 1K,1K", "--bytes") == std::vector<double>{1024.0, 1024.0 * 1024});
  CHECK(parse_sizes("1K:16K:x2", "--bytes") == std::vector<double>{1024, 2048, 4096, 8192, 16384});
  CHECK(parse_sizes("1K:16K", "--bytes") == std::vector<double>{1024, 2048, 4096, 8192, 16384});
  CHECK(parse_sizes("1K:10K:x4", "--bytes") == std::vector<double>{1024, 4096});  // the last size <= MAX
  CHECK(parse_sizes("1K:4K:+1K", "--bytes") == std::vector<double>{1024, 2048, 3072, 4096});
  CHECK(parse_sizes("8,1K:2K", "--bytes") == std::vector<double>{8, 1024, 2048});
  // nccl-tests' -b 8 -e 8G -f 2: 31 sizes, 8 B to 8 GiB
  const auto v = size_range(8, 8.0 * (1 << 30), 2, 0, "-b/-e");
  CHECK(v.size() == 31);
  CHECK(v.front() == 8);
  CHECK(v.back() == 8.0 * (1 << 30));
  // errors name the option and the item
  CHECK(error_of("").find("--bytes: give a size") == 0);
  CHECK(error_of("1K,,1M").find("empty item") != std::string::npos);
  CHECK(error_of("1K:1M:x1").find("factor 'x1'") != std::string::npos);
  CHECK(error_of("1M:1K").find("the end is below the start") != std::string::npos);
  CHECK(error_of("1K:1M:3").find("neither a factor") != std::string::npos);
  CHECK(error_of("1K:2K:3:4").find("MIN:MAX") != std::string::npos);
  CHECK(error_of("1Q").find("unknown unit 'Q'") != std::string::npos);
  CHECK(error_of("1:1T:+1").find("more than 4096 sizes") != std::string::npos);
  CHECK_THROWS_AS(parse_sizes("1.5", "--bytes", 1e15, /*whole=*/true), p2v::Error);
}

TEST_CASE("crossover merges consecutive sizes with the same winner") {
  const std::vector<double> s{1, 2, 4, 8, 16, 32};
  const auto r = crossover(s, {"A", "A", "B", "B", "A", "C"});
  REQUIRE(r.size() == 4);
  CHECK(r[0].winner == "A");
  CHECK(r[0].from == 1);
  CHECK(r[0].to == 2);
  CHECK(r[1].winner == "B");
  CHECK(r[1].first == 2);
  CHECK(r[1].last == 3);
  CHECK(r[2].winner == "A");  // A again after B: a range of its own
  CHECK(r[2].from == 16);
  CHECK(r[3].from == 32);
  CHECK(r[3].to == 32);
  CHECK(crossover({}, {}).empty());
  CHECK(crossover({1, 2}, {"A", "A"}).size() == 1);
  CHECK_THROWS_AS(crossover({1, 2}, {"A"}), p2v::Error);
}

TEST_CASE("sizes are printed in a form the parser reads back") {
  CHECK(format_size(8) == "8");
  CHECK(format_size(1024) == "1K");
  CHECK(format_size(64.0 * 1024 * 1024) == "64M");
  CHECK(format_size(1.5 * 1024 * 1024 * 1024) == "1.5G");
  CHECK(format_size(25e6) == "25MB");
  CHECK(format_size(4e8) == "400MB");
  CHECK(format_size(3000) == "3KB");
  CHECK(format_size(3001) == "2.931K");
  for (double b : {8.0, 1024.0, 25e6, 4e8, 1.5 * (1 << 30), 8.0 * (1 << 30)})
    CHECK(parse_sizes(format_size(b), "x") == std::vector<double>{b});
}

TEST_CASE("progress line: counts, rate, ETA") {
  CHECK(format_progress("certificates", 10, 40, 5.0) == "certificates 10/40 (25%) 2/s elapsed 5s ETA 15s");
  CHECK(format_progress("sizes", 3, 3, 2.0) == "sizes 3/3 (100%) 1.5/s elapsed 2s");
  CHECK(format_progress("programs", 0, 7, 0.0) == "programs 0/7 (0%) elapsed 0s ETA ?");
  CHECK(format_progress("rows", 1200, 0, 100.0, "64M") == "rows 1200 12/s elapsed 1m40s 64M");
  CHECK(format_progress("x", 1, 2, 7300) == "x 1/2 (50%) 0.00014/s elapsed 2h01m ETA 2h01m");
}

TEST_CASE("progress is thread-safe under run_workers and draws whole lines") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    Progress p("work", 4000, /*enabled=*/true, f);
    run_workers(4, [&](std::size_t) {
      for (int i = 0; i < 1000; ++i) p.add();
    });
    CHECK(p.done() == 4000);
    p.finish();
    p.finish();  // once
  }
  std::rewind(f);
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  // Not a terminal: one line per draw, the last one the final count.
  REQUIRE(!text.empty());
  CHECK(text.back() == '\n');
  const auto last = text.rfind('\n', text.size() - 2);
  CHECK(text.substr(last == std::string::npos ? 0 : last + 1).find("work 4000/4000 (100%)") == 0);
  CHECK(text.find('\r') == std::string::npos);
}

TEST_CASE("progress heartbeat: a line while nothing is counted, none after it stops") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  auto text = [f] {
    std::fflush(f);
    std::rewind(f);
    std::string t;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) t.append(buf, n);
    std::fseek(f, 0, SEEK_END);
    return t;
  };
  {
    Progress p("closed", 0, /*enabled=*/true, f);
    p.note("(waiting)");
    {
      const ProgressHeartbeat hb(p);
      // Not a terminal: a draw is due every 2 s; the heartbeat looks once a second.
      std::this_thread::sleep_for(std::chrono::milliseconds(3200));
    }
    const std::string during = text();
    CHECK(p.done() == 0);
    CHECK(during.find("closed 0 elapsed") == 0);
    CHECK(during.find("(waiting)") != std::string::npos);
    std::this_thread::sleep_for(std::chrono::milliseconds(2200));
    CHECK(text() == during);  // stopped with the heartbeat
  }
  std::fclose(f);
  // Disabled: the heartbeat starts no thread and writes nothing.
  std::FILE* g = std::tmpfile();
  REQUIRE(g != nullptr);
  {
    Progress p("closed", 0, /*enabled=*/false, g);
    const ProgressHeartbeat hb(p);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  }
  CHECK(std::ftell(g) == 0);
  std::fclose(g);
}

TEST_CASE("progress off: nothing written") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    Progress p("work", 10, /*enabled=*/false, f);
    p.add(10);
  }
  CHECK(std::ftell(f) == 0);
  std::fclose(f);
  CHECK_FALSE(progress_wanted(/*quiet=*/true, /*force=*/true));
  CHECK(progress_wanted(/*quiet=*/false, /*force=*/true));
}

TEST_CASE("CLI: sweep options and their usage errors") {
  using p2v_test::run_cli;
  const std::string sys = " --system " P2V_SOURCE_DIR "/examples/systems/v100-4node.json --axes 32 --reduce 0 ";
  // nccl-tests' -b/-e/-f give the same sweep as the range form
  const auto a = run_cli("simulate" + sys + "--bytes 1K:1M:x4");
  const auto b = run_cli("simulate" + sys + "-b 1K -e 1M -f 4");
  CHECK(a.code == 0);
  CHECK(a.out == b.out);
  CHECK(a.out.find("6 sizes from 1K to 1M") != std::string::npos);
  // a list
  const auto l = run_cli("simulate" + sys + "--bytes 4K,1K");
  CHECK(l.code == 0);
  CHECK(l.out.find("2 sizes from 1K to 4K") != std::string::npos);
  for (const auto& [args, msg] : std::vector<std::pair<std::string, std::string>>{
           {"--bytes 1K,1M -b 1K", "give --bytes or -b/-e/-f/-i, not both"},
           {"-e 1M", "-e/-f/-i need -b"},
           {"-b 1M -e 1K", "-e 1K: below -b 1M"},
           {"-b 1K -e 1M -f 1", "-f '1': expected a number above 1"},
           {"-b 1K -e 1M -f 2 -i 1K", "not both"},
           {"--bytes 1K:1M:y2", "neither a factor"},
           {"--bytes 1K,1M --steps", "--steps shows one size"},
       }) {
    const auto r = run_cli("simulate" + sys + args);
    CAPTURE(args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("p2v: error: ") == 0);
    CHECK(r.err.find(msg) != std::string::npos);
  }
  // progress: off when stderr is not a terminal, on with --progress, off again with --quiet
  CHECK(a.err.empty());
  const auto p = run_cli("simulate" + sys + "--bytes 1K:1M:x4 --progress");
  CHECK(p.err.find("simulate: sizes 6/6 (100%)") != std::string::npos);
  CHECK(p.out == a.out);
  CHECK(run_cli("simulate" + sys + "--bytes 1K:1M:x4 --progress --quiet").err.empty());
}
