// p2v prove at any size: every check on the placement's smallest instance, lifted by the shape
// theorem for placements (docs/shape.md §9); B.2's counts in closed form from the real
// cardinalities; the (d) program lists cross-checked against the engine's shape synthesis (§3).
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <chrono>

#include "p2v/engine/error.hpp"
#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"
#include "prove_detail.hpp"

namespace p2v::proofs {

using engine::HierarchyKind;

ProveMode parse_prove_mode(const std::string& s) {
  if (s == "auto") return ProveMode::Auto;
  if (s == "concrete") return ProveMode::Concrete;
  if (s == "shape") return ProveMode::Shape;
  throw Error(fmt::format("--on '{}': expected auto, concrete or shape", s));
}

const char* to_string(ProveMode m) {
  switch (m) {
    case ProveMode::Auto:
      return "auto";
    case ProveMode::Concrete:
      return "concrete";
    case ProveMode::Shape:
      return "shape";
  }
  return "?";
}

PlacementInstance placement_instance(const engine::System& system, const engine::ParallelismMatrix& x) {
  PlacementInstance in;
  in.real_devices = system.num_devices();
  in.system.name = fmt::format("smallest instance of {}", system.name.empty() ? "the system" : system.name);
  const auto names = system.level_names();
  in.x = x;
  in.axes.assign(x.size(), 1);
  in.devices = 1;
  for (std::size_t j = 0; j < names.size(); ++j) {
    int card = 1;
    for (std::size_t i = 0; i < x.size(); ++i) {
      in.x[i][j] = std::min(x[i][j], 2);
      card *= in.x[i][j];
      in.axes[i] *= in.x[i][j];
    }
    in.system.levels.push_back(engine::Level{names[j], card, std::nullopt});
    in.devices *= card;
  }
  return in;
}

static_assert(kMaxConcreteProveDevices == engine::kMaxStateDevices);

namespace {

// Most factors >= 2 a placement may have for its smallest instance to fit (2^9 = 512).
constexpr int kMaxWideFactors = std::bit_width(static_cast<unsigned>(kMaxConcreteProveDevices)) - 1;
using Clock = std::chrono::steady_clock;

const char* kReliesOn =
    "docs/shape.md §9 (Theorem 2: each check is a statement about the lowered groups and the valid programs of "
    "hierarchies (a)-(d), which correspond by name between a placement and its smallest instance; proved without "
    "Master steps, the Master part checked exhaustively in CI, tests/proofs) and §3 (the (d) program lists); "
    "device numbers in witnesses are the smallest instance's";

// B.2 at the real cardinalities: (s, Parallel(e)) forms prod(c[e+1..s]) -member groups, prod of the
// other levels of them (the classes of docs/model.md §5 counted in mixed radix), for every hierarchy.
Check b2_closed_form(const engine::System& system, const std::vector<int>& reduce, const engine::ParallelismMatrix& x) {
  Check c{"B.2@system",
          "B.2's group sizes and counts at the real cardinalities (closed form, docs/model.md §5 counted)",
          Status::Holds,
          "",
          0,
          "closed form"};
  const auto t0 = Clock::now();
  std::string largest;
  long long groupings = 0, best = 0;
  const auto real_n = system.num_devices();
  for (auto [kind, label] :
       {std::pair{HierarchyKind::System, "a"}, std::pair{HierarchyKind::ColumnBased, "b"},
        std::pair{HierarchyKind::RowBased, "c"}, std::pair{HierarchyKind::ReductionUncollapsed, "d"}}) {
    auto [cards, names] = engine::hierarchy_shape(x, reduce, system.level_names(), kind);
    long long local = 1;
    for (int v : cards) local *= v;
    const long long expect_local = engine::is_reduction_kind(kind) ? local : real_n;
    if (local != expect_local) {
      c.status = Status::Fails;
      c.detail = fmt::format("({}) covers {} devices, expected {}", label, local, expect_local);
      break;
    }
    const int nl = static_cast<int>(cards.size());
    auto prod = [&](int from, int to) {
      long long v = 1;
      for (int l = from; l <= to; ++l) v *= cards[l];
      return v;
    };
    for (int s = 0; s + 1 < nl; ++s)
      for (int e = 0; e < s; ++e) {
        ++groupings;
        const long long size = prod(e + 1, s), count = prod(0, e) * prod(s + 1, nl - 1);
        if (size * count != local) {
          c.status = Status::Fails;
          c.detail = fmt::format("({}) ({},Parallel({})): {} groups of {} do not cover its {} devices", label, names[s],
                                 names[e], count, size, local);
        }
        if (size > best) {
          best = size;
          largest = fmt::format("({}) ({},Parallel({})): {} groups of {}", label, names[s], names[e], count, size);
        }
      }
  }
  if (c.status == Status::Holds)
    c.detail = fmt::format("{} Parallel groupings of (a)-(d) at {} devices; largest groups: {}", groupings, real_n,
                           largest.empty() ? "none" : largest);
  c.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return c;
}

// The instance's (d) program lists against the engine's shape synthesis of the real placement.
Check d_shape_check(const engine::System& system, const std::vector<int>& reduce, const engine::ParallelismMatrix& x,
                    const ProveOptions& opt, const detail::DProgramNames& got) {
  Check c{"shape:d",
          "(d) programs on the smallest instance = engine shape synthesis of the real placement (§3)",
          Status::Holds,
          "",
          0,
          "shape"};
  const auto t0 = Clock::now();
  engine::SynthOptions so;
  so.max_size = opt.max_size;
  so.master = opt.master;
  std::size_t total = 0;
  for (auto [kind, have] : {std::pair{HierarchyKind::ReductionAxes, &got.collapsed},
                            std::pair{HierarchyKind::ReductionUncollapsed, &got.uncollapsed}}) {
    const auto shape = engine::make_shape(system.cardinalities(), system.level_names(), x, reduce, kind);
    const auto r = engine::synthesize_shape(shape, so);
    std::vector<std::string> want;
    for (const auto& prog : r.programs) want.push_back(engine::program_name(r, prog));
    total += want.size();
    if (want != *have) {
      c.status = Status::Fails;
      c.detail = fmt::format("{} ({}): shape synthesis gives {} programs, the instance {}", engine::to_string(kind),
                             shape.signature(), want.size(), have->size());
      for (std::size_t i = 0; i < std::min(want.size(), have->size()); ++i)
        if (want[i] != (*have)[i]) {
          c.detail += fmt::format("; first difference at #{}: {} vs {}", i, want[i], (*have)[i]);
          break;
        }
      break;
    }
  }
  if (c.status == Status::Holds) c.detail = fmt::format("{} programs, same notation and order", total);
  c.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return c;
}

std::string joined(const std::vector<int>& v, const char* sep) { return fmt::format("{}", fmt::join(v, sep)); }

MatrixReport prove_shape(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                         const engine::ParallelismMatrix& x, const ProveOptions& opt, ProveCache* cache) {
  auto in = placement_instance(system, x);
  int wide = 0;
  for (const auto& row : x)
    wide += static_cast<int>(std::count_if(row.begin(), row.end(), [](int v) { return v > 1; }));
  const auto limit = std::min(opt.max_instance_devices, kMaxConcreteProveDevices);
  if (in.devices > limit) {
    const std::string mat = engine::format_matrix(x);
    const bool raisable = in.devices <= kMaxConcreteProveDevices;
    const std::string sys = system.name.find('=') != std::string::npos ? system.name : "SYSTEM";
    throw Error(fmt::format(
        "prove: placement [{}] has {} factors >= 2, so its smallest instance (every factor capped at 2) has {} "
        "devices; "
        "Theorem 3.2 and lemmas B.1-B.8 are checked there by enumerating the lowered programs of (a)-(d), here on at "
        "most {} devices (--max-instance; the engine's limit is {}; at L = 4 a 512-device instance takes about 35 s "
        "and 1 GB) (docs/shape.md §9). {}check the (d) programs alone at any size: p2v synth --system {} "
        "--axes {} "
        "--reduce {} --matrix \"{}\" --certify DIR",
        mat, wide, in.devices, limit, kMaxConcreteProveDevices,
        raisable ? fmt::format("Raise --max-instance to {}, or ", in.devices)
                 : fmt::format("Choose a placement with at most {} factors >= 2, or ", kMaxWideFactors),
        sys, joined(axes, ","), joined(reduce, ","), mat));
  }
  detail::DProgramNames names;
  MatrixReport rep;
  std::string key;
  for (const auto& row : in.x) key += joined(row, " ") + ";";
  key += fmt::format("|{}|{}|{}|{}|{}|{}", joined(reduce, ","), fmt::join(system.level_names(), ","), opt.max_size,
                     static_cast<int>(opt.master), fmt::join(opt.solvers, ","), opt.timeout_ms);
  bool cached = false;
  if (cache) {
    std::lock_guard<std::mutex> g(cache->lock);
    if (cache->reports.count(key)) {
      rep = cache->reports.at(key);
      names.collapsed = cache->d_programs.at(key + "/d-collapsed");
      names.uncollapsed = cache->d_programs.at(key + "/d");
      cached = true;
    }
  }
  if (!cached) {
    rep = detail::prove_concrete(in.system, in.axes, reduce, in.x, opt, &names);
    if (cache) {
      std::lock_guard<std::mutex> g(cache->lock);
      cache->reports[key] = rep;
      cache->d_programs[key + "/d-collapsed"] = names.collapsed;
      cache->d_programs[key + "/d"] = names.uncollapsed;
    }
  }
  rep.matrix = x;
  const std::string where = fmt::format("smallest instance ({} devices)", in.devices);
  for (auto& c : rep.checks) c.where = where;
  rep.checks.push_back(b2_closed_form(system, reduce, x));
  rep.checks.push_back(d_shape_check(system, reduce, x, opt, names));
  rep.shape = ShapeBasis{std::move(in), kReliesOn};
  return rep;
}

}  // namespace

MatrixReport prove(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                   const engine::ParallelismMatrix& x, const ProveOptions& opt, ProveCache* cache) {
  const auto n = system.num_devices();
  const bool shape = opt.mode == ProveMode::Shape || (opt.mode == ProveMode::Auto && n > kMaxConcreteProveDevices);
  if (shape) return prove_shape(system, axes, reduce, x, opt, cache);
  if (n > kMaxConcreteProveDevices)
    throw Error(
        fmt::format("prove --on concrete: the system has {} devices and the lemma checks enumerate the lowered "
                    "programs of (a)-(c) on at most {}; use --on auto or --on shape (the placement's smallest "
                    "instance, docs/shape.md §9)",
                    n, kMaxConcreteProveDevices));
  return detail::prove_concrete(system, axes, reduce, x, opt, nullptr);
}

}  // namespace p2v::proofs
