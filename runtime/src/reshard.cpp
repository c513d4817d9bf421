// Runs reshard programs on a Backend (see p2v/runtime/reshard.hpp).
#include "p2v/runtime/reshard.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

#include "p2v/engine/error.hpp"

namespace p2v::runtime {

namespace rs = reshard;

namespace {

using Shape = std::vector<std::int64_t>;
constexpr std::int64_t kUnitInts = 2;  // one int64 element = two int32 units of the backend

std::int64_t prod(const Shape& c, std::size_t b, std::size_t e) {
  std::int64_t p = 1;
  for (std::size_t i = b; i < e; ++i) p *= c[i];
  return p;
}

Region at(Space s, std::int64_t off = 0) { return Region{s, off}; }

// Chunks `first`..`first+n-1` of `k` along dimension j of a row-major tile of shape c at `src`,
// packed one after another (chunk r at dst + (r-first)·size/k).
Copy pack(const Shape& c, std::size_t j, std::int64_t k, std::int64_t first, std::int64_t n, Region src, Region dst) {
  const std::int64_t outer = prod(c, 0, j), inner = prod(c, j + 1, c.size()), part = c[j] / k;
  Copy cp{Region{src.space, src.offset + first * part * inner}, dst, part * inner, {}};
  cp.repeat = {Stride{n, part * inner, outer * part * inner}, Stride{outer, c[j] * inner, part * inner}};
  return cp;
}

// Concatenates k row-major blocks of shape cp (one after another at src) along dimension i.
Copy concat(const Shape& cp, std::size_t i, std::int64_t k, Region src, Region dst) {
  const std::int64_t outer = prod(cp, 0, i), blk = prod(cp, i, cp.size()), sz = prod(cp, 0, cp.size());
  Copy c{src, dst, blk, {}};
  c.repeat = {Stride{outer, blk, k * blk}, Stride{k, sz, blk}};
  return c;
}

// Where `rank` is in a step's device groups (the key names the grouping: equal groupings share
// their communicators through the backend's split cache).
Membership member_of(const std::vector<std::vector<std::int64_t>>& groups, int rank) {
  Membership m;
  m.key = "reshard";
  for (const auto& g : groups) {
    m.key += ';';
    for (auto d : g) m.key += fmt::format("{},", d);
  }
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t r = 0; r < groups[g].size(); ++r)
      if (groups[g][r] == rank) {
        m.group = static_cast<std::int64_t>(g);
        m.member = static_cast<int>(r);
        m.group_size = static_cast<int>(groups[g].size());
      }
  return m;
}

}  // namespace

