#pragma once
// The MPI part of the runtime (target p2v_runtime_mpi): the MPI and NCCL backends and the MPI
// coordinator. The only runtime headers that include <mpi.h> are under p2v/runtime/mpi/.
#include <memory>
#include <string>

#include <mpi.h>

#include "p2v/runtime/backend.hpp"
#include "p2v/runtime/coordinator.hpp"

namespace p2v::runtime {

std::unique_ptr<Coordinator> make_mpi_coordinator(MPI_Comm world);

std::unique_ptr<Backend> make_mpi_backend(MPI_Comm world, Dtype dt);
// Throws p2v::Error when built without NCCL, or when this rank sees no CUDA device.
std::unique_ptr<Backend> make_nccl_backend(MPI_Comm world, Dtype dt);
bool nccl_compiled();

// NCCL over all visible GPUs of this process: thread `rank` of `size` drives GPU `device`; `id`
// comes from nccl_unique_id() (made once, before the threads start).
int cuda_device_count(std::string* why);  // 0 (and why) when no usable GPU
std::string nccl_unique_id();
std::unique_ptr<Backend> make_nccl_backend_local(int rank, int size, int device, const std::string& id, Dtype dt);

}  // namespace p2v::runtime
