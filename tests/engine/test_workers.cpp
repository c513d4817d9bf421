// engine::run_workers (threads always joined, the first exception rethrown after the join),
// engine::parallel_for (indices shared out among workers) and
// engine::parse_integer / parse_double (the strict number parsers of options and CSV readers) and
// engine::text::split_csv (the one CSV splitter).
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "p2v/engine/error.hpp"
#include "p2v/engine/text_util.hpp"
#include "p2v/engine/units.hpp"
#include "p2v/engine/workers.hpp"

using p2v::engine::parse_integer;
using p2v::engine::run_workers;

TEST_CASE("run_workers: every worker runs and is joined; the first exception is rethrown after the join") {
  std::atomic<int> ran{0};
  run_workers(4, [&](std::size_t) { ++ran; });
  CHECK(ran == 4);

  // Worker 0 throws at once; the others keep running until cancelled, and all have finished (no
  // thread left running) when the exception arrives here.
  std::atomic<bool> cancelled{false};
  std::atomic<int> finished{0};
  auto slow = [&](std::size_t w) {
    if (w == 0) throw p2v::Error("worker 0 failed");
    while (!cancelled) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++finished;
  };
  CHECK_THROWS_WITH_AS(run_workers(3, slow, [&] { cancelled = true; }), "worker 0 failed", p2v::Error);
  CHECK(finished == 2);

  // Out of memory stays std::bad_alloc (the CLI reports it as such), also with one worker.
  CHECK_THROWS_AS(run_workers(2,
                              [](std::size_t w) {
                                if (w == 1) throw std::bad_alloc();
                              }),
                  std::bad_alloc);
  CHECK_THROWS_AS(run_workers(1, [](std::size_t) { throw std::bad_alloc(); }), std::bad_alloc);
  run_workers(0, [](std::size_t) { FAIL("no worker should run"); });
}

TEST_CASE("parallel_for: every index once, on at most count threads; after an exception no index starts") {
  for (std::size_t workers : {1, 3, 8}) {
    CAPTURE(workers);
    std::vector<std::atomic<int>> hits(50);
    std::mutex mu;
    std::set<std::thread::id> threads;
    p2v::engine::parallel_for(hits.size(), workers, [&](std::size_t i) {
      ++hits[i];
      std::lock_guard<std::mutex> g(mu);
      threads.insert(std::this_thread::get_id());
    });
    for (const auto& h : hits) CHECK(h == 1);
    CHECK(threads.size() <= workers);
    if (workers == 1) CHECK(threads.count(std::this_thread::get_id()) == 1);  // in the caller
  }
  std::atomic<int> calls{0};
  p2v::engine::parallel_for(0, 4, [&](std::size_t) { ++calls; });
  CHECK(calls == 0);
  // Index 0 throws; with one worker nothing after it starts, and the exception arrives here.
  CHECK_THROWS_AS(p2v::engine::parallel_for(10, 1,
                                            [&](std::size_t i) {
                                              ++calls;
                                              if (i == 0) throw std::runtime_error("stop");
                                            }),
                  std::runtime_error);
  CHECK(calls == 1);
}

TEST_CASE("parse_integer: digits only, in range, no overflow") {
  CHECK(parse_integer("12", "--n", 0, 100) == 12);
  CHECK(parse_integer("-5", "--n", -10, 10) == -5);
  CHECK(parse_integer("+7", "--n", 0, 10) == 7);
  constexpr long long lo = std::numeric_limits<long long>::min(), hi = std::numeric_limits<long long>::max();
  CHECK(parse_integer("9223372036854775807", "--n", lo, hi) == hi);
  CHECK(parse_integer("-9223372036854775808", "--n", lo, hi) == lo);
  for (const char* bad : {"", "-", "+", "1x", " 1", "1 ", "0x10", "1e3", "9223372036854775808", "-9223372036854775809",
                          "99999999999999999999"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_integer(bad, "--n", lo, hi), p2v::Error);
  }
  CHECK_THROWS_WITH(parse_integer("0", "--inject-fault STEP", 1, 9),
                    "--inject-fault STEP: expected an integer from 1 to 9, got '0'");
  CHECK_THROWS_AS(parse_integer("10", "--n", 1, 9), p2v::Error);
}

TEST_CASE("parse_double: the whole text, finite, with the sign asked for") {
  using p2v::engine::parse_double;
  using p2v::engine::Sign;
  CHECK(parse_double("0.5", "x") == 0.5);
  CHECK(parse_double("-3", "x") == -3);
  CHECK(parse_double("1e-6", "x", Sign::Positive) == 1e-6);
  CHECK(parse_double("0", "x", Sign::NonNegative) == 0);
  for (const char* bad : {"", "1x", "x1", "inf", "nan", "1e400", "1,5", "1 2"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_double(bad, "x"), p2v::Error);
  }
  CHECK_THROWS_WITH(parse_double("0", "m.csv:3 bytes", Sign::Positive), "m.csv:3 bytes: '0' is not a positive number");
  CHECK_THROWS_WITH(parse_double("-1", "w", Sign::NonNegative), "w: '-1' is not a non-negative number");
  CHECK_THROWS_WITH(parse_double("1o", "w"), "w: '1o' is not a number");
}

TEST_CASE("split_csv: RFC 4180 quotes, whitespace around fields dropped, malformed lines refused") {
  using p2v::engine::text::split_csv;
  using p2v::engine::text::try_split_csv;
  using V = std::vector<std::string>;
  CHECK(split_csv("a,b") == V{"a", "b"});
  CHECK(split_csv(" a , b ") == V{"a", "b"});
  CHECK(split_csv("\"x, y\",z") == V{"x, y", "z"});
  CHECK(split_csv("\"say \"\"hi\"\"\",1") == V{"say \"hi\"", "1"});
  CHECK(split_csv(" \" padded \" ,2") == V{" padded ", "2"});
  CHECK(split_csv("") == V{""});
  CHECK(split_csv(",") == V{"", ""});
  CHECK(split_csv("\"\",x") == V{"", "x"});
  for (const char* bad : {"a\"b,c", "\"a\"b,c", "\"a", "x,\"y", "\"a\" \"b\""}) {
    CAPTURE(bad);
    CHECK(!try_split_csv(bad));
    CHECK_THROWS_AS(split_csv(bad, "f.csv:2"), p2v::Error);
  }
  CHECK_THROWS_WITH(split_csv("\"a", "f.csv:2"), doctest::Contains("f.csv:2: malformed CSV line"));
}
