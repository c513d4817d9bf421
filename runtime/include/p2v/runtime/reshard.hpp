#pragma once
// Runs a reshard program (docs/reshard.md) on any Backend (threads, MPI, NCCL): one rank per mesh
// device; each step's device groups get their communicators through Backend::comm() (the shared
// split cache, one split per grouping), allgather through Backend::step(), alltoall and the
// allpermute through Backend::alltoall() / permute() (the permute over the world group),
// packing along non-leading dimensions and dynslice as strided copies on the backend's buffers.
// Every rank fills its tile of τ1 with the global (row-major) element indices (int64, two units
// of int32 each) and, after the last step, checks every element against τ2.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "p2v/reshard/plan.hpp"
#include "p2v/runtime/backend.hpp"

namespace p2v::runtime {

struct ReshardRun {
  double time_s = 0.0;               // slowest rank, median over iterations
  std::int64_t peak_bytes = 0;       // largest bytes held at once on any rank, staging buffers included
  std::int64_t peak_tile_bytes = 0;  // the same without staging: the largest tile any rank held
  std::int64_t wrong = 0;            // elements that differ from τ2's tile, summed over ranks
  std::string first_wrong;           // where (MPI: this rank's first mismatch; threads: the lowest wrong rank's)
  int splits = 0;                    // communicator splits made (one rank's count; every rank makes the same)
};

// One rank's part of a run, before combining over ranks.
struct ReshardRankRun {
  std::vector<double> times;  // seconds per iteration, this rank
  std::int64_t peak_elems = 0, tile_elems = 0, wrong = 0;
  std::string first_wrong;
  int splits = 0;
};

// Rank `rank` of the mesh's devices runs `prog` on `b` (`iterations` times, at least once);
// `barrier` synchronises all ranks before each timed iteration. Every rank must call it.
ReshardRankRun run_reshard_rank(Backend& b, const reshard::Plan& plan, const reshard::Program& prog, int rank,
                                int iterations, const std::function<void()>& barrier);

// One process, one thread per mesh device; results combined as on MPI. `make(rank)` gives each
// thread its backend (called on that thread); empty: the threads backend over shared memory.
using BackendFactory = std::function<std::unique_ptr<Backend>(int rank)>;
ReshardRun run_reshard_threads(const reshard::Plan& plan, const reshard::Program& prog, int iterations = 3,
                               const BackendFactory& make = {});

}  // namespace p2v::runtime
