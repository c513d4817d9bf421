#pragma once
// Worker threads that are always joined: no std::thread is ever destroyed while joinable (which
// would end the process with "terminate called without an active exception").
#include <cstddef>
#include <functional>
#include <string>

namespace p2v::engine {

// Runs fn(w) for w = 0..n-1, each on its own thread (n == 1: in the caller), and returns after
// every thread has been joined. The first exception a worker throws is rethrown here after the
// join (std::bad_alloc stays std::bad_alloc, so the CLI reports it as out of memory); `cancel`,
// if given, is called then so that the other workers can stop early. If a thread cannot be
// started (no memory, a thread limit), `cancel` is called, the started workers are joined and
// p2v::Error "cannot start worker thread k of n: <reason>; <hint>" is thrown (bad_alloc as is).
void run_workers(std::size_t n, const std::function<void(std::size_t)>& fn, const std::function<void()>& cancel = {},
                 const std::string& hint = "try fewer --jobs");

// fn(i) for i = 0..count-1 on min(workers, count) threads (at least one; one runs in the caller),
// each thread taking the next index. After the first exception no index is started any more; it
// is rethrown after the join, as run_workers does (`hint` as there).
void parallel_for(std::size_t count, std::size_t workers, const std::function<void(std::size_t)>& fn,
                  const std::string& hint = "try fewer --jobs");

// How many workers a `--jobs` value asks for: `jobs` itself when positive, else one per hardware
// thread (at least one).
std::size_t worker_count(int jobs);

// The message of a failed thread start, for code that keeps its threads itself.
std::string thread_start_error(std::size_t k, std::size_t n, const std::string& reason, const std::string& hint);

}  // namespace p2v::engine
