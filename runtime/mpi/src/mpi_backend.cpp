// The MPI backend: host buffers, communicators from MPI_Comm_split (one split per batch of new
// groups, cached), MPI_Allreduce / MPI_Reduce_scatter_block / MPI_Allgather / MPI_Reduce /
// MPI_Bcast, and for reshard MPI_Alltoall / MPI_Sendrecv.
#include <fmt/core.h>
#include <climits>
#include <cstring>

#include "p2v/engine/error.hpp"
#include "p2v/runtime/mpi/backends.hpp"
#include "split_cache.hpp"

namespace p2v::runtime {

namespace {

class MpiBackend final : public Backend {
 public:
  MpiBackend(MPI_Comm world, Dtype dt) : world_(world), dt_(dt == Dtype::Int32 ? MPI_INT : MPI_FLOAT) {
    MPI_Comm_rank(world_, &rank_);
  }
  ~MpiBackend() override {
    for (auto& c : cache_.comms()) MPI_Comm_free(&c);
  }
  const char* name() const override { return "mpi"; }

  int comm(const Membership& m) override {
    if (!cache_.known(m)) {
      MPI_Comm c = MPI_COMM_NULL;
      MPI_Comm_split(world_, cache_.color(m, MPI_UNDEFINED), m.member, &c);
      cache_.record(m, c);
    }
    return cache_.slot(m);
  }
  int splits() const override { return cache_.splits(); }

  void allocate(std::int64_t m, std::int64_t s0, std::int64_t s1, std::int64_t epu) override {
    if (m > INT_MAX) throw Error(fmt::format("{} elements per rank exceed MPI's int counts", m));
    main_.assign(m, 0);
    s0_.assign(s0, 0);
    s1_.assign(s1, 0);
    epu_ = epu;
  }
  void upload(const std::vector<std::int32_t>& host) override {
    std::memcpy(main_.data(), host.data(), host.size() * sizeof(std::int32_t));
  }
  void download(Space s, std::int64_t off, std::int64_t n, std::int32_t* host) override {
    std::memcpy(host, base(s) + off, n * sizeof(std::int32_t));
  }
  void poke(Space s, std::int64_t off, std::int32_t delta) override {
    std::int32_t* p = base(s) + off;
    if (dt_ == MPI_INT) {
      *p += delta;
    } else {
      float f;
      std::memcpy(&f, p, 4);
      f += static_cast<float>(delta);
      std::memcpy(p, &f, 4);
    }
  }

  void copies(const std::vector<Copy>& cs) override {
    for (const auto& c : cs)
      for_each_block(c, [&](std::int64_t s, std::int64_t d) {
        std::memcpy(ptr(Region{c.dst.space, d}), ptr(Region{c.src.space, s}),
                    static_cast<std::size_t>(c.units * epu_) * sizeof(std::int32_t));
      });
  }

  void step(Collective c, const RankStep& rs, int slot) override {
    MPI_Comm comm = cache_.comms()[slot];
    if (!rs.pre.empty()) copies(rs.pre);
    const int n = static_cast<int>(rs.count * epu_);
    switch (c) {
      case Collective::AllReduce:
        MPI_Allreduce(MPI_IN_PLACE, ptr(rs.recv), n, dt_, MPI_SUM, comm);
        break;
      case Collective::ReduceScatter:
        MPI_Reduce_scatter_block(ptr(rs.send), ptr(rs.recv), n, dt_, MPI_SUM, comm);
        break;
      case Collective::AllGather:
        if (rs.in_place)
          MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ptr(rs.recv), n, dt_, comm);
        else
          MPI_Allgather(ptr(rs.send), n, dt_, ptr(rs.recv), n, dt_, comm);
        break;
      case Collective::Reduce:
        if (rs.in_place)
          MPI_Reduce(MPI_IN_PLACE, ptr(rs.recv), n, dt_, MPI_SUM, 0, comm);
        else
          MPI_Reduce(ptr(rs.send), nullptr, n, dt_, MPI_SUM, 0, comm);
        break;
      case Collective::Broadcast:
        MPI_Bcast(ptr(rs.send), n, dt_, 0, comm);
        break;
    }
    if (!rs.post.empty()) copies(rs.post);
  }
  void allreduce_main(int slot) override {
    MPI_Allreduce(MPI_IN_PLACE, main_.data(), static_cast<int>(main_.size()), dt_, MPI_SUM, cache_.comms()[slot]);
  }
  void alltoall(Region send, Region recv, std::int64_t count, int slot) override {
    const int n = static_cast<int>(count * epu_);
    MPI_Alltoall(ptr(send), n, dt_, ptr(recv), n, dt_, cache_.comms()[slot]);
  }
  void permute(Region send, Region recv, std::int64_t count, int to, int from, int slot) override {
    MPI_Comm comm = cache_.comms()[slot];
    int me = 0;
    MPI_Comm_rank(comm, &me);
    const int n = static_cast<int>(count * epu_);
    if (to == me && from == me)
      std::memcpy(ptr(recv), ptr(send), static_cast<std::size_t>(n) * sizeof(std::int32_t));
    else
      MPI_Sendrecv(ptr(send), n, dt_, to, 0, ptr(recv), n, dt_, from, 0, comm, MPI_STATUS_IGNORE);
  }
  void synchronize() override {}

 private:
  std::int32_t* base(Space s) {
    switch (s) {
      case Space::Main:
        return main_.data();
      case Space::Stage0:
        return s0_.data();
      case Space::Stage1:
        return s1_.data();
    }
    return nullptr;
  }
  std::int32_t* ptr(Region r) { return base(r.space) + r.offset * epu_; }

  MPI_Comm world_;
  MPI_Datatype dt_;
  int rank_ = 0;
  detail::SplitCache<MPI_Comm> cache_;
  std::vector<std::int32_t> main_, s0_, s1_;
  std::int64_t epu_ = 1;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend(MPI_Comm world, Dtype dt) { return std::make_unique<MpiBackend>(world, dt); }

}  // namespace p2v::runtime
