#pragma once
// What the executor needs from "the world" besides the collectives themselves: rank, size, a
// barrier, agreement on a flag, and gathering to rank 0. Over MPI (runtime/mpi: one rank per
// process, under mpirun) or over threads (one process, one thread per device: the NCCL
// single-process mode and the host `threads` backend).
#include <memory>
#include <string>
#include <vector>

namespace p2v::runtime {

class Coordinator {
 public:
  virtual ~Coordinator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void barrier() = 0;
  virtual int allreduce_max(int v) = 0;
  virtual int allreduce_min(int v) = 0;
  // On rank 0: every rank's value, in rank order; elsewhere: empty.
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
  virtual std::vector<double> gather(const std::vector<double>& mine) = 0;  // concatenated
  virtual double now() const = 0;                                           // seconds

  // Error agreement (collective): every rank says whether it failed; all get the lowest failing
  // rank, or -1 when none failed. Call it before any step a failed rank could not join, so that
  // no rank waits in a collective alone.
  int agree(bool failed) {
    const int first = allreduce_min(failed ? rank() : size());
    return first == size() ? -1 : first;
  }

  // Agreement on what to run (collective): every rank passes a description of its run (program,
  // options); returns -1 when all are equal, else the lowest rank whose description differs from
  // rank 0's. Rank 0 then gets in `*why` both descriptions, the first differing line first. Call
  // it before the first collective that depends on the run, so that ranks started with different
  // arguments stop together instead of waiting in different collectives.
  int agree_on(const std::string& mine, std::string* why);
  // agree_on, and when a rank differs, rank 0 prints "p2v: error: rank R was started with
  // <what> than rank 0 (<both lines>); give every rank the same arguments<hint>". Returns
  // whether all agreed (collective: every rank gets the same answer).
  bool agree_or_report(const std::string& mine, const std::string& what, const std::string& hint = "");
};

// `n` coordinators sharing one team: give coordinator i to thread i.
std::vector<std::unique_ptr<Coordinator>> make_thread_team(int n);

}  // namespace p2v::runtime
