// The NCCL backend: device buffers, one rank per GPU under mpirun (the unique id is broadcast over
// MPI), communicators from ncclCommSplit (cached), ncclAllReduce / ncclReduceScatter /
// ncclAllGather / ncclReduce / ncclBroadcast, and for reshard ncclSend / ncclRecv in a group, on one stream. Compiled
// when CUDA and NCCL are found (P2V_HAVE_NCCL); without a visible GPU it refuses with a clear message on every rank.
#include <fmt/core.h>
#include <cstring>

#include "p2v/engine/error.hpp"
#include "p2v/runtime/mpi/backends.hpp"
#include "split_cache.hpp"

#ifdef P2V_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace p2v::runtime {

#ifndef P2V_HAVE_NCCL

bool nccl_compiled() { return false; }

namespace {
const char* kNoNccl =
    "this p2v was built without NCCL (CUDA or NCCL not found, or P2V_WITH_NCCL=OFF); use --backend mpi "
    "(or threads), or rebuild with CUDA and NCCL installed";
}

std::unique_ptr<Backend> make_nccl_backend(MPI_Comm, Dtype) { throw Error(kNoNccl); }
int cuda_device_count(std::string* why) {
  if (why) *why = kNoNccl;
  return 0;
}
std::string nccl_unique_id() { throw Error(kNoNccl); }
std::unique_ptr<Backend> make_nccl_backend_local(int, int, int, const std::string&, Dtype) { throw Error(kNoNccl); }

#else

bool nccl_compiled() { return true; }

namespace {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(fmt::format("CUDA {}: {}", what, cudaGetErrorString(e)));
}
void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(fmt::format("NCCL {}: {}", what, ncclGetErrorString(r)));
}

class NcclBackend final : public Backend {
 public:
  NcclBackend(MPI_Comm world, Dtype dt) : world_(world), dt_(dt == Dtype::Int32 ? ncclInt32 : ncclFloat32) {
    MPI_Comm_rank(world_, &rank_);
    MPI_Comm_size(world_, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    int local_rank = 0, local_size = 1;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_size(local, &local_size);
    MPI_Comm_free(&local);
    // Agree on GPU availability before any NCCL call, so that no rank waits for another.
    int ndev = 0;
    const cudaError_t e = cudaGetDeviceCount(&ndev);
    std::string why;
    if (e != cudaSuccess)
      why = fmt::format("cudaGetDeviceCount: {}", cudaGetErrorString(e));
    else if (ndev == 0)
      why = "cudaGetDeviceCount found no CUDA device";
    else if (local_size > ndev)
      why = fmt::format("{} ranks on this node but only {} GPUs (one rank per GPU)", local_size, ndev);
    int ok = why.empty() ? 1 : 0, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, world_);
    if (!all_ok)
      throw Error(ok ? "the NCCL backend needs a CUDA GPU per rank and another rank has none; "
                       "use --backend mpi on machines without GPUs"
                     : fmt::format("the NCCL backend needs a CUDA GPU per rank: {} (rank {}); use "
                                   "--backend mpi on machines without GPUs",
                                   why, rank_));
    ncclUniqueId id;
    if (rank_ == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, world_);
    init(local_rank % ndev, id);
  }
  // One process over all visible GPUs: this thread is rank `rank` of `size` on GPU `device`.
  NcclBackend(int rank, int size, int device, const ncclUniqueId& id, Dtype dt)
      : world_(MPI_COMM_NULL), dt_(dt == Dtype::Int32 ? ncclInt32 : ncclFloat32), rank_(rank), size_(size) {
    init(device, id);
  }
  ~NcclBackend() override {
    if (stream_) cudaStreamSynchronize(stream_);
    for (auto c : cache_.comms()) ncclCommDestroy(c);
    if (world_nccl_) ncclCommDestroy(world_nccl_);
    for (auto* p : {main_, s0_, s1_})
      if (p) cudaFree(p);
    if (stream_) cudaStreamDestroy(stream_);
  }
  const char* name() const override { return "nccl"; }

