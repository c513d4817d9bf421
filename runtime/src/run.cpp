// The executor: one untimed run checked against the state semantics after every step and against
// the goal at the end, then timed iterations of the program and of the baseline AllReduce.
#include "p2v/runtime/run.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "p2v/engine/error.hpp"

namespace p2v::runtime {

namespace {

int ceil_log2(int n) {
  int b = 0;
  while ((1 << b) < n) ++b;
  return b;
}

std::uint32_t mix(std::uint32_t a, std::uint64_t e) {
  std::uint64_t h = (static_cast<std::uint64_t>(a) + 1) * 0x9E3779B97F4A7C15ull ^ (e * 0xC2B2AE3D27D4EB4Full);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return static_cast<std::uint32_t>(h);
}

std::int32_t to_bits(std::int64_t v, Dtype dt) {
  if (dt == Dtype::Int32) return static_cast<std::int32_t>(v);
  const float f = static_cast<float>(v);
  std::int32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

std::string value_text(std::int32_t bits, Dtype dt) {
  if (dt == Dtype::Int32) return std::to_string(bits);
  float f;
  std::memcpy(&f, &bits, 4);
  return fmt::format("{}", f);
}

std::string set_text(const std::vector<int>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "}";
}

// Gathers every rank's message on rank 0; returns the first few non-empty ones there.
std::string gather_messages(const std::string& mine, Coordinator& co) {
  const auto all = co.gather(mine);
  std::string out;
  int shown = 0, total = 0;
  for (const auto& m : all) {
    if (m.empty()) continue;
    ++total;
    if (shown < 8) {
      if (!out.empty()) out += '\n';
      out += m;
      ++shown;
    }
  }
  if (total > shown) out += fmt::format("\n(and {} more ranks)", total - shown);
  return out;
}

}  // namespace

std::int32_t fill_value(int rank, std::int64_t e, int num_ranks, Dtype dt) {
  const int bits = (dt == Dtype::Int32 ? 30 : 23) - ceil_log2(num_ranks);
  const std::int64_t v = 1 + (mix(static_cast<std::uint32_t>(rank), static_cast<std::uint64_t>(e)) &
                              ((std::uint32_t{1} << std::max(bits, 1)) - 1));
  return to_bits(v, dt);
}

double busbw_factor(Collective c, int n) {
  if (n <= 1) return 0;
  switch (c) {
    case Collective::AllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::ReduceScatter:
    case Collective::AllGather:
      return static_cast<double>(n - 1) / n;
    case Collective::Reduce:
    case Collective::Broadcast:
      return 1.0;
  }
  return 1.0;
}

std::string format_groups_list(const Groups& gs) {
  std::string out;
  for (std::size_t gi = 0; gi < gs.size(); ++gi) {
    if (gi) out += '|';
    const auto& g = gs[gi];
    bool first = true;
    for (std::size_t i = 0; i < g.size();) {
      std::size_t j = i;
      while (j + 1 < g.size() && g[j + 1] == g[j] + 1) ++j;
      if (!first) out += ' ';
      first = false;
      out += std::to_string(g[i]);
      if (j > i) {
        out += '-';
        out += std::to_string(g[j]);
      }
      i = j + 1;
    }
  }
  return out;
}

Stats make_stats(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return s;
}

std::int64_t buffer_bytes(std::int64_t requested, std::int64_t k) {
  const std::int64_t want = std::max<std::int64_t>(1, (requested + kElemSize - 1) / kElemSize);
  return (want + k - 1) / k * k * static_cast<std::int64_t>(kElemSize);
}

RunReport run_program(const RankPlan& plan, Backend& be, const RunOptions& opt, Coordinator& co) {
  const int rank = co.rank(), size = co.size();
  if (size != plan.num_ranks || rank != plan.rank)
    throw Error(
        fmt::format("the plan is for rank {} of {}, this is rank {} of {}", plan.rank, plan.num_ranks, rank, size));
  const int N = static_cast<int>(plan.num_ranks);
  const std::size_t S = plan.steps.size();
  RunReport rep;

  // Sizes: a whole number of elements per row (chunk) and per unit.
  const std::int64_t want = std::max<std::int64_t>(1, (opt.bytes + kElemSize - 1) / kElemSize);
  const std::int64_t epr = (want + plan.k - 1) / plan.k;
  const std::int64_t epu = epr * plan.rows_per_unit;
  const std::int64_t elems = epr * plan.k;
  rep.elems = elems;
  rep.bytes = elems * static_cast<std::int64_t>(kElemSize);
  rep.elems_per_row = epr;
  if (rep.bytes != buffer_bytes(opt.bytes, plan.k)) throw std::logic_error("buffer_bytes disagrees with run_program");

  // Communicators: one split per step with new groups, then the baseline's.
  std::vector<int> slot(S, -1);
  for (std::size_t s = 0; s < S; ++s)
    if (plan.steps[s].comm.group_size >= 2) slot[s] = be.comm(plan.steps[s].comm);
  const int base_slot = plan.baseline.group_size >= 2 ? be.comm(plan.baseline) : -1;

  be.allocate(elems, plan.stage_units[0] * epu, plan.stage_units[1] * epu, epu);
  std::vector<std::int32_t> pristine(elems);
  for (std::int64_t e = 0; e < elems; ++e) pristine[e] = fill_value(rank, e, N, opt.dtype);

  auto run_step = [&](std::size_t s) {
    if (slot[s] >= 0) be.step(plan.steps[s].collective, plan.steps[s].rs, slot[s]);
  };

  // --- Verification run ---
  if (opt.verify) {
    if (plan.columns.size() != S) throw Error("internal: the plan was made without the columns to check against");
    const Dtype dt = opt.dtype;
    std::vector<std::int32_t> got;
    // Checks the rows `layout` says this rank holds against the expected contributions of its
    // i-th held unit.
    auto check = [&](const Layout& layout, auto&& expected_cols, const std::string& when) -> std::string {
      std::int64_t pos = 0;
      for (const auto& iv : layout.rows.intervals()) {
        for (std::int64_t u = iv.begin; u < iv.end; ++u, ++pos) {
          const std::int64_t off = (layout.where == Space::Main ? u : pos) * epu;
          got.resize(epu);
          be.download(layout.where, off, epu, got.data());
          const std::vector<int>& cols = expected_cols(pos);
          for (std::int64_t i = 0; i < epu; ++i) {
            const std::int64_t e = u * epu + i;
            std::int64_t sum = 0;
            for (int j : cols) {
              const std::int32_t b = fill_value(j, e, N, dt);
              if (dt == Dtype::Int32) {
                sum += b;
              } else {
                float f;
                std::memcpy(&f, &b, 4);
                sum += static_cast<std::int64_t>(f);
              }
            }
            const std::int32_t exp = to_bits(sum, dt);
            if (got[i] != exp)
              return fmt::format(
                  "{}: rank {}, chunk {} (of {}), element {}: expected {} (the sum over ranks {}), got {}", when, rank,
                  e / epr, plan.k, e % epr, value_text(exp, dt), set_text(cols), value_text(got[i], dt));
          }
        }
      }
      return {};
    };
    be.upload(pristine);
    be.synchronize();
    co.barrier();
    for (std::size_t s = 0; s < S && rep.ok; ++s) {
      run_step(s);
      be.synchronize();
      const Layout& after = plan.steps[s].rs.after;
      if (static_cast<int>(s) == opt.fault_step && rank == opt.fault_rank && !after.rows.empty()) {
        const std::int64_t u = after.rows.first();
        be.poke(after.where, (after.where == Space::Main ? u : 0) * epu, 1);
      }
      const auto& cols = plan.columns[s];
      std::string msg = check(
          after, [&](std::int64_t i) -> const std::vector<int>& { return cols[i]; },
          fmt::format("after step {} ({})", s + 1, engine::to_string(plan.steps[s].collective)));
      if (co.agree(!msg.empty()) >= 0) {
        rep.ok = false;
        rep.failure = gather_messages(msg, co);
      }
    }
    if (rep.ok) {
      be.copies(plan.final_copies);
      be.synchronize();
      // The goal: every chunk holds the sum over the rank's reduction group.
      Layout all{Space::Main, RowSet{Intervals{{0, plan.units}}}};
      std::string msg = check(
          all, [&](std::int64_t) -> const std::vector<int>& { return plan.goal_columns; },
          "after the program (goal: the sum over the reduction group)");
      if (co.agree(!msg.empty()) >= 0) {
        rep.ok = false;
        rep.failure = gather_messages(msg, co);
      }
    }
    if (!rep.ok) return rep;
    if (opt.on_iteration) opt.on_iteration();
  }

  // --- Timed iterations ---
  const int iters = std::max(1, opt.iters);
  const int total_its = iters + std::max(0, opt.warmup);
  const std::size_t row = S + 2;  // per iteration: steps, total, baseline
  std::vector<double> samples(row * iters, -1.0);
  for (int it = 0; it < total_its; ++it) {
    const bool rec = it >= total_its - iters;
    double* out = rec ? samples.data() + row * (it - (total_its - iters)) : nullptr;
    be.upload(pristine);
    be.synchronize();
    co.barrier();
    const double t0 = co.now();
    double prev = t0;
    for (std::size_t s = 0; s < S; ++s) {
      if (slot[s] >= 0) {
        run_step(s);
        be.synchronize();
      }
      const double t = co.now();
      if (out && slot[s] >= 0) out[s] = t - prev;
      prev = t;
    }
    if (!plan.final_copies.empty()) {
      be.copies(plan.final_copies);
      be.synchronize();
    }
    const double t1 = co.now();
    if (out) out[S] = t1 - t0;
    if (opt.baseline) {
      be.upload(pristine);
      be.synchronize();
      co.barrier();
      const double b0 = co.now();
      if (base_slot >= 0) {
        be.allreduce_main(base_slot);
        be.synchronize();
      }
      if (out) out[S + 1] = co.now() - b0;
    }
    if (opt.on_iteration) opt.on_iteration();
  }
  // The size of each step in rows: the largest on any rank (idle ranks move nothing; ranks may
  // use different units).
  std::vector<int> step_rows(S);
  for (std::size_t s = 0; s < S; ++s)
    step_rows[s] = co.allreduce_max(static_cast<int>(plan.steps[s].rs.data_units * plan.rows_per_unit));
  const std::vector<double> all = co.gather(samples);
  if (rank != 0) return rep;

  auto collect = [&](std::size_t col, std::vector<double>* per_iter_max) {
    std::vector<double> v;
    if (per_iter_max) per_iter_max->assign(iters, 0.0);
    for (int r = 0; r < size; ++r)
      for (int i = 0; i < iters; ++i) {
        const double x = all[(static_cast<std::size_t>(r) * iters + i) * row + col];
        if (x >= 0) {
          v.push_back(x);
          if (per_iter_max) (*per_iter_max)[i] = std::max((*per_iter_max)[i], x);
        }
      }
    return v;
  };
  auto finish = [](Timing& t, std::vector<double> v, double factor) {
    t.t = make_stats(std::move(v));
    if (t.t.median > 0) {
      t.algbw = static_cast<double>(t.bytes) / t.t.median / 1e9;
      t.busbw = t.algbw * factor;
    }
  };
  const PatternProgram& prog = *plan.program;
  // Every group, as calibrate reads them, on systems small enough to list them.
  auto groups_list = [&](const engine::GroupPattern& g) -> std::string {
    if (prog.num_ranks() > engine::kMaxLoweredDevices || g.group_size < 2) return describe_pattern(g, prog.grid);
    return format_groups_list(engine::lower_pattern(g, prog.grid));
  };
  const int gmax = static_cast<int>(prog.reduction.group_size);
  for (std::size_t s = 0; s < S; ++s) {
    const PatternStep& st = prog.steps[s];
    Timing t;
    t.what = engine::to_string(st.collective);
    t.groups = describe_pattern(st.groups, prog.grid);
    t.groups_list = groups_list(st.groups);
    t.num_groups = static_cast<int>(st.groups.num_groups);
    t.group_size = static_cast<int>(st.groups.group_size);
    t.bytes = step_rows[s] * epr * static_cast<std::int64_t>(kElemSize);
    finish(t, collect(s, nullptr), busbw_factor(st.collective, t.group_size));
    rep.steps.push_back(std::move(t));
  }
  rep.total.what = "total";
  rep.total.groups = describe_pattern(prog.reduction, prog.grid);
  rep.total.groups_list = groups_list(prog.reduction);
  rep.total.group_size = gmax;
  rep.total.num_groups = static_cast<int>(prog.reduction.num_groups);
  rep.total.bytes = rep.bytes;
  finish(rep.total, collect(S, &rep.total_samples), busbw_factor(Collective::AllReduce, gmax));
  if (opt.baseline) {
    rep.baseline = rep.total;
    rep.baseline.what = "AllReduce";
    finish(rep.baseline, collect(S + 1, &rep.baseline_samples), busbw_factor(Collective::AllReduce, gmax));
  }
  return rep;
}

}  // namespace p2v::runtime
