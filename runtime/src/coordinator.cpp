#include "p2v/runtime/coordinator.hpp"

#include <fmt/core.h>

#include <barrier>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace p2v::runtime {

namespace {
// FNV-1a, 64 bits: a run description's fingerprint (agreement, not security).
std::uint64_t fingerprint(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
}  // namespace

int Coordinator::agree_on(const std::string& mine, std::string* why) {
  // Equal everywhere iff the minimum and the maximum of both halves agree: O(1) per rank, whatever
  // the descriptions' length and the number of ranks.
  const std::uint64_t h = fingerprint(mine);
  const int hi = static_cast<int>(static_cast<std::int32_t>(h >> 32));
  const int lo = static_cast<int>(static_cast<std::int32_t>(h & 0xffffffffu));
  if (allreduce_min(hi) == allreduce_max(hi) && allreduce_min(lo) == allreduce_max(lo)) return -1;
  // They differ (an error path): rank 0 finds the lowest rank whose fingerprint differs from its own
  // (16 bytes per rank), then fetches only that rank's description.
  const std::vector<double> halves =
      gather(std::vector<double>{static_cast<double>(h >> 32), static_cast<double>(h & 0xffffffffu)});
  int differs = size();
  if (rank() == 0)
    for (int r = 1; r < size(); ++r)
      if (halves[2 * r] != halves[0] || halves[2 * r + 1] != halves[1]) {
        differs = r;
        break;
      }
  const int first = allreduce_min(differs);
  const std::vector<std::string> theirs = gather(rank() == first ? mine : std::string());
  if (first == size()) return -1;  // not reached: min != max means some rank differs from rank 0
  if (why != nullptr && rank() == 0) {
    auto lines = [](const std::string& s) {
      std::vector<std::string> v;
      std::size_t b = 0;
      for (std::size_t e; (e = s.find('\n', b)) != std::string::npos; b = e + 1) v.push_back(s.substr(b, e - b));
      if (b < s.size()) v.push_back(s.substr(b));
      return v;
    };
    const auto a = lines(mine), b = lines(theirs[static_cast<std::size_t>(first)]);
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    *why = "rank 0: " + (i < a.size() ? a[i] : std::string("(nothing)")) + "; rank " + std::to_string(first) + ": " +
           (i < b.size() ? b[i] : std::string("(nothing)"));
  }
  return first;
}

bool Coordinator::agree_or_report(const std::string& mine, const std::string& what, const std::string& hint) {
  std::string why;
  const int r = agree_on(mine, &why);
  if (r < 0) return true;
  if (rank() == 0)
    fmt::print(stderr,
               "p2v: error: rank {} was started with {} than rank 0 ({}); give every rank the same arguments{}\n", r,
               what, why, hint);
  return false;
}

namespace {

struct Team {
  explicit Team(int n) : n(n), bar(n), ints(n), strs(n), dbls(n) {}
  int n;
  std::barrier<> bar;
  std::vector<int> ints;
  std::vector<std::string> strs;
  std::vector<std::vector<double>> dbls;
};

class ThreadCoordinator final : public Coordinator {
 public:
  ThreadCoordinator(std::shared_ptr<Team> t, int r) : t_(std::move(t)), rank_(r) {}
  int rank() const override { return rank_; }
  int size() const override { return t_->n; }
  void barrier() override { t_->bar.arrive_and_wait(); }
  int allreduce_max(int v) override { return reduce(v, true); }
  int allreduce_min(int v) override { return reduce(v, false); }
  std::vector<std::string> gather(const std::string& mine) override {
    t_->strs[rank_] = mine;
    barrier();
    std::vector<std::string> out;
    if (rank_ == 0) out = t_->strs;
    barrier();
    return out;
  }
  std::vector<double> gather(const std::vector<double>& mine) override {
    t_->dbls[rank_] = mine;
    barrier();
    std::vector<double> out;
    if (rank_ == 0)
      for (const auto& v : t_->dbls) out.insert(out.end(), v.begin(), v.end());
    barrier();
    return out;
  }
  double now() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

 private:
  int reduce(int v, bool mx) {
    t_->ints[rank_] = v;
    barrier();
    int r = t_->ints[0];
    for (int x : t_->ints) r = mx ? std::max(r, x) : std::min(r, x);
    barrier();
    return r;
  }
  std::shared_ptr<Team> t_;
  int rank_;
};

}  // namespace

std::vector<std::unique_ptr<Coordinator>> make_thread_team(int n) {
  auto t = std::make_shared<Team>(n);
  std::vector<std::unique_ptr<Coordinator>> v;
  for (int i = 0; i < n; ++i) v.push_back(std::make_unique<ThreadCoordinator>(t, i));
  return v;
}

}  // namespace p2v::runtime
