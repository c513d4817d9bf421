// The threads backend: one process, one thread per device, host buffers; each collective is two
// barriers over the group: members publish where their input is, compute their own result from
// the others' inputs, wait, then write it. Used for the single-process path and its tests.
#include <fmt/core.h>
#include <algorithm>
#include <barrier>
#include <cstring>
#include <map>
#include <mutex>

#include "p2v/engine/dtype.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/runtime/backend.hpp"

namespace p2v::runtime {

const char* to_string(Dtype d) { return d == Dtype::Int32 ? "int32" : "float32"; }

Dtype parse_dtype(const std::string& s) {
  // Every spelling of engine::parse_dtype (i32, int32, int, f32, float32, float, ...).
  const auto d = engine::parse_dtype(s, "--dtype");
  if (d == engine::Dtype::I32) return Dtype::Int32;
  if (d == engine::Dtype::F32) return Dtype::Float32;
  throw Error(fmt::format("--dtype '{}': the run moves i32 (int32) or f32 (float32) elements, not {}", s,
                          engine::dtype_info(d).name));
}

struct GroupSync {
  explicit GroupSync(int g) : bar(g), src(g, nullptr) {}
  std::barrier<> bar;
  std::vector<const std::int32_t*> src;
};

struct ThreadFabric {
  explicit ThreadFabric(int n) : n(n) {}
  int n;
  std::mutex m;
  std::map<std::pair<std::string, std::int64_t>, std::shared_ptr<GroupSync>> groups;
  // The group `group` of the step with key `key`: the same object for all its members.
  std::shared_ptr<GroupSync> get(const std::string& key, std::int64_t group, int size) {
    std::lock_guard<std::mutex> lock(m);
    auto& p = groups[{key, group}];
    if (!p) p = std::make_shared<GroupSync>(size);
    return p;
  }
};

std::shared_ptr<ThreadFabric> make_thread_fabric(int n) { return std::make_shared<ThreadFabric>(n); }

namespace {

class ThreadBackend final : public Backend {
 public:
  ThreadBackend(std::shared_ptr<ThreadFabric> f, int rank, Dtype dt) : f_(std::move(f)), rank_(rank), dt_(dt) {}
  const char* name() const override { return "threads"; }

  int comm(const Membership& m) override {
    auto it = slots_.find(m.key);
    if (it != slots_.end()) return it->second;
    ++splits_;
    int slot = -1;
    if (m.active()) {
      slot = static_cast<int>(syncs_.size());
      members_.push_back(m.member);
      syncs_.push_back(f_->get(m.key, m.group, m.group_size));
    }
    slots_[m.key] = slot;
    return slot;
  }
  int splits() const override { return splits_; }
  void allocate(std::int64_t m, std::int64_t s0, std::int64_t s1, std::int64_t epu) override {
    b_[0].assign(m, 0);
    b_[1].assign(s0, 0);
    b_[2].assign(s1, 0);
    epu_ = epu;
  }
  void upload(const std::vector<std::int32_t>& host) override {
    std::memcpy(b_[0].data(), host.data(), host.size() * 4);
  }
  void download(Space s, std::int64_t off, std::int64_t n, std::int32_t* host) override {
    std::memcpy(host, b_[static_cast<int>(s)].data() + off, n * 4);
  }
  void poke(Space s, std::int64_t off, std::int32_t delta) override {
    std::int32_t* p = b_[static_cast<int>(s)].data() + off;
    *p = add(*p, dt_ == Dtype::Int32 ? delta : bits(static_cast<float>(delta)));
  }
  void copies(const std::vector<Copy>& cs) override {
    for (const auto& c : cs)
      for_each_block(c, [&](std::int64_t s, std::int64_t d) {
        std::memcpy(ptr(Region{c.dst.space, d}), ptr(Region{c.src.space, s}), c.units * epu_ * 4);
      });
  }

