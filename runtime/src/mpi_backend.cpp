// The MPI backend: host buffers, communicators from MPI_Comm_split (one split per batch of new
// groups, cached), MPI_Allreduce / MPI_Reduce_scatter_block / MPI_Allgather / MPI_Reduce /
// MPI_Bcast.
#include <climits>
#include <cstring>
#include <fmt/core.h>
#include <map>
#include <set>

#include "p2v/engine/error.hpp"
#include "p2v/runtime/backend.hpp"

namespace p2v::runtime {

const char* to_string(Dtype d) { return d == Dtype::Int32 ? "int32" : "float32"; }

Dtype parse_dtype(const std::string& s) {
  if (s == "int32") return Dtype::Int32;
  if (s == "float32") return Dtype::Float32;
  throw Error("--dtype '" + s + "': use int32 or float32");
}

namespace {

class MpiBackend final : public Backend {
 public:
  MpiBackend(MPI_Comm world, Dtype dt) : world_(world), dt_(dt == Dtype::Int32 ? MPI_INT : MPI_FLOAT) {
    MPI_Comm_rank(world_, &rank_);
  }
  ~MpiBackend() override {
    for (auto& c : comms_) MPI_Comm_free(&c);
  }
  const char* name() const override { return "mpi"; }

  void ensure_comms(const Groups& groups) override {
    Groups fresh;
    for (const auto& g : groups)
      if (g.size() >= 2 && !created_.count(g)) fresh.push_back(g);
    if (fresh.empty()) return;  // every rank knows every group: all agree, no call
    int color = MPI_UNDEFINED;
    for (std::size_t i = 0; i < fresh.size(); ++i)
      for (int d : fresh[i])
        if (d == rank_) color = static_cast<int>(i);
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_split(world_, color, rank_, &c);
    ++splits_;
    for (const auto& g : fresh) created_.insert(g);
    if (color != MPI_UNDEFINED) {
      slots_[fresh[color]] = static_cast<int>(comms_.size());
      comms_.push_back(c);
    }
  }
  int splits() const override { return splits_; }
  int comm_slot(const std::vector<int>& group) const override {
    auto it = slots_.find(group);
    return it == slots_.end() ? -1 : it->second;
  }

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
      std::memcpy(ptr(c.dst), ptr(c.src), static_cast<std::size_t>(c.units * epu_) * sizeof(std::int32_t));
  }

  void step(Collective c, const RankStep& rs, int slot) override {
    MPI_Comm comm = comms_[slot];
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
        if (rs.in_place) MPI_Reduce(MPI_IN_PLACE, ptr(rs.recv), n, dt_, MPI_SUM, 0, comm);
        else MPI_Reduce(ptr(rs.send), nullptr, n, dt_, MPI_SUM, 0, comm);
        break;
      case Collective::Broadcast:
        MPI_Bcast(ptr(rs.send), n, dt_, 0, comm);
        break;
    }
    if (!rs.post.empty()) copies(rs.post);
  }
  void allreduce_main(int slot) override {
    MPI_Allreduce(MPI_IN_PLACE, main_.data(), static_cast<int>(main_.size()), dt_, MPI_SUM, comms_[slot]);
  }
  void synchronize() override {}

 private:
  std::int32_t* base(Space s) {
    switch (s) {
      case Space::Main: return main_.data();
      case Space::Stage0: return s0_.data();
      case Space::Stage1: return s1_.data();
    }
    return nullptr;
  }
  std::int32_t* ptr(Region r) { return base(r.space) + r.offset * epu_; }

  MPI_Comm world_;
  MPI_Datatype dt_;
  int rank_ = 0, splits_ = 0;
  std::set<std::vector<int>> created_;
  std::map<std::vector<int>, int> slots_;
  std::vector<MPI_Comm> comms_;
  std::vector<std::int32_t> main_, s0_, s1_;
  std::int64_t epu_ = 1;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend(MPI_Comm world, Dtype dt) {
  return std::make_unique<MpiBackend>(world, dt);
}

}  // namespace p2v::runtime
