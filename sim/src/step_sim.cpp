// The event simulation of one training step and the bucket/program choice (docs/step.md).
#include <fmt/core.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "p2v/engine/error.hpp"
#include "p2v/sim/step.hpp"

namespace p2v::sim::step {

using namespace engine;

SyncCosts::SyncCosts(const sim::Simulator& sim, std::vector<LoweredProgram> programs, sim::Algorithm algo, bool zero)
    : sim_(sim), programs_(std::move(programs)), algo_(algo), zero_(zero) {
  for (const auto& p : programs_) {
    std::size_t n = p.size();
    if (zero_)
      while (n > 0 && p[n - 1].collective == Collective::AllGather) --n;
    prefix_len_.push_back(n);
  }
}

std::pair<double, double> SyncCosts::get(int p, double bytes) {
  if (!(bytes > 0)) return {0.0, 0.0};
  const Key k{p, std::bit_cast<std::uint64_t>(bytes)};
  if (auto it = cache_.find(k); it != cache_.end()) return it->second;
  ++evaluations_;
  sim::CostOptions o;
  o.algo = algo_;
  o.bytes = bytes;
  o.breakdown = false;
  const auto& prog = programs_[static_cast<std::size_t>(p)];
  const double full = sim_.time(prog, o);
  const std::size_t n = prefix_len_[static_cast<std::size_t>(p)];
  double pre = full;
  if (n < prog.size())
    pre = n == 0 ? 0.0 : sim_.time(LoweredProgram(prog.begin(), prog.begin() + static_cast<std::ptrdiff_t>(n)), o);
  const std::pair<double, double> r{pre, full - pre};
  cache_.emplace(k, r);
  return r;
}

std::vector<std::pair<int, int>> ddp_buckets(const std::vector<LayerCost>& lc, double cap_bytes) {
  std::vector<std::pair<int, int>> out;
  int last = static_cast<int>(lc.size()) - 1;
  double acc = 0;
  for (int i = last; i >= 0; --i) {
    acc += lc[static_cast<std::size_t>(i)].grad_bytes;
    if (acc >= cap_bytes || i == 0) {
      out.emplace_back(i, last);
      last = i - 1;
      acc = 0;
    }
  }
  return out;
}

StepResult simulate_step(const std::vector<LayerCost>& lc, const std::vector<std::pair<int, int>>& buckets,
                         const std::vector<int>& programs, SyncCosts& costs, int autosync_program) {
  if (programs.size() != buckets.size()) throw Error("step: one program per bucket is needed");
  const int L = static_cast<int>(lc.size());
  StepResult r;
  r.layer_fwd_start.assign(lc.size(), 0);
  r.layer_bwd_start.assign(lc.size(), 0);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    Bucket k;
    k.first = buckets[b].first;
    k.last = buckets[b].second;
    k.program = programs[b];
    for (int i = k.first; i <= k.last; ++i) k.bytes += lc[static_cast<std::size_t>(i)].grad_bytes;
    r.buckets.push_back(k);
  }
  // Forward. ZeRO: bucket parameters gathered in forward order (the last bucket in backward order
  // holds the first layers), each gather starting once the previous one finished and the compute
  // reached the previous bucket (one bucket prefetched ahead).
  std::vector<double> layer_ready(lc.size(), 0.0);  // when a layer's parameters are present
  if (costs.zero()) {
    double prev_end = 0;
    double prev_fwd_start = 0;
    // Forward compute start of a bucket depends on the gathers; simulate both together.
    double t = 0;
    for (auto it = r.buckets.rbegin(); it != r.buckets.rend(); ++it) {
      it->gather_start_s = std::max(prev_end, prev_fwd_start);
      it->gather_end_s = it->gather_start_s + costs.gather(it->program, it->bytes);
      prev_end = it->gather_end_s;
      const double start = std::max(t, it->gather_end_s);
      prev_fwd_start = start;
      t = start;
      for (int i = it->first; i <= it->last; ++i) {
        r.layer_fwd_start[static_cast<std::size_t>(i)] = t;
        t += lc[static_cast<std::size_t>(i)].fwd_s;
      }
    }
    r.fwd_s = t;
  } else {
    double t = 0;
    for (int i = 0; i < L; ++i) {
      r.layer_fwd_start[static_cast<std::size_t>(i)] = t;
      t += lc[static_cast<std::size_t>(i)].fwd_s;
    }
    r.fwd_s = t;
  }
  // Backward, layer by layer from the last.
  double t = r.fwd_s;
  std::vector<double> grad_ready(lc.size(), 0.0);
  for (int i = L - 1; i >= 0; --i) {
    r.layer_bwd_start[static_cast<std::size_t>(i)] = t;
    t += lc[static_cast<std::size_t>(i)].bwd_s;
    grad_ready[static_cast<std::size_t>(i)] = t;
  }
  const double compute_end = t;
  double prev = 0;
  for (auto& k : r.buckets) {
    k.ready_s = grad_ready[static_cast<std::size_t>(k.first)];
    k.start_s = std::max(k.ready_s, prev);
    k.end_s = k.start_s + costs.sync(k.program, k.bytes);
    prev = k.end_s;
    r.sync_s += k.sync_s() + k.gather_s();
  }
  double fwd = 0, bwd = 0;
  for (const auto& c : lc) {
    fwd += c.fwd_s;
    bwd += c.bwd_s;
  }
  r.compute_s = fwd + bwd;
  r.bwd_s = bwd;
  r.step_s = std::max(compute_end, prev);
  r.exposed_comm_s = r.step_s - r.compute_s;
  double per_layer = 0;
  for (const auto& c : lc)
    per_layer += costs.sync(autosync_program, c.grad_bytes) + costs.gather(autosync_program, c.grad_bytes);
  r.autosync_s = std::max(r.compute_s, per_layer);
  return r;
}

