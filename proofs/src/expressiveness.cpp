#include "p2v/proofs/expressiveness.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>
#include <map>
#include <set>

#include "p2v/engine/error.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"
#include "prove_detail.hpp"
#include "twin.hpp"

namespace p2v::proofs {

using engine::FormKind;
using engine::HierarchyKind;
using engine::LoweredProgram;
using engine::LoweredStep;

const char* to_string(Status s) {
  switch (s) {
    case Status::Holds:
      return "holds";
    case Status::Fails:
      return "fails";
    case Status::Unknown:
      return "unknown";
    case Status::Info:
      return "info";
  }
  return "?";
}

bool MatrixReport::ok() const {
  for (const auto& c : checks)
    if (c.status == Status::Fails || c.status == Status::Unknown) return false;
  return true;
}

bool have_smt() {
#ifdef P2V_HAVE_SMT
  return true;
#else
  return false;
#endif
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string groups_text(const engine::Groups& g) {
  std::string s;
  for (const auto& grp : g) s += fmt::format("{{{}}}", fmt::join(grp, ","));
  return s;
}

std::string step_text(const LoweredStep& s) {
  return fmt::format("{}{}", engine::to_string(s.collective), groups_text(s.groups));
}

std::string lowered_text(const LoweredProgram& p) {
  std::string s;
  for (std::size_t i = 0; i < p.size(); ++i) s += (i ? " ; " : "") + step_text(p[i]);
  return s;
}

// One hierarchy's synthesis, as lowered programs and lowered instructions.
struct Run {
  std::string label;
  HierarchyKind kind;
  engine::SynthResult r;
  std::vector<LoweredProgram> programs;  // shortest first
  std::map<LoweredProgram, std::string> notation;
  std::set<LoweredProgram> set;
  std::set<LoweredStep> used;  // occurs in some valid program
  std::vector<LoweredStep> all;
  double seconds = 0;
};

Run run(const engine::Placement& p, const std::vector<std::string>& names, HierarchyKind kind, const std::string& label,
        const ProveOptions& opt) {
  Run out;
  out.label = label;
  out.kind = kind;
  const auto t0 = Clock::now();
  engine::SynthOptions so;
  so.max_size = opt.max_size;
  so.master = opt.master;
  out.r = engine::synthesize(p, names, kind, so);
  for (const auto& prog : out.r.programs) {
    auto lp = engine::lower(out.r, prog);
    out.notation[lp] = engine::program_name(out.r, prog);
    out.set.insert(lp);
    for (const auto& st : lp) out.used.insert(st);
    out.programs.push_back(std::move(lp));
  }
  for (const auto& in : out.r.instructions)
    out.all.push_back({in.collective, engine::lower_groups(out.r.hierarchy, in.grouping.groups)});
  out.seconds = since(t0);
  return out;
}

// A ⊇ B as sets of lowered programs: fails with a program of B missing from A; strictness
// (a program of A missing from B) is reported in the detail.
Check inclusion(const Run& strong, const Run& weak, bool theorem) {
  Check c;
  c.id = fmt::format("{}:{}>={}", theorem ? "thm" : "cmp", strong.label, weak.label);
  c.title = fmt::format("every valid lowered program of ({}) is one of ({}), size <= L", weak.label, strong.label);
  const auto t0 = Clock::now();
  const LoweredProgram* missing = nullptr;
  for (const auto& p : weak.programs)
    if (!strong.set.count(p)) {
      missing = &p;
      break;
    }
  const LoweredProgram* extra = nullptr;
  for (const auto& p : strong.programs)
    if (!weak.set.count(p)) {
      extra = &p;
      break;
    }
  if (missing) {
    c.status = theorem ? Status::Fails : Status::Info;
    c.detail = fmt::format("({}) has {} which ({}) lacks; lowered: {}", weak.label, weak.notation.at(*missing),
                           strong.label, lowered_text(*missing));
  } else {
    c.status = theorem ? Status::Holds : Status::Info;
    c.detail = fmt::format("{} of {} programs of ({}) found in ({})", weak.programs.size(), weak.programs.size(),
                           weak.label, strong.label);
  }
  if (extra)
    c.detail +=
        fmt::format("; strict: ({}) has {} which ({}) lacks", strong.label, strong.notation.at(*extra), weak.label);
  else if (!missing)
    c.detail += "; equal sets";
  c.seconds = since(t0);
  return c;
}

// Instruction-level twins by enumeration: every instruction of `weak` occurring in a valid program
// has an instruction of `strong` with the same collective and lowered groups.
Check twins(const Run& strong, const Run& weak, const std::string& lemma) {
  Check c;
  c.id = lemma;
  c.title = fmt::format("each ({}) instruction in a valid program has a ({}) twin with identical groups", weak.label,
                        strong.label);
  const auto t0 = Clock::now();
  std::set<LoweredStep> have(strong.all.begin(), strong.all.end());
  std::size_t n = 0;
  for (const auto& st : weak.used) {
    ++n;
    if (!have.count(st)) {
      c.status = Status::Fails;
      c.detail = fmt::format("no twin for {}", step_text(st));
      c.seconds = since(t0);
      return c;
    }
  }
  c.detail = fmt::format("{} instructions mapped", n);
  c.seconds = since(t0);
  return c;
}

Check smt_twins(const Run& strong, const Run& weak, const std::string& solver, int n, unsigned timeout_ms) {
  Check c;
  c.id = fmt::format("smt:{}:{}->{}", solver, weak.label, strong.label);
  c.title = fmt::format("SMT: 'a valid ({}) instruction with no twin in ({})' is unsat", weak.label, strong.label);
  std::vector<LoweredStep> w(weak.used.begin(), weak.used.end());
  auto a = detail::twin_query(solver, w, strong.all, n, timeout_ms);
  c.seconds = a.seconds;
  if (a.result == "unsat") {
    c.status = Status::Holds;
    c.detail = fmt::format("unsat ({}), {} weak x {} strong instructions{}", a.solver, w.size(), strong.all.size(),
                           a.why.empty() ? "" : "; " + a.why);
  } else if (a.result == "sat") {
    c.status = Status::Fails;
    c.detail = fmt::format("sat ({}): no twin for {}", a.solver, step_text(w.at(a.witness)));
  } else {
    c.status = Status::Unknown;
    c.detail = fmt::format("{} ({}): {}", a.result, a.solver, a.why);
  }
  return c;
}

// Which hardware (axis, level) factors make up each level of a hierarchy, to test "every factor is
// 1 or on a reduction axis" (B.4-B.6). Returns per hierarchy level: true when pure.
std::vector<bool> pure_levels(const engine::Placement& p, HierarchyKind kind, const engine::SynthesisHierarchy& h) {
  const auto& x = p.matrix();
  const int m = static_cast<int>(x.size()), L = static_cast<int>(p.levels().size());
  std::vector<bool> pure;
  auto factor_ok = [&](int i, int j) { return x[i][j] == 1 || p.is_reduction_axis(i); };
  switch (kind) {
    case HierarchyKind::System:
      for (int j = 0; j < L; ++j) {
        bool ok = true;
        for (int i = 0; i < m; ++i) ok &= factor_ok(i, j);
        pure.push_back(ok);
      }
      break;
    case HierarchyKind::ColumnBased:
      for (int j = 0; j < L; ++j)
        for (int i = 0; i < m; ++i) pure.push_back(factor_ok(i, j));
      break;
    case HierarchyKind::RowBased:
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < L; ++j) pure.push_back(factor_ok(i, j));
      break;
    default:
      for (int l = 0; l < h.num_levels(); ++l) pure.push_back(true);
      return pure;
  }
  if (static_cast<int>(pure.size()) + 1 == h.num_levels()) pure.insert(pure.begin(), true);  // implied root
  return pure;
}

struct Tally {
  std::size_t valid = 0, valid_ok = 0, cond = 0, cond_valid = 0;
  std::string witness;
};

}  // namespace

