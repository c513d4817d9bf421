#pragma once
// Runs a reshard program (docs/reshard.md) on MPI through the MPI backend: one rank per mesh
// device, the run itself is p2v/runtime/reshard.hpp's (the same code the threads backend runs);
// here the world's size is checked and the ranks' results are combined.
#include "p2v/reshard/plan.hpp"
#include "p2v/runtime/reshard.hpp"

namespace p2v::runtime {

// Collective over MPI_COMM_WORLD (size = mesh devices, else p2v::Error on every rank) on `b`, this
// rank's backend over the world (MPI or NCCL, made with Dtype::Int32). Elements are int64.
ReshardRun run_reshard(Backend& b, const reshard::Plan& plan, const reshard::Program& prog, int iterations = 3);

}  // namespace p2v::runtime
