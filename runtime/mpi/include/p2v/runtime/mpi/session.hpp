#pragma once
// MPI for the length of a command: initializes MPI unless the caller already did, and finalizes
// it on every exit path only if it initialized it (no <mpi.h> here).
namespace p2v::runtime {

class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  bool own_ = false;
  int rank_ = 0, size_ = 1;
};

}  // namespace p2v::runtime