Choice choose(const std::vector<LayerCost>& lc, SyncCosts& costs, double ddp_cap_bytes, const ChooseOptions& opt) {
  const int L = static_cast<int>(lc.size());
  double total = 0;
  for (const auto& c : lc) total += c.grad_bytes;
  // Units: layers merged in backward order until each holds total / max_units bytes; unit
  // boundaries are the candidate bucket boundaries.
  const double unit_bytes = total / std::max(1, opt.max_units);
  std::vector<std::pair<int, int>> units;  // backward order, (first, last) forward indices
  {
    int last = L - 1;
    double acc = 0;
    for (int i = L - 1; i >= 0; --i) {
      acc += lc[static_cast<std::size_t>(i)].grad_bytes;
      if (acc >= unit_bytes || i == 0) {
        units.emplace_back(i, last);
        last = i - 1;
        acc = 0;
      }
    }
  }
  const int U = static_cast<int>(units.size());
  std::vector<double> ubytes(static_cast<std::size_t>(U)), uready(static_cast<std::size_t>(U));
  {
    double t = 0;
    for (const auto& c : lc) t += c.fwd_s;
    int u = 0;
    for (int i = L - 1; i >= 0; --i) {
      t += lc[static_cast<std::size_t>(i)].bwd_s;
      ubytes[static_cast<std::size_t>(u)] += lc[static_cast<std::size_t>(i)].grad_bytes;
      if (i == units[static_cast<std::size_t>(u)].first) uready[static_cast<std::size_t>(u++)] = t;
    }
  }
  const double max_bytes = opt.max_bucket_bytes > 0 ? opt.max_bucket_bytes : 4 * ddp_cap_bytes;
  std::vector<int> progs = opt.programs;
  if (progs.empty())
    for (int p = 0; p < costs.size(); ++p) progs.push_back(p);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> E(static_cast<std::size_t>(U) + 1, inf);
  std::vector<int> from(static_cast<std::size_t>(U) + 1, -1), prog(static_cast<std::size_t>(U) + 1, -1);
  E[0] = 0;
  for (int j = 1; j <= U; ++j) {
    double bytes = 0;
    for (int i = j - 1; i >= 0; --i) {
      bytes += ubytes[static_cast<std::size_t>(i)];
      if (i < j - 1 && bytes > max_bytes) break;  // a single unit is always allowed
      const double start = std::max(uready[static_cast<std::size_t>(j) - 1], E[static_cast<std::size_t>(i)]);
      for (int p : progs) {
        const double e = start + costs.sync(p, bytes);
        if (e < E[static_cast<std::size_t>(j)]) {
          E[static_cast<std::size_t>(j)] = e;
          from[static_cast<std::size_t>(j)] = i;
          prog[static_cast<std::size_t>(j)] = p;
        }
      }
    }
  }
  Choice c;
  c.units = U;
  for (int j = U; j > 0; j = from[static_cast<std::size_t>(j)]) {
    const int i = from[static_cast<std::size_t>(j)];
    // units i..j-1 (backward order): forward indices from units[j-1].first to units[i].second
    c.buckets.emplace_back(units[static_cast<std::size_t>(j) - 1].first, units[static_cast<std::size_t>(i)].second);
    c.programs.push_back(prog[static_cast<std::size_t>(j)]);
  }
  std::reverse(c.buckets.begin(), c.buckets.end());
  std::reverse(c.programs.begin(), c.programs.end());
  return c;
}

}  // namespace p2v::sim::step
