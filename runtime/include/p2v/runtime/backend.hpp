#pragma once
// A backend runs the plan's collectives on its buffers: MPI (host memory) or NCCL (GPU memory).
// Both are driven by the same executor (run.hpp) under MPI, which bootstraps NCCL and gathers
// timings.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "p2v/runtime/plan.hpp"

namespace p2v::runtime {

enum class Dtype { Int32, Float32 };
const char* to_string(Dtype d);
Dtype parse_dtype(const std::string& s);  // "int32" | "float32"; throws p2v::Error
inline constexpr std::size_t kElemSize = 4;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // Collective over the world communicator (every rank calls it with the same argument):
  // makes sure a communicator exists for each of the disjoint `groups` (size >= 2), creating all
  // missing ones with one split; existing ones are reused (the cache).
  virtual void ensure_comms(const Groups& groups) = 0;
  // Number of communicator splits done so far (for tests of the cache).
  virtual int splits() const = 0;
  // This rank's communicator for `group` (a handle for step()), or -1 if it is not a member or
  // the group has no communicator yet.
  virtual int comm_slot(const std::vector<int>& group) const = 0;

  // Buffers (elements): main buffer and the two staging buffers. `elems_per_unit` converts the
  // plan's units into elements.
  virtual void allocate(std::int64_t main_elems, std::int64_t stage0_elems,
                        std::int64_t stage1_elems, std::int64_t elems_per_unit) = 0;
  virtual void upload(const std::vector<std::int32_t>& host) = 0;  // main <- host (bit pattern)
  virtual void download(Space s, std::int64_t offset_elems, std::int64_t n,
                        std::int32_t* host) = 0;
  // Adds `delta` to one element (fault injection for tests).
  virtual void poke(Space s, std::int64_t offset_elems, std::int32_t delta) = 0;

  // Runs this rank's part of a step (copies, the call); returns when the rank's part is issued
  // (synchronize() waits for it). `slot` is comm_slot() of the rank's group in the step.
  virtual void step(Collective c, const RankStep& rs, int slot) = 0;
  virtual void copies(const std::vector<Copy>& cs) = 0;
  // In-place AllReduce of the whole main buffer over `group` (the baseline).
  virtual void allreduce_main(int slot) = 0;
  virtual void synchronize() = 0;
};

std::unique_ptr<Backend> make_mpi_backend(MPI_Comm world, Dtype dt);
// Throws p2v::Error when built without NCCL, or when this rank sees no CUDA device.
std::unique_ptr<Backend> make_nccl_backend(MPI_Comm world, Dtype dt);
bool nccl_compiled();

// One process, one thread per device.
// Host memory, collectives through shared memory between the threads of one fabric (for running
// and testing the single-process path without GPUs).
struct ThreadFabric;
std::shared_ptr<ThreadFabric> make_thread_fabric(int n);
std::unique_ptr<Backend> make_thread_backend(std::shared_ptr<ThreadFabric> fabric, int rank, Dtype dt);
// NCCL over all visible GPUs of this process: thread `rank` of `size` drives GPU `device`; `id`
// comes from nccl_unique_id() (made once, before the threads start).
int cuda_device_count(std::string* why);  // 0 (and why) when no usable GPU
std::string nccl_unique_id();
std::unique_ptr<Backend> make_nccl_backend_local(int rank, int size, int device, const std::string& id, Dtype dt);

}  // namespace p2v::runtime