  void init(int device, const ncclUniqueId& id) {
    device_ = device;
    cuda_check(cudaSetDevice(device), "cudaSetDevice");
    nccl_check(ncclCommInitRank(&world_nccl_, size_, id, rank_), "ncclCommInitRank");
    cuda_check(cudaStreamCreate(&stream_), "cudaStreamCreate");
  }

  int comm(const Membership& m) override {
    if (!cache_.known(m)) {
      ncclComm_t c = nullptr;
      nccl_check(ncclCommSplit(world_nccl_, cache_.color(m, NCCL_SPLIT_NOCOLOR), m.member, &c, nullptr),
                 "ncclCommSplit");
      cache_.record(m, c);
    }
    return cache_.slot(m);
  }
  int splits() const override { return cache_.splits(); }

  void allocate(std::int64_t m, std::int64_t s0, std::int64_t s1, std::int64_t epu) override {
    auto alloc = [](std::int32_t*& p, std::int64_t n) {
      if (p) cudaFree(p);
      p = nullptr;
      if (n > 0) cuda_check(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(std::int32_t)), "cudaMalloc");
    };
    alloc(main_, m);
    alloc(s0_, s0);
    alloc(s1_, s1);
    main_elems_ = m;
    epu_ = epu;
  }
  void upload(const std::vector<std::int32_t>& host) override {
    cuda_check(cudaMemcpy(main_, host.data(), host.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice),
               "cudaMemcpy");
  }
  void download(Space s, std::int64_t off, std::int64_t n, std::int32_t* host) override {
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    cuda_check(cudaMemcpy(host, base(s) + off, n * sizeof(std::int32_t), cudaMemcpyDeviceToHost), "cudaMemcpy");
  }
  void poke(Space s, std::int64_t off, std::int32_t delta) override {
    std::int32_t v;
    download(s, off, 1, &v);
    if (dt_ == ncclInt32) {
      v += delta;
    } else {
      float f;
      std::memcpy(&f, &v, 4);
      f += static_cast<float>(delta);
      std::memcpy(&v, &f, 4);
    }
    cuda_check(cudaMemcpy(base(s) + off, &v, 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  void copies(const std::vector<Copy>& cs) override {
    // A strided copy's innermost repeat is one cudaMemcpy2DAsync (its blocks are disjoint, so
    // both pitches are at least the width); the outer repeats loop on the host.
    const std::size_t unit_bytes = static_cast<std::size_t>(epu_) * sizeof(std::int32_t);
    for (const auto& c : cs) {
      if (c.repeat.empty()) {
        cuda_check(cudaMemcpyAsync(ptr(c.dst), ptr(c.src), c.units * unit_bytes, cudaMemcpyDeviceToDevice, stream_),
                   "cudaMemcpyAsync");
        continue;
      }
      Copy outer = c;
      const Stride inner = outer.repeat.back();
      outer.repeat.pop_back();
      for_each_block(outer, [&](std::int64_t s, std::int64_t d) {
        cuda_check(cudaMemcpy2DAsync(ptr(Region{c.dst.space, d}), inner.dst * unit_bytes, ptr(Region{c.src.space, s}),
                                     inner.src * unit_bytes, c.units * unit_bytes, inner.count,
                                     cudaMemcpyDeviceToDevice, stream_),
                   "cudaMemcpy2DAsync");
      });
    }
  }
  void step(Collective c, const RankStep& rs, int slot) override {
    ncclComm_t comm = cache_.comms()[slot];
    if (!rs.pre.empty()) copies(rs.pre);
    const std::size_t n = static_cast<std::size_t>(rs.count * epu_);
    switch (c) {
      case Collective::AllReduce:
        nccl_check(ncclAllReduce(ptr(rs.recv), ptr(rs.recv), n, dt_, ncclSum, comm, stream_), "ncclAllReduce");
        break;
      case Collective::ReduceScatter:
        nccl_check(ncclReduceScatter(ptr(rs.send), ptr(rs.recv), n, dt_, ncclSum, comm, stream_), "ncclReduceScatter");
        break;
      case Collective::AllGather: {
        const void* send = rs.in_place ? static_cast<const void*>(ptr(rs.recv) + rs.member * n) : ptr(rs.send);
        nccl_check(ncclAllGather(send, ptr(rs.recv), n, dt_, comm, stream_), "ncclAllGather");
        break;
      }
      case Collective::Reduce:
        nccl_check(ncclReduce(ptr(rs.send), ptr(rs.in_place ? rs.recv : rs.send), n, dt_, ncclSum, 0, comm, stream_),
                   "ncclReduce");
        break;
      case Collective::Broadcast:
        nccl_check(ncclBroadcast(ptr(rs.send), ptr(rs.send), n, dt_, 0, comm, stream_), "ncclBroadcast");
        break;
    }
    if (!rs.post.empty()) copies(rs.post);
  }
  void allreduce_main(int slot) override {
    nccl_check(ncclAllReduce(main_, main_, main_elems_, dt_, ncclSum, cache_.comms()[slot], stream_), "ncclAllReduce");
  }
  void alltoall(Region send, Region recv, std::int64_t count, int slot) override {
    ncclComm_t comm = cache_.comms()[slot];
    int k = 0;
    nccl_check(ncclCommCount(comm, &k), "ncclCommCount");
    const std::int64_t n = count * epu_;
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int j = 0; j < k; ++j) {
      nccl_check(ncclSend(ptr(send) + j * n, n, dt_, j, comm, stream_), "ncclSend");
      nccl_check(ncclRecv(ptr(recv) + j * n, n, dt_, j, comm, stream_), "ncclRecv");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  }
  void permute(Region send, Region recv, std::int64_t count, int to, int from, int slot) override {
    ncclComm_t comm = cache_.comms()[slot];
    int me = 0;
    nccl_check(ncclCommUserRank(comm, &me), "ncclCommUserRank");
    const std::int64_t n = count * epu_;
    if (to == me && from == me) {
      cuda_check(cudaMemcpyAsync(ptr(recv), ptr(send), n * sizeof(std::int32_t), cudaMemcpyDeviceToDevice, stream_),
                 "cudaMemcpyAsync");
      return;
    }
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    nccl_check(ncclSend(ptr(send), n, dt_, to, comm, stream_), "ncclSend");
    nccl_check(ncclRecv(ptr(recv), n, dt_, from, comm, stream_), "ncclRecv");
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  }
  void synchronize() override { cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

 private:
  std::int32_t* base(Space s) {
    switch (s) {
      case Space::Main:
        return main_;
      case Space::Stage0:
        return s0_;
      case Space::Stage1:
        return s1_;
    }
    return nullptr;
  }
  std::int32_t* ptr(Region r) { return base(r.space) + r.offset * epu_; }

  MPI_Comm world_;
  ncclDataType_t dt_;
  int rank_ = 0, size_ = 1, device_ = 0;
  ncclComm_t world_nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  detail::SplitCache<ncclComm_t> cache_;
  std::int32_t *main_ = nullptr, *s0_ = nullptr, *s1_ = nullptr;
  std::int64_t main_elems_ = 0, epu_ = 1;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(MPI_Comm world, Dtype dt) {
  return std::make_unique<NcclBackend>(world, dt);
}

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = fmt::format("cudaGetDeviceCount: {}", cudaGetErrorString(e));
    return 0;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount found no CUDA device";
  return n;
}

std::string nccl_unique_id() {
  ncclUniqueId id;
  nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  return std::string(reinterpret_cast<const char*>(&id), sizeof(id));
}

std::unique_ptr<Backend> make_nccl_backend_local(int rank, int size, int device, const std::string& id, Dtype dt) {
  if (id.size() != sizeof(ncclUniqueId)) throw Error("internal: bad NCCL unique id");
  ncclUniqueId u;
  std::memcpy(&u, id.data(), sizeof(u));
  return std::make_unique<NcclBackend>(rank, size, device, u, dt);
}

#endif

}  // namespace p2v::runtime