ReshardRankRun run_reshard_rank(Backend& b, const rs::Plan& plan, const rs::Program& prog, int rank, int iterations,
                                const std::function<void()>& barrier) {
  const auto n = static_cast<int>(plan.mesh.num_devices());
  ReshardRankRun out;
  // Buffer sizes (elements): Main holds the tile, Stage0 a gathered, packed or received tile,
  // Stage1 an alltoall's receive side.
  std::int64_t main = plan.from.localsize(), s0 = 0, s1 = 0;
  {
    std::int64_t size = plan.from.localsize();
    for (const auto& s : prog.steps) {
      const std::int64_t next = s.after.localsize();
      main = std::max(main, next);
      s0 = std::max({s0, size, next});
      if (s.step.op == rs::Op::AllToAll) s1 = std::max(s1, size);
      size = next;
    }
  }
  b.allocate(main * kUnitInts, s0 * kUnitInts, s1 * kUnitInts, kUnitInts);
  Membership world;
  world.key = "reshard;world";
  world.group = 0;
  world.member = rank;
  world.group_size = n;
  std::vector<std::int64_t> buf;
  for (int it = 0; it < std::max(1, iterations); ++it) {
    buf = rs::tile_indices(plan.from, plan.mesh, rank);
    std::vector<std::int32_t> host(buf.size() * kUnitInts);
    std::memcpy(host.data(), buf.data(), buf.size() * sizeof(std::int64_t));
    b.upload(host);
    Shape c = plan.from.localtype();
    std::int64_t size = plan.from.localsize();
    out.peak_elems = std::max(out.peak_elems, size);
    out.tile_elems = std::max(out.tile_elems, size);
    barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& s : prog.steps) {
      const Shape cn = s.after.localtype();
      const std::int64_t next = s.after.localsize();
      const auto i = static_cast<std::size_t>(s.step.dim);
      switch (s.step.op) {
        case rs::Op::AllGather: {
          const int slot = b.comm(member_of(s.lowered.groups, rank));
          const std::int64_t k = next / size;
          RankStep st;
          st.send = at(Space::Main);
          st.recv = at(Space::Stage0);
          st.count = size;
          st.group_size = static_cast<int>(k);
          b.step(Collective::AllGather, st, slot);
          b.copies({concat(c, i, k, at(Space::Stage0), at(Space::Main))});
          out.peak_elems = std::max(out.peak_elems, size + 2 * next);
          break;
        }
        case rs::Op::AllToAll: {
          const Membership m = member_of(s.lowered.groups, rank);
          const int slot = b.comm(m);
          const std::int64_t k = m.group_size;
          const auto j = static_cast<std::size_t>(s.step.dim2);
          b.copies({pack(c, j, k, 0, k, at(Space::Main), at(Space::Stage0))});
          b.alltoall(at(Space::Stage0), at(Space::Stage1), size / k, slot);
          Shape cp = c;
          cp[j] /= k;
          b.copies({concat(cp, i, k, at(Space::Stage1), at(Space::Main))});
          out.peak_elems = std::max(out.peak_elems, 3 * size);
          break;
        }
        case rs::Op::DynSlice: {
          const std::int64_t k = c[i] / cn[i];
          b.copies(
              {pack(c, i, k, s.lowered.slice[static_cast<std::size_t>(rank)], 1, at(Space::Main), at(Space::Stage0))});
          b.copies({Copy{at(Space::Stage0), at(Space::Main), next, {}}});
          out.peak_elems = std::max(out.peak_elems, size + next);
          break;
        }
        case rs::Op::AllPermute: {
          const auto& src = s.lowered.sources;
          const std::int64_t from = src[static_cast<std::size_t>(rank)];
          const auto to = std::find(src.begin(), src.end(), static_cast<std::int64_t>(rank)) - src.begin();
          const int slot = n >= 2 ? b.comm(world) : -1;
          if (slot >= 0) {
            b.permute(at(Space::Main), at(Space::Stage0), size, static_cast<int>(to), static_cast<int>(from), slot);
            b.copies({Copy{at(Space::Stage0), at(Space::Main), size, {}}});
          }
          if (from != rank) out.peak_elems = std::max(out.peak_elems, 2 * size);
          break;
        }
      }
      c = cn;
      size = next;
      out.tile_elems = std::max(out.tile_elems, size);
    }
    b.synchronize();
    out.times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const std::vector<std::int64_t> want = rs::tile_indices(plan.to, plan.mesh, rank);
  const std::int64_t held = prog.steps.empty() ? plan.from.localsize() : prog.steps.back().after.localsize();
  if (static_cast<std::int64_t>(want.size()) != held) {
    out.wrong = static_cast<std::int64_t>(want.size());
    out.first_wrong = fmt::format("rank {}: holds {} elements, expected {}", rank, held, want.size());
  } else {
    std::vector<std::int32_t> host(want.size() * kUnitInts);
    b.download(Space::Main, 0, static_cast<std::int64_t>(host.size()), host.data());
    buf.assign(want.size(), 0);
    std::memcpy(buf.data(), host.data(), host.size() * sizeof(std::int32_t));
    for (std::size_t e = 0; e < want.size(); ++e)
      if (want[e] != buf[e] && out.wrong++ == 0)
        out.first_wrong =
            fmt::format("rank {}: local element {} is global element {}, expected {}", rank, e, buf[e], want[e]);
  }
  out.splits = b.splits();
  return out;
}

ReshardRun run_reshard_threads(const rs::Plan& plan, const rs::Program& prog, int iterations,
                               const BackendFactory& make) {
  const auto n = static_cast<int>(plan.mesh.num_devices());
  auto fabric = make_thread_fabric(n);
  std::barrier<> sync(n);
  std::vector<ReshardRankRun> runs(static_cast<std::size_t>(n));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        try {
          auto b = make ? make(r) : make_thread_backend(fabric, r, Dtype::Int32);
          runs[static_cast<std::size_t>(r)] =
              run_reshard_rank(*b, plan, prog, r, iterations, [&] { sync.arrive_and_wait(); });
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
        }
      });
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  ReshardRun out;
  std::vector<double> tmax(runs[0].times.size(), 0.0);
  for (const auto& r : runs) {
    for (std::size_t i = 0; i < tmax.size(); ++i) tmax[i] = std::max(tmax[i], r.times[i]);
    out.peak_bytes = std::max<std::int64_t>(out.peak_bytes, r.peak_elems * 8);
    out.peak_tile_bytes = std::max<std::int64_t>(out.peak_tile_bytes, r.tile_elems * 8);
    if (r.wrong > 0 && out.first_wrong.empty()) out.first_wrong = r.first_wrong;
    out.wrong += r.wrong;
  }
  std::sort(tmax.begin(), tmax.end());
  out.time_s = tmax[tmax.size() / 2];
  out.splits = runs[0].splits;
  return out;
}

}  // namespace p2v::runtime
