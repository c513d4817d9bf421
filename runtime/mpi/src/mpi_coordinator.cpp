// The coordinator over an MPI communicator (one rank per process, under mpirun).
#include "p2v/runtime/mpi/backends.hpp"

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

}  // namespace

std::unique_ptr<Coordinator> make_mpi_coordinator(MPI_Comm world) { return std::make_unique<MpiCoordinator>(world); }

}  // namespace p2v::runtime
