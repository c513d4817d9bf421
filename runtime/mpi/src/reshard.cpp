// Runs reshard programs on MPI (see p2v/runtime/reshard.hpp).
#include "p2v/runtime/mpi/reshard.hpp"

#include <fmt/core.h>
#include <mpi.h>

#include <algorithm>
#include <map>
#include <vector>

#include "p2v/engine/error.hpp"

namespace p2v::runtime {

namespace rs = reshard;

namespace {

using Buf = std::vector<std::int64_t>;
using Shape = std::vector<std::int64_t>;

std::int64_t prod(const Shape& c, std::size_t b, std::size_t e) {
  std::int64_t p = 1;
  for (std::size_t i = b; i < e; ++i) p *= c[i];
  return p;
}

// Chunk `s` of `k` along dimension j of a row-major buffer of shape c (packing for non-leading dims).
void pack(const Buf& in, const Shape& c, std::size_t j, std::int64_t k, std::int64_t s, std::int64_t* out) {
  const std::int64_t outer = prod(c, 0, j), inner = prod(c, j + 1, c.size()), part = c[j] / k;
  for (std::int64_t o = 0; o < outer; ++o)
    out = std::copy_n(in.data() + (o * c[j] + s * part) * inner, part * inner, out);
}

// Concatenates k row-major blocks of shape cp (stored one after another in `in`) along dimension i.
Buf concat(const Buf& in, const Shape& cp, std::size_t i, std::int64_t k) {
  const std::int64_t outer = prod(cp, 0, i), blk = prod(cp, i, cp.size()), sz = prod(cp, 0, cp.size());
  Buf out(static_cast<std::size_t>(sz * k));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t s = 0; s < k; ++s) std::copy_n(in.data() + s * sz + o * blk, blk, out.data() + (o * k + s) * blk);
  return out;
}

struct Comms {
  MPI_Comm world;
  int rank;
  std::map<std::vector<std::vector<std::int64_t>>, MPI_Comm> cache;
  int splits = 0;
  // This rank's communicator for the grouping (rank order = concatenation order).
  MPI_Comm get(const std::vector<std::vector<std::int64_t>>& groups) {
    auto it = cache.find(groups);
    if (it != cache.end()) return it->second;
    int color = MPI_UNDEFINED, key = 0;
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (std::size_t r = 0; r < groups[g].size(); ++r)
        if (groups[g][r] == rank) {
          color = static_cast<int>(g);
          key = static_cast<int>(r);
        }
    MPI_Comm c = MPI_COMM_NULL;
    MPI_Comm_split(world, color, key, &c);
    ++splits;
    return cache[groups] = c;
  }
  ~Comms() {
    for (auto& [g, c] : cache)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
  }
};

}  // namespace

