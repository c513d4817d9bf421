// Runs reshard programs under MPI (see p2v/runtime/mpi/reshard.hpp): the MPI or NCCL backend and the
// shared runner (runtime/src/reshard.cpp); the ranks' results are combined here.
#include "p2v/runtime/mpi/reshard.hpp"

#include <fmt/core.h>
#include <mpi.h>

#include <algorithm>
#include <vector>

#include "p2v/engine/error.hpp"
#include "p2v/runtime/mpi/backends.hpp"

namespace p2v::runtime {

ReshardRun run_reshard(Backend& b, const reshard::Plan& plan, const reshard::Program& prog, int iterations) {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (size != plan.mesh.num_devices())
    throw Error(fmt::format("reshard --run: {} MPI ranks but the mesh has {} devices; run with mpirun -np {}", size,
                            plan.mesh.num_devices(), plan.mesh.num_devices()));
  const ReshardRankRun r = run_reshard_rank(b, plan, prog, rank, iterations, [world] { MPI_Barrier(world); });
  ReshardRun out;
  std::vector<double> tmax(r.times.size(), 0.0);
  MPI_Allreduce(r.times.data(), tmax.data(), static_cast<int>(r.times.size()), MPI_DOUBLE, MPI_MAX, world);
  std::sort(tmax.begin(), tmax.end());
  out.time_s = tmax[tmax.size() / 2];
  MPI_Allreduce(&r.wrong, &out.wrong, 1, MPI_INT64_T, MPI_SUM, world);
  out.first_wrong = r.first_wrong;
  const std::int64_t peak = r.peak_elems * 8, tile = r.tile_elems * 8;
  MPI_Allreduce(&peak, &out.peak_bytes, 1, MPI_INT64_T, MPI_MAX, world);
  MPI_Allreduce(&tile, &out.peak_tile_bytes, 1, MPI_INT64_T, MPI_MAX, world);
  out.splits = r.splits;
  return out;
}

}  // namespace p2v::runtime