namespace detail {

MatrixReport prove_concrete(const engine::System& system, const std::vector<int>& axes, const std::vector<int>& reduce,
                            const engine::ParallelismMatrix& x, const ProveOptions& opt, DProgramNames* d_names) {
  MatrixReport rep;
  rep.matrix = x;
  const auto n = system.num_devices();
  engine::Placement p(system.cardinalities(), axes, x, reduce);
  const std::vector<std::string> names = system.level_names();

  std::vector<Run> runs;
  runs.push_back(run(p, names, HierarchyKind::System, "a", opt));
  runs.push_back(run(p, names, HierarchyKind::ColumnBased, "b", opt));
  runs.push_back(run(p, names, HierarchyKind::RowBased, "c", opt));
  runs.push_back(run(p, names, HierarchyKind::ReductionUncollapsed, "d", opt));
  runs.push_back(run(p, names, HierarchyKind::ReductionAxes, "d-collapsed", opt));
  for (const auto& r : runs) rep.program_counts.push_back({r.label, r.programs.size()});
  if (d_names)
    for (const Run* r : {&runs[3], &runs[4]}) {
      auto& v = r->kind == HierarchyKind::ReductionAxes ? d_names->collapsed : d_names->uncollapsed;
      for (const auto& prog : r->r.programs) v.push_back(engine::program_name(r->r, prog));
    }
  const Run &A = runs[0], &B = runs[1], &C = runs[2], &D = runs[3], &DC = runs[4];

  // Theorem 3.2 by enumeration.
  rep.checks.push_back(inclusion(B, A, true));
  rep.checks.push_back(inclusion(C, B, true));
  rep.checks.push_back(inclusion(D, C, true));
  // Consequences of the chain, checked directly (they survive a broken middle link).
  rep.checks.push_back(inclusion(D, B, true));
  rep.checks.push_back(inclusion(D, A, true));
  rep.checks.push_back(inclusion(C, A, true));
  rep.checks.push_back(inclusion(D, DC, false));
  rep.checks.push_back(inclusion(DC, D, false));
  rep.checks.push_back(inclusion(DC, C, false));
  rep.checks.push_back(inclusion(DC, B, false));
  rep.checks.push_back(inclusion(DC, A, false));

  // B.1: the explicit mapping (a) -> (b): (a)'s level j is closed, in (b), by the last factor of
  // column j (our (b) order is level-major, axis 0 first, so x_{j,m} ends column j).
  {
    Check c{"B.1", "(x_i,F(x_j)) of (a) and (x_i,last axis),F(x_j,last axis)) of (b) form identical groups",
            Status::Holds, "", 0};
    const auto t0 = Clock::now();
    const auto& ha = A.r.hierarchy;
    const auto& hb = B.r.hierarchy;
    const int m = static_cast<int>(axes.size());
    const int a_off = ha.num_levels() - static_cast<int>(p.levels().size());  // 1 if (a) has an implied root
    const int b_off = hb.num_levels() - static_cast<int>(p.levels().size()) * m;
    auto map_level = [&](int la) { return la < a_off ? 0 : b_off + (la - a_off) * m + (m - 1); };
    std::size_t mapped = 0;
    for (int s = 0; s + 1 < ha.num_levels() && c.status == Status::Holds; ++s) {
      std::vector<std::pair<FormKind, int>> forms{{FormKind::Inside, -1}};
      for (int e = 0; e < s; ++e) forms.push_back({FormKind::Parallel, e}), forms.push_back({FormKind::Master, e});
      for (auto [f, e] : forms) {
        const int sb = map_level(s), eb = e < 0 ? -1 : map_level(e);
        auto ga = engine::lower_groups(ha, engine::form_groups(ha, s, f, e));
        auto gb = engine::lower_groups(hb, engine::form_groups(hb, sb, f, eb));
        ++mapped;
        if (ga != gb) {
          c.status = Status::Fails;
          engine::Grouping g{s, f, e, {}};
          c.detail = fmt::format("{} of (a) forms {} but its image in (b) forms {}", engine::grouping_name(ha, g),
                                 groups_text(ga), groups_text(gb));
          break;
        }
      }
    }
    if (c.status == Status::Holds) c.detail = fmt::format("{} groupings mapped", mapped);
    c.seconds = since(t0);
    rep.checks.push_back(c);
  }
  rep.checks.push_back(twins(C, B, "B.7"));
  rep.checks.push_back(twins(D, C, "B.8"));

  // B.2, B.3, B.4-B.6 over every hierarchy and every (slice, form, ancestor), duplicates included.
  Check b2{"B.2", "(x_i,Parallel(x_j)) forms groups of size x_{j+1}..x_i, x_0..x_j*x_{i+1}..x_n of them", Status::Holds,
           "", 0};
  Check b3{"B.3", "groups of instructions in valid programs lie inside reduction groups", Status::Holds, "", 0};
  const char* lemma_ids[3] = {"B.4", "B.5", "B.6"};
  const char* lemma_titles[3] = {"(x_i,Parallel(x_j)) in a valid program => x_{j+1}..x_i are 1 or on reduction axes",
                                 "(x_i,InsideGroup) in a valid program => x_{i+1}..x_n are 1 or on reduction axes",
                                 "(x_i,Master(x_j)) in a valid program => x_{j+1}..x_n are 1 or on reduction axes"};
  Tally tally[3];
  const auto t0 = Clock::now();
  std::size_t b2_count = 0, b3_count = 0;
  for (const Run* r : {&A, &B, &C, &D}) {
    const auto& h = r->r.hierarchy;
    const auto pure = pure_levels(p, r->kind, h);
    const int nl = h.num_levels();
    auto prod = [&](int from, int to) {  // cards[from..to]
      long long v = 1;
      for (int l = from; l <= to; ++l) v *= h.cards[l];
      return v;
    };
    auto all_pure = [&](int from, int to) {
      for (int l = from; l <= to; ++l)
        if (!pure[l]) return false;
      return true;
    };
    for (int s = 0; s + 1 < nl; ++s) {
      std::vector<std::pair<FormKind, int>> forms{{FormKind::Inside, -1}};
      for (int e = 0; e < s; ++e) forms.push_back({FormKind::Parallel, e}), forms.push_back({FormKind::Master, e});
      for (auto [f, e] : forms) {
        const auto local = engine::form_groups(h, s, f, e);
        const auto lowered = engine::lower_groups(h, local);
        engine::Grouping g{s, f, e, {}};
        if (f == FormKind::Parallel) {
          ++b2_count;
          const long long size = prod(e + 1, s), count = prod(0, e) * prod(s + 1, nl - 1);
          bool ok = static_cast<long long>(local.size()) == count;
          for (const auto& grp : local) {
            ok &= static_cast<long long>(grp.size()) == size;
            for (int mbr : grp)  // members differ only in levels e+1..s
              for (int l = 0; l < nl; ++l)
                if (l <= e || l > s) ok &= h.coords[mbr][l] == h.coords[grp[0]][l];
          }
          if (!ok && b2.status == Status::Holds) {
            b2.status = Status::Fails;
            b2.detail = fmt::format("({}) {}: {} groups of sizes {}..., expected {} of size {}", r->label,
                                    engine::grouping_name(h, g), local.size(), local.empty() ? 0 : local[0].size(),
                                    count, size);
          }
        }
        const bool cond = f == FormKind::Parallel ? all_pure(e + 1, s)
                          : f == FormKind::Inside ? all_pure(s + 1, nl - 1)
                                                  : all_pure(e + 1, nl - 1);
        const int li = f == FormKind::Parallel ? 0 : f == FormKind::Inside ? 1 : 2;
        bool valid_any = false;
        for (engine::Collective col : engine::kAllCollectives) {
          const LoweredStep st{col, lowered};
          if (!r->used.count(st)) continue;
          valid_any = true;
          ++b3_count;
          for (const auto& grp : lowered) {
            const int rg = p.reduction_group_of(grp[0]);
            for (int mbr : grp)
              if (p.reduction_group_of(mbr) != rg && b3.status == Status::Holds) {
                b3.status = Status::Fails;
                b3.detail = fmt::format("({}) {}@{} groups devices {} and {} of different reduction groups", r->label,
                                        engine::to_string(col), engine::grouping_name(h, g), grp[0], mbr);
              }
          }
        }
        auto& t = tally[li];
        if (valid_any) {
          ++t.valid;
          if (cond)
            ++t.valid_ok;
          else if (t.witness.empty())
            t.witness = fmt::format("({}) {} occurs in a valid program but the condition fails", r->label,
                                    engine::grouping_name(h, g));
        }
        if (cond) {
          ++t.cond;
          if (valid_any) ++t.cond_valid;
        }
      }
    }
  }
  const double lemma_secs = since(t0);
  b2.seconds = b3.seconds = lemma_secs;
  if (b2.status == Status::Holds) b2.detail = fmt::format("{} Parallel groupings", b2_count);
  if (b3.status == Status::Holds) b3.detail = fmt::format("{} valid instructions", b3_count);
  rep.checks.push_back(b2);
  rep.checks.push_back(b3);
  for (int li = 0; li < 3; ++li) {
    const auto& t = tally[li];
    Check c{lemma_ids[li], lemma_titles[li], t.valid == t.valid_ok ? Status::Holds : Status::Fails, "", lemma_secs};
    if (c.status == Status::Fails)
      c.detail = t.witness;
    else
      c.detail = fmt::format(
          "{} valid groupings satisfy it; converse: {} of {} groupings that satisfy it occur in "
          "a valid program",
          t.valid, t.cond_valid, t.cond);
    rep.checks.push_back(c);
  }

  // The instruction-level argument by SMT.
  for (const auto& solver : opt.solvers) {
    rep.checks.push_back(smt_twins(B, A, solver, n, opt.timeout_ms));
    rep.checks.push_back(smt_twins(C, B, solver, n, opt.timeout_ms));
    rep.checks.push_back(smt_twins(D, C, solver, n, opt.timeout_ms));
  }
  return rep;
}

}  // namespace detail

}  // namespace p2v::proofs