ReshardRun run_reshard(const rs::Plan& plan, const rs::Program& prog, int iterations) {
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (size != plan.mesh.num_devices())
    throw Error(fmt::format("reshard --run: {} MPI ranks but the mesh has {} devices; run with mpirun -np {}", size,
                            plan.mesh.num_devices(), plan.mesh.num_devices()));
  Comms comms{world, rank, {}, 0};
  ReshardRun out;
  std::int64_t peak = 0, tiles = 0;
  std::vector<double> times;
  Buf buf;
  for (int it = 0; it < std::max(1, iterations); ++it) {
    buf = rs::tile_indices(plan.from, plan.mesh, rank);
    Shape c = plan.from.localtype();
    peak = std::max<std::int64_t>(peak, static_cast<std::int64_t>(buf.size()));
    tiles = std::max<std::int64_t>(tiles, static_cast<std::int64_t>(buf.size()));
    MPI_Barrier(world);
    const double t0 = MPI_Wtime();
    for (const auto& s : prog.steps) {
      const Shape cn = s.after.localtype();
      const auto i = static_cast<std::size_t>(s.step.dim);
      switch (s.step.op) {
        case rs::Op::AllGather: {
          MPI_Comm comm = comms.get(s.lowered.groups);
          int k = 1;
          MPI_Comm_size(comm, &k);
          Buf recv(buf.size() * static_cast<std::size_t>(k));
          MPI_Allgather(buf.data(), static_cast<int>(buf.size()), MPI_INT64_T, recv.data(),
                        static_cast<int>(buf.size()), MPI_INT64_T, comm);
          Buf next = concat(recv, c, i, k);
          peak = std::max<std::int64_t>(peak, static_cast<std::int64_t>(buf.size() + recv.size() + next.size()));
          buf = std::move(next);
          break;
        }
        case rs::Op::AllToAll: {
          MPI_Comm comm = comms.get(s.lowered.groups);
          int k = 1;
          MPI_Comm_size(comm, &k);
          const auto j = static_cast<std::size_t>(s.step.dim2);
          const std::int64_t part = static_cast<std::int64_t>(buf.size()) / k;
          Buf send(buf.size()), recv(buf.size());
          for (int r = 0; r < k; ++r) pack(buf, c, j, k, r, send.data() + r * part);
          MPI_Alltoall(send.data(), static_cast<int>(part), MPI_INT64_T, recv.data(), static_cast<int>(part),
                       MPI_INT64_T, comm);
          Shape cp = c;
          cp[j] /= k;
          Buf next = concat(recv, cp, i, k);
          peak = std::max<std::int64_t>(peak, static_cast<std::int64_t>(buf.size() + send.size() + recv.size()));
          buf = std::move(next);
          break;
        }
        case rs::Op::DynSlice: {
          const std::int64_t k = c[i] / cn[i];
          Buf next(buf.size() / static_cast<std::size_t>(k));
          pack(buf, c, i, k, s.lowered.slice[static_cast<std::size_t>(rank)], next.data());
          peak = std::max<std::int64_t>(peak, static_cast<std::int64_t>(buf.size() + next.size()));
          buf = std::move(next);
          break;
        }
        case rs::Op::AllPermute: {
          const auto& src = s.lowered.sources;
          const std::int64_t from = src[static_cast<std::size_t>(rank)];
          if (from == rank) break;  // fixed point: no message
          const auto to = std::find(src.begin(), src.end(), static_cast<std::int64_t>(rank)) - src.begin();
          Buf next(buf.size());
          MPI_Sendrecv(buf.data(), static_cast<int>(buf.size()), MPI_INT64_T, static_cast<int>(to), 0, next.data(),
                       static_cast<int>(next.size()), MPI_INT64_T, static_cast<int>(from), 0, world, MPI_STATUS_IGNORE);
          peak = std::max<std::int64_t>(peak, static_cast<std::int64_t>(buf.size() + next.size()));
          buf = std::move(next);
          break;
        }
      }
      c = cn;
      tiles = std::max<std::int64_t>(tiles, static_cast<std::int64_t>(buf.size()));
    }
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, world);
    times.push_back(tmax);
  }
  const Buf want = rs::tile_indices(plan.to, plan.mesh, rank);
  std::int64_t wrong = 0;
  if (want.size() != buf.size()) {
    wrong = static_cast<std::int64_t>(want.size());
    out.first_wrong = fmt::format("rank {}: holds {} elements, expected {}", rank, buf.size(), want.size());
  } else {
    for (std::size_t e = 0; e < want.size(); ++e)
      if (want[e] != buf[e] && wrong++ == 0)
        out.first_wrong =
            fmt::format("rank {}: local element {} is global element {}, expected {}", rank, e, buf[e], want[e]);
  }
  MPI_Allreduce(&wrong, &out.wrong, 1, MPI_INT64_T, MPI_SUM, world);
  std::int64_t peak_bytes = peak * static_cast<std::int64_t>(sizeof(std::int64_t));
  MPI_Allreduce(&peak_bytes, &out.peak_bytes, 1, MPI_INT64_T, MPI_MAX, world);
  std::int64_t tile_bytes = tiles * static_cast<std::int64_t>(sizeof(std::int64_t));
  MPI_Allreduce(&tile_bytes, &out.peak_tile_bytes, 1, MPI_INT64_T, MPI_MAX, world);
  std::sort(times.begin(), times.end());
  out.time_s = times[times.size() / 2];
  out.splits = comms.splits;
  return out;
}

}  // namespace p2v::runtime
