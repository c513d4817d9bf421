#include "p2v/engine/workers.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

std::size_t worker_count(int jobs) {
  return jobs > 0 ? static_cast<std::size_t>(jobs) : std::max(1u, std::thread::hardware_concurrency());
}

std::string thread_start_error(std::size_t k, std::size_t n, const std::string& reason, const std::string& hint) {
  return fmt::format("cannot start worker thread {} of {}: {}{}{}", k + 1, n, reason, hint.empty() ? "" : "; ", hint);
}

void run_workers(std::size_t n, const std::function<void(std::size_t)>& fn, const std::function<void()>& cancel,
                 const std::string& hint) {
  std::mutex mu;
  std::exception_ptr first;
  auto record = [&](std::exception_ptr e) {
    bool call = false;
    {
      std::lock_guard<std::mutex> g(mu);
      if (!first) {
        first = std::move(e);
        call = true;
      }
    }
    if (call && cancel) cancel();
  };
  auto body = [&](std::size_t w) {
    try {
      fn(w);
    } catch (...) {
      record(std::current_exception());
    }
  };
  if (n <= 1) {
    if (n == 1) body(0);
  } else {
    std::vector<std::thread> threads;
    try {
      threads.reserve(n);
      for (std::size_t w = 0; w < n; ++w) threads.emplace_back(body, w);
    } catch (const std::system_error& e) {
      record(std::make_exception_ptr(Error(thread_start_error(threads.size(), n, e.code().message(), hint))));
    } catch (...) {
      record(std::current_exception());
    }
    for (auto& t : threads) t.join();
  }
  if (first) std::rethrow_exception(first);
}

void parallel_for(std::size_t count, std::size_t workers, const std::function<void(std::size_t)>& fn,
                  const std::string& hint) {
  if (count == 0) return;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  run_workers(
      std::clamp<std::size_t>(workers, 1, count),
      [&](std::size_t) {
        for (std::size_t i; !stop && (i = next.fetch_add(1)) < count;) fn(i);
      },
      [&] { stop = true; }, hint);
}

}  // namespace p2v::engine
