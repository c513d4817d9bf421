#pragma once
// Runs a reshard program (docs/model.md §10) on MPI: one rank per mesh device; communicators split per
// step grouping (cached), allgather / alltoall with packing along non-leading dimensions, permutes
// by send/receive skipping fixed points, dynslice locally. Every rank fills its tile of τ1 with the
// global (row-major) element indices and, after the last step, checks every element against τ2.
#include <cstdint>
#include <string>

#include "p2v/reshard/plan.hpp"

namespace p2v::runtime {

struct ReshardRun {
  double time_s = 0.0;               // slowest rank, median over iterations
  std::int64_t peak_bytes = 0;       // largest bytes held at once on any rank, staging buffers included
  std::int64_t peak_tile_bytes = 0;  // the same without staging: the largest tile any rank held
  std::int64_t wrong = 0;            // elements that differ from τ2's tile, summed over ranks
  std::string first_wrong;           // where (on rank 0: the lowest wrong rank's first mismatch)
  int splits = 0;                    // communicator splits made
};

// Collective over MPI_COMM_WORLD (size = mesh devices, else p2v::Error on every rank). Elements
// are int64.
ReshardRun run_reshard(const reshard::Plan& plan, const reshard::Program& prog, int iterations = 3);

}  // namespace p2v::runtime
