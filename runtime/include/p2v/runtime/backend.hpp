#pragma once
// A backend runs the plan's collectives on its buffers: threads (host memory, here), MPI (host
// memory) or NCCL (GPU memory), the last two in runtime/mpi (p2v/runtime/mpi/backends.hpp). All
// are driven by the same executor (run.hpp) over a Coordinator.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "p2v/runtime/rank_plan.hpp"

namespace p2v::runtime {

enum class Dtype { Int32, Float32 };
const char* to_string(Dtype d);
Dtype parse_dtype(const std::string& s);  // i32 or f32, any spelling of engine::parse_dtype; throws p2v::Error
inline constexpr std::size_t kElemSize = 4;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // Collective over the world the first time a key is seen (every rank calls it with the same
  // m.key, in the same order): creates the communicators of every group of that step with one
  // split (color m.group, key m.member; ranks with m.group < 0 take part in none); later calls
  // with the key reuse them (the cache). Returns this rank's communicator slot for step(), -1
  // when it is in no group.
  virtual int comm(const Membership& m) = 0;
  // Number of communicator splits done so far (for tests of the cache).
  virtual int splits() const = 0;

  // Buffers (elements): main buffer and the two staging buffers. `elems_per_unit` converts the
  // plan's units into elements.
  virtual void allocate(std::int64_t main_elems, std::int64_t stage0_elems, std::int64_t stage1_elems,
                        std::int64_t elems_per_unit) = 0;
  virtual void upload(const std::vector<std::int32_t>& host) = 0;  // main <- host (bit pattern)
  virtual void download(Space s, std::int64_t offset_elems, std::int64_t n, std::int32_t* host) = 0;
  // Adds `delta` to one element (fault injection for tests).
  virtual void poke(Space s, std::int64_t offset_elems, std::int32_t delta) = 0;

  // Runs this rank's part of a step (copies, the call); returns when the rank's part is issued
  // (synchronize() waits for it). `slot` is comm_slot() of the rank's group in the step.
  virtual void step(Collective c, const RankStep& rs, int slot) = 0;
  virtual void copies(const std::vector<Copy>& cs) = 0;
  // In-place AllReduce of the whole main buffer over `group` (the baseline).
  virtual void allreduce_main(int slot) = 0;
  // Redistribution (reshard/, runtime/reshard.hpp), on the buffers, `count` in units. All-to-all
  // over the group of `slot`: block j (`count` units) of `send` goes to member j, which stores it
  // as block m of `recv` (m: the sender's member index).
  virtual void alltoall(Region send, Region recv, std::int64_t count, int slot) = 0;
  // One permutation over the group of `slot`, called by every member: sends `count` units at
  // `send` to member `to` and receives `count` units into `recv` from member `from` (to == from ==
  // own member: a local copy).
  virtual void permute(Region send, Region recv, std::int64_t count, int to, int from, int slot) = 0;
  virtual void synchronize() = 0;
};

// One process, one thread per device.
// Host memory, collectives through shared memory between the threads of one fabric (for running
// and testing the single-process path without GPUs).
struct ThreadFabric;
std::shared_ptr<ThreadFabric> make_thread_fabric(int n);
std::unique_ptr<Backend> make_thread_backend(std::shared_ptr<ThreadFabric> fabric, int rank, Dtype dt);
}  // namespace p2v::runtime
