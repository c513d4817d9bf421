#include "p2v/runtime/coordinator.hpp"

#include <barrier>
#include <chrono>
#include <mutex>

namespace p2v::runtime {

namespace {

class MpiCoordinator final : public Coordinator {
 public:
  explicit MpiCoordinator(MPI_Comm w) : w_(w) {
    MPI_Comm_rank(w_, &rank_);
    MPI_Comm_size(w_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override { MPI_Barrier(w_); }
  int allreduce_max(int v) override {
    int r = 0;
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_MAX, w_);
    return r;
  }
  int allreduce_min(int v) override {
    int r = 0;
    MPI_Allreduce(&v, &r, 1, MPI_INT, MPI_MIN, w_);
    return r;
  }
  std::vector<std::string> gather(const std::string& mine) override {
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(size_), displs(size_);
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, w_);
    std::string all;
    if (rank_ == 0) {
      int off = 0;
      for (int i = 0; i < size_; ++i) {
        displs[i] = off;
        off += lens[i];
      }
      all.resize(off);
    }
    MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, w_);
    std::vector<std::string> out;
    if (rank_ == 0)
      for (int i = 0; i < size_; ++i) out.push_back(all.substr(displs[i], lens[i]));
    return out;
  }
  std::vector<double> gather(const std::vector<double>& mine) override {
    std::vector<double> all(rank_ == 0 ? mine.size() * size_ : 0);
    MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), static_cast<int>(mine.size()),
               MPI_DOUBLE, 0, w_);
    return all;
  }
  double now() const override { return MPI_Wtime(); }

 private:
  MPI_Comm w_;
  int rank_ = 0, size_ = 1;
};

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

std::unique_ptr<Coordinator> make_mpi_coordinator(MPI_Comm world) { return std::make_unique<MpiCoordinator>(world); }

std::vector<std::unique_ptr<Coordinator>> make_thread_team(int n) {
  auto t = std::make_shared<Team>(n);
  std::vector<std::unique_ptr<Coordinator>> v;
  for (int i = 0; i < n; ++i) v.push_back(std::make_unique<ThreadCoordinator>(t, i));
  return v;
}

}  // namespace p2v::runtime
