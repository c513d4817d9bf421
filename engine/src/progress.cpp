#include "p2v/engine/progress.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <cmath>
#include <condition_variable>
#include <thread>

namespace p2v::engine {

namespace {
std::string duration(double s) {
  if (!(s >= 0) || !std::isfinite(s)) return "?";
  const auto t = static_cast<long long>(std::llround(s));
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, (t / 60) % 60);
}
}  // namespace

bool progress_wanted(bool quiet, bool force) {
  if (quiet) return false;
  return force || ::isatty(2) == 1;
}

std::string format_progress(const std::string& label, std::uint64_t done, std::uint64_t total, double elapsed_s,
                            const std::string& note) {
  std::string s = total > 0 ? fmt::format("{} {}/{} ({:.0f}%)", label, done, total, 100.0 * done / total)
                            : fmt::format("{} {}", label, done);
  const double rate = elapsed_s > 0 ? done / elapsed_s : 0;
  if (rate >= 10)
    s += fmt::format(" {:.0f}/s", rate);
  else if (rate > 0)
    s += fmt::format(" {:.2g}/s", rate);
  s += fmt::format(" elapsed {}", duration(elapsed_s));
  if (total > 0 && done < total) s += " ETA " + (rate > 0 ? duration((total - done) / rate) : std::string("?"));
  if (!note.empty()) s += " " + note;
  return s;
}

Progress::Progress(std::string label, std::uint64_t total, bool enabled, std::FILE* out)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled),
      tty_(out && ::isatty(::fileno(out)) == 1),
      out_(out),
      start_(std::chrono::steady_clock::now()),
      interval_ns_(tty_ ? 250'000'000 : 2'000'000'000) {
  next_draw_ns_ = interval_ns_;
}

Progress::~Progress() {
  try {
    finish();
  } catch (...) {  // progress output never ends a run
  }
}

void Progress::add(std::uint64_t n) {
  done_ += n;
  if (!enabled_) return;
  const auto now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
  std::int64_t due = next_draw_ns_.load();
  if (now < due) return;
  // One thread wins the draw; the others go on.
  if (!next_draw_ns_.compare_exchange_strong(due, now + interval_ns_)) return;
  draw(false);
}

void Progress::set_total(std::uint64_t t) { total_ = t; }

void Progress::note(const std::string& s) {
  std::lock_guard<std::mutex> g(mu_);
  note_ = s;
}

void Progress::draw(bool final) {
  std::lock_guard<std::mutex> g(mu_);
  if (finished_ || !out_) return;
  if (final && !drawn_ && (tty_ || done_.load() == 0)) return;  // a quick run, or nothing counted: no line
  drawn_ = true;
  const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = format_progress(label_, done_.load(), total_.load(), el, final ? "" : note_);
  if (tty_)
    fmt::print(out_, "\r{}\x1b[K{}", line, final ? "\n" : "");
  else
    fmt::print(out_, "{}\n", line);
  std::fflush(out_);
}

void Progress::finish() {
  if (!enabled_) return;
  draw(true);
  std::lock_guard<std::mutex> g(mu_);
  finished_ = true;
}

struct ProgressHeartbeat::Impl {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread t;
};

ProgressHeartbeat::ProgressHeartbeat(Progress& p) : impl_(std::make_unique<Impl>()) {
  if (!p.enabled()) return;
  impl_->t = std::thread([&p, i = impl_.get()] {
    std::unique_lock<std::mutex> g(i->mu);
    while (!i->cv.wait_for(g, std::chrono::seconds(1), [i] { return i->stop; })) {
      try {
        p.add(0);      // draws when a draw is due
      } catch (...) {  // progress output never ends a run
      }
    }
  });
}

ProgressHeartbeat::~ProgressHeartbeat() {
  if (!impl_->t.joinable()) return;
  {
    std::lock_guard<std::mutex> g(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  impl_->t.join();
}

}  // namespace p2v::engine
