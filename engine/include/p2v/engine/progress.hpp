#pragma once
// Progress on stderr for work that may take more than a couple of seconds (docs/sweeps.md "Progress"):
// done/total, rate and ETA, redrawn at most every `interval` seconds. add() may be called from
// any thread (e.g. the workers of engine::run_workers); drawing happens in whichever thread
// crosses the interval, under a mutex, so lines never interleave.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

namespace p2v::engine {

// Whether a command draws progress: never with `quiet`; always with `force` (--progress);
// otherwise only when standard error is a terminal.
bool progress_wanted(bool quiet, bool force);

// One progress line: "label 12/40 (30%) 2.5/s ETA 11s note" (total 0: unknown, no percentage
// or ETA). Exposed for tests.
std::string format_progress(const std::string& label, std::uint64_t done, std::uint64_t total, double elapsed_s,
                            const std::string& note = "");

class Progress {
 public:
  // Draws nothing unless `enabled`. On a terminal each draw rewrites the line; elsewhere (a log
  // file under --progress) each draw is a line of its own, at most every 2 s.
  Progress(std::string label, std::uint64_t total, bool enabled, std::FILE* out = stderr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add(std::uint64_t n = 1);    // thread-safe
  void set_total(std::uint64_t t);  // thread-safe
  void note(const std::string& s);  // thread-safe: a short text after the counts (the current item)
  // The final line (counts, elapsed time) and a newline, when a line was drawn before, or when the
  // output is not a terminal and something was counted (a run under 0.25 s leaves a terminal
  // untouched; a Progress that counted nothing prints nothing); later calls do nothing.
  void finish();
  std::uint64_t done() const { return done_.load(); }
  bool enabled() const { return enabled_; }

 private:
  void draw(bool final);
  std::string label_;
  std::atomic<std::uint64_t> done_{0}, total_{0};
  bool enabled_, tty_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<std::int64_t> next_draw_ns_{0};
  std::int64_t interval_ns_;
  std::mutex mu_;  // drawing and note_
  std::string note_;
  bool finished_ = false, drawn_ = false;
};

// Keeps a Progress line alive while nothing is counted (e.g. one long solver query): once a second it draws
// the line if a draw is due (Progress's interval), so a run under --progress is never silent for long.
// Stops (and joins its thread) when destroyed.
class ProgressHeartbeat {
 public:
  explicit ProgressHeartbeat(Progress& p);
  ~ProgressHeartbeat();
  ProgressHeartbeat(const ProgressHeartbeat&) = delete;
  ProgressHeartbeat& operator=(const ProgressHeartbeat&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace p2v::engine