  void step(Collective c, const RankStep& rs, int slot) override {
    GroupSync& gs = *syncs_[slot];
    const int m = members_[slot];
    const int g = static_cast<int>(gs.src.size());
    if (!rs.pre.empty()) copies(rs.pre);
    const std::int64_t n = rs.count * epu_;
    std::int32_t* recv = ptr(rs.recv);
    const std::int32_t* mine =
        c == Collective::AllGather && rs.in_place ? recv + m * n : (rs.in_place ? recv : ptr(rs.send));
    gs.src[m] = mine;
    gs.bar.arrive_and_wait();
    tmp_.clear();
    switch (c) {
      case Collective::AllReduce:
      case Collective::Reduce:
        if (c == Collective::AllReduce || m == 0) sum(gs, 0, n);
        break;
      case Collective::ReduceScatter:
        sum(gs, m * n, n);
        break;
      case Collective::AllGather:
        for (int j = 0; j < g; ++j) tmp_.insert(tmp_.end(), gs.src[j], gs.src[j] + n);
        break;
      case Collective::Broadcast:
        if (m != 0) tmp_.assign(gs.src[0], gs.src[0] + n);
        break;
    }
    gs.bar.arrive_and_wait();
    if (!tmp_.empty()) std::memcpy(recv, tmp_.data(), tmp_.size() * 4);
    if (!rs.post.empty()) copies(rs.post);
  }
  void allreduce_main(int slot) override {
    RankStep rs;
    rs.in_place = true;
    rs.send = rs.recv = Region{Space::Main, 0};
    rs.count = static_cast<std::int64_t>(b_[0].size()) / epu_;
    step(Collective::AllReduce, rs, slot);
  }
  void alltoall(Region send, Region recv, std::int64_t count, int slot) override {
    exchange(send, recv, count, slot, [&](const GroupSync& gs, int m, std::int64_t n) {
      for (std::size_t j = 0; j < gs.src.size(); ++j)
        tmp_.insert(tmp_.end(), gs.src[j] + m * n, gs.src[j] + (m + 1) * n);
    });
  }
  void permute(Region send, Region recv, std::int64_t count, int to, int from, int slot) override {
    (void)to;  // the receiver reads from its source: `to` is implied by the others' `from`
    exchange(send, recv, count, slot,
             [&](const GroupSync& gs, int, std::int64_t n) { tmp_.assign(gs.src[from], gs.src[from] + n); });
  }
  void synchronize() override {}

 private:
  static std::int32_t bits(float f) {
    std::int32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  std::int32_t add(std::int32_t a, std::int32_t b) const {
    if (dt_ == Dtype::Int32)
      return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
    float x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    return bits(x + y);
  }
  void sum(const GroupSync& gs, std::int64_t off, std::int64_t n) {
    tmp_.assign(gs.src[0] + off, gs.src[0] + off + n);
    for (std::size_t j = 1; j < gs.src.size(); ++j)
      for (std::int64_t i = 0; i < n; ++i) tmp_[i] = add(tmp_[i], gs.src[j][off + i]);
  }
  // Publish `send`, wait for the group, fill tmp_ from the others' inputs, wait, write `recv`.
  template <class F>
  void exchange(Region send, Region recv, std::int64_t count, int slot, F&& fill) {
    GroupSync& gs = *syncs_[slot];
    const int m = members_[slot];
    gs.src[m] = ptr(send);
    gs.bar.arrive_and_wait();
    tmp_.clear();
    fill(gs, m, count * epu_);
    gs.bar.arrive_and_wait();
    if (!tmp_.empty()) std::memcpy(ptr(recv), tmp_.data(), tmp_.size() * 4);
  }
  std::int32_t* ptr(Region r) { return b_[static_cast<int>(r.space)].data() + r.offset * epu_; }

  std::shared_ptr<ThreadFabric> f_;
  int rank_;
  Dtype dt_;
  int splits_ = 0;
  std::map<std::string, int> slots_;
  std::vector<std::shared_ptr<GroupSync>> syncs_;
  std::vector<int> members_;
  std::vector<std::int32_t> b_[3], tmp_;
  std::int64_t epu_ = 1;
};

}  // namespace

std::unique_ptr<Backend> make_thread_backend(std::shared_ptr<ThreadFabric> fabric, int rank, Dtype dt) {
  return std::make_unique<ThreadBackend>(std::move(fabric), rank, dt);
}

}  // namespace p2v::runtime
