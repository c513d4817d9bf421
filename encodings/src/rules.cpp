#include "p2v/encodings/rules.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "p2v/encodings/rules_digits.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/json_util.hpp"

namespace p2v::encodings {

using engine::CountPlan;
using engine::CountState;
using engine::CountUpdate;
using engine::RuleCompare;
namespace {

unsigned bits_for(std::uint64_t v) {  // bits to represent 0..v
  unsigned b = 1;
  while (b < 63 && (std::uint64_t{1} << b) <= v) ++b;
  return b;
}

// Maximal runs [lo, hi] of a sorted row list.
std::vector<std::pair<int, int>> runs(const std::vector<int>& rows) {
  std::vector<std::pair<int, int>> out;
  for (int r : rows) {
    if (!out.empty() && out.back().second + 1 == r)
      out.back().second = r;
    else
      out.emplace_back(r, r);
  }
  return out;
}

// Builds one query on one solver and (optionally) its SMT-LIB text, side by side.
class Encoder {
 public:
  Encoder(smt::Solver& s, const Equation& eq, bool text) : s_(s), eq_(eq), text_(text) {
    const auto bound = std::max(engine::multiplicity_bound(eq.lhs), engine::multiplicity_bound(eq.rhs));
    iw_ = bits_for(static_cast<std::uint64_t>(eq.k));
    mw_ = std::min<unsigned>(64, bits_for(static_cast<std::uint64_t>(bound)) + 1);
    classes();
    D_ = var("D");
    R_ = var("R");
    J_ = var("J");
    if (text_) out_ = "(set-logic QF_BV)\n" + out_;
  }

  // Asserts "the two sides differ at (D, R, J)" and the ranges.
  void encode() {
    const Term k = ival(eq_.k);
    for (const Term* v : {&D_, &J_}) assert_(smt::ult(v->t, k.t), fmt::format("(bvult {} {})", v->txt, k.txt));
    const Term nc = ival(static_cast<std::uint64_t>(rep_.size()));
    assert_(smt::ult(R_.t, nc.t), fmt::format("(bvult R {})", nc.txt));
    if (text_) out_ += fmt::format("; R is a row class; first rows of the classes: {}\n", fmt::join(rep_, " "));
    Side L = side("L", eq_.lhs_layout, eq_.lhs, J_);
    const bool tr = eq_.compare == RuleCompare::Transpose;
    Side Rs = side("Q", eq_.rhs_layout, eq_.rhs, tr ? D_ : J_);
    const Term& dl = D_;
    const Term& dr = tr ? J_ : D_;
    Term ol = select(dl, L.own), orr = select(dr, Rs.own), ml = select(dl, L.m), mr = select(dr, Rs.m);
    if (tr) {
      const Term z = mval(0);
      Term a = ite(ol, ml, z), b = ite(orr, mr, z);
      assert_(a.t != b.t, fmt::format("(not (= {} {}))", a.txt, b.txt));
    } else {
      const Term own_diff{ol.t != orr.t, fmt::format("(not (= {} {}))", ol.txt, orr.txt)};
      const Term val_diff{ol.t && orr.t && (ml.t != mr.t),
                          fmt::format("(and {} {} (not (= {} {})))", ol.txt, orr.txt, ml.txt, mr.txt)};
      assert_(own_diff.t || val_diff.t, fmt::format("(or {} {})", own_diff.txt, val_diff.txt));
    }
    if (text_) out_ += "(check-sat)\n";
  }

  const std::string& text() const { return out_; }
  // The first row of row class c (R ranges over classes).
  int row_of_class(int c) const { return rep_.at(static_cast<std::size_t>(c)); }
  smt::Term D() const { return D_.t; }
  smt::Term R() const { return R_.t; }
  smt::Term J() const { return J_.t; }

 private:
  struct Term {
    smt::Term t;
    std::string txt;
  };
  struct Side {
    std::vector<Term> m;    // per device: multiplicity as a function applied to (R, src)
    std::vector<Term> own;  // per device: R in its final rows
  };

  std::string bvtxt(unsigned w, std::uint64_t v) const { return text_ ? fmt::format("(_ bv{} {})", v, w) : ""; }
  Term ival(std::uint64_t v) { return {s_.bv_val(iw_, v), bvtxt(iw_, v)}; }
  Term mval(std::uint64_t v) { return {s_.bv_val(mw_, v), bvtxt(mw_, v)}; }
  Term var(const std::string& n) {
    if (text_) out_ += fmt::format("(declare-const {} (_ BitVec {}))\n", n, iw_);
    return {s_.bv_var(n, iw_), n};
  }
  void assert_(smt::Term t, const std::string& txt) {
    s_.add(t);
    if (text_) out_ += "(assert " + txt + ")\n";
  }
  Term ite(const Term& c, const Term& a, const Term& b) {
    return {smt::ite(c.t, a.t, b.t), text_ ? fmt::format("(ite {} {} {})", c.txt, a.txt, b.txt) : ""};
  }

  // Row classes: rows that every row set of both sides (updates, ownership) contains together or
  // not at all behave identically, so R ranges over classes (numbered by first row).
  void classes() {
    std::vector<std::vector<int>> sets;
    auto collect = [&](const engine::LoweredProgram& layout, const engine::LoweredProgram& steps) {
      CountState st(eq_.k);
      for (const auto& x : layout) st.apply(x);
      for (int d = 0; d < eq_.k; ++d) sets.push_back(st.rows(d));
      for (const auto& x : steps) {
        const CountPlan p = st.plan(x);
        for (const auto& u : p.updates) sets.push_back(u.rows);
        for (const auto& o : p.owns) sets.push_back(o.second);
        st.apply(p);
      }
    };
    collect(eq_.lhs_layout, eq_.lhs);
    collect(eq_.rhs_layout, eq_.rhs);
    std::vector<std::vector<char>> sig(static_cast<std::size_t>(eq_.k));
    for (const auto& S : sets) {
      std::vector<char> in(static_cast<std::size_t>(eq_.k), 0);
      for (int r : S) in[static_cast<std::size_t>(r)] = 1;
      for (int r = 0; r < eq_.k; ++r) sig[static_cast<std::size_t>(r)].push_back(in[static_cast<std::size_t>(r)]);
    }
    std::vector<std::vector<char>> seen;
    cls_.assign(static_cast<std::size_t>(eq_.k), 0);
    for (int r = 0; r < eq_.k; ++r) {
      auto it = std::find(seen.begin(), seen.end(), sig[static_cast<std::size_t>(r)]);
      if (it == seen.end()) {
        seen.push_back(sig[static_cast<std::size_t>(r)]);
        rep_.push_back(r);
        it = seen.end() - 1;
      }
      cls_[static_cast<std::size_t>(r)] = static_cast<int>(it - seen.begin());
    }
  }

  // R in rows (as classes).
  Term member(const std::vector<int>& row_list) {
    std::vector<int> rows;
    for (int r : row_list) rows.push_back(cls_[static_cast<std::size_t>(r)]);
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    if (rows.size() == rep_.size()) return {s_.bool_val(true), "true"};
    std::vector<smt::Term> v;
    std::string t;
    for (auto [lo, hi] : runs(rows)) {
      if (lo == hi) {
        v.push_back(R_.t == ival(lo).t);
        if (text_) t += fmt::format(" (= R {})", bvtxt(iw_, lo));
      } else {
        v.push_back(smt::ule(ival(lo).t, R_.t) && smt::ule(R_.t, ival(hi).t));
        if (text_) t += fmt::format(" (and (bvule {} R) (bvule R {}))", bvtxt(iw_, lo), bvtxt(iw_, hi));
      }
    }
    if (v.empty()) return {s_.bool_val(false), "false"};
    return {smt::any_of(v, s_.bool_val(false)), !text_ ? "" : v.size() == 1 ? t.substr(1) : "(or" + t + ")"};
  }

  // The side's final terms; `src` is the source variable its multiplicities are read at.
  Side side(const std::string& name, const engine::LoweredProgram& layout, const engine::LoweredProgram& steps,
            const Term& src) {
    CountState st(eq_.k);
    for (const auto& x : layout) st.apply(x);
    const int k = eq_.k;
    // Terms of step t for each device; text names of the defined functions.
    std::vector<Term> cur(k);
    const Term one = mval(1), zero = mval(0);
    const std::string sig = fmt::format("((r (_ BitVec {})) (s (_ BitVec {}))) (_ BitVec {})", iw_, iw_, mw_);
    std::vector<std::string> fname(k);
    for (int d = 0; d < k; ++d) {
      const Term dv = ival(static_cast<std::uint64_t>(d));
      cur[d] = {smt::ite(src.t == dv.t, one.t, zero.t), ""};
      if (text_) {
        fname[d] = fmt::format("{}0_{}", name, d);
        out_ += fmt::format("(define-fun {} {} (ite (= s {}) {} {}))\n", fname[d], sig, dv.txt, one.txt, zero.txt);
      }
    }
    for (std::size_t t = 0; t < steps.size(); ++t) {
      const CountPlan plan = st.plan(steps[t]);
      std::vector<Term> next = cur;
      std::vector<std::string> nname = fname;
      std::vector<std::string> body(k);  // text of the new definition, when changed
      for (int d = 0; d < k; ++d) body[d] = text_ ? fmt::format("({} r s)", fname[d]) : "";
      for (const auto& u : plan.updates) {
        if (u.rows.empty()) continue;
        const Term in = member(u.rows);
        smt::Term val;
        std::string vt;
        if (u.kind == CountUpdate::Copy) {
          val = cur[u.sources[0]].t;
          if (text_) vt = fmt::format("({} r s)", fname[u.sources[0]]);
        } else {
          std::vector<smt::Term> a;
          for (int x : u.sources) {
            a.push_back(cur[x].t);
            if (text_) vt += fmt::format(" ({} r s)", fname[x]);
          }
          val = a.size() == 1 ? a[0] : smt::apply_n(smt::Op::BvAdd, a);
          if (text_) vt = a.size() == 1 ? vt.substr(1) : "(bvadd" + vt + ")";
        }
        next[u.device].t = smt::ite(in.t, val, next[u.device].t);
        if (text_) {
          // The row test reads the parameter r of the definition.
          std::string c = in.txt;
          for (std::size_t p; (p = c.find(" R")) != std::string::npos;) c.replace(p, 2, " r");
          body[u.device] = fmt::format("(ite {} {} {})", c, vt, body[u.device]);
          nname[u.device] = fmt::format("{}{}_{}", name, t + 1, u.device);
        }
      }
      if (text_)
        for (int d = 0; d < k; ++d)
          if (nname[d] != fname[d]) out_ += fmt::format("(define-fun {} {} {})\n", nname[d], sig, body[d]);
      st.apply(plan);
      cur = std::move(next);
      fname = std::move(nname);
    }
    Side out;
    for (int d = 0; d < k; ++d) {
      out.m.push_back({cur[d].t, text_ ? fmt::format("({} R {})", fname[d], src.txt) : ""});
      out.own.push_back(member(st.rows(d)));
    }
    return out;
  }

  // v[dev] for a device variable: ite chain.
  Term select(const Term& dev, const std::vector<Term>& v) {
    Term acc = v.back();
    for (int d = static_cast<int>(v.size()) - 2; d >= 0; --d) {
      const Term dv = ival(static_cast<std::uint64_t>(d));
      acc = {smt::ite(dev.t == dv.t, v[d].t, acc.t),
             text_ ? fmt::format("(ite (= {} {}) {} {})", dev.txt, dv.txt, v[d].txt, acc.txt) : ""};
    }
    return acc;
  }

  smt::Solver& s_;
  const Equation& eq_;
  bool text_;
  unsigned iw_ = 1, mw_ = 2;
  Term D_, R_, J_;
  std::string out_;
  std::vector<int> cls_, rep_;  // row -> class; class -> first row
};

// Whether (d, r, j) is a difference under the counting semantics.
bool differs_at(const CountState& a, const CountState& b, RuleCompare c, int d, int r, int j) {
  if (c == RuleCompare::Transpose) {
    const std::int64_t x = a.owns(d, r) ? a.mult(d, r, j) : 0;
    const std::int64_t y = b.owns(j, r) ? b.mult(j, r, d) : 0;
    return x != y;
  }
  if (a.owns(d, r) != b.owns(d, r)) return true;
  return a.owns(d, r) && a.mult(d, r, j) != b.mult(d, r, j);
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Asks one query of every solver of the pool, in order: `build(solver, want_text)` adds the query
// to the solver and returns its SMT-LIB text (kept, with its hash, from the first solver that gives
// one); after sat, `witness(solver)` reads (device, chunk, source) from the model. z3 answers
// between push and pop (one incremental solver), cvc5 on a fresh solver per query (SolverPool).
template <class Build, class Witness>
std::vector<SolverRun> ask_solvers(SolverPool& pool, std::string& smtlib, std::string& hash, Build&& build,
                                   Witness&& witness) {
  std::vector<SolverRun> runs;
  for (std::size_t si = 0; si < pool.kinds.size(); ++si) {
    smt::Solver& s = pool.get(si);
    const bool inc = pool.kinds[si] == smt::SolverKind::Z3;
    if (inc) s.push();
    SolverRun run;
    run.solver = s.name();
    run.version = s.version();
    const auto t0 = std::chrono::steady_clock::now();
    std::string text = build(s, smtlib.empty());
    run.result = s.check();
    run.ms = ms_since(t0);
    if (run.result == smt::Result::sat) run.witness = witness(s);
    if (run.result == smt::Result::unknown) run.reason = s.reason_unknown();
    if (smtlib.empty() && !text.empty()) {
      smtlib = std::move(text);
      hash = fnv1a64_hex(smtlib);
    }
    if (inc) s.pop();
    runs.push_back(std::move(run));
  }
  return runs;
}

// Every solver must answer unsat, or sat with a witness the replay confirms; the replay must agree.
void conclude(EquationResult& res, const CountState& a, const CountState& b, RuleCompare compare) {
  bool all_unsat = true, all_sat = true;
  for (const auto& r : res.runs) {
    all_unsat = all_unsat && r.result == smt::Result::unsat;
    all_sat = all_sat && r.result == smt::Result::sat;
    if (r.result == smt::Result::unknown) {
      res.problem = fmt::format("{} answered unknown ({})", r.solver, r.reason.empty() ? "no reason" : r.reason);
      return;
    }
    if (r.witness && !differs_at(a, b, compare, (*r.witness)[0], (*r.witness)[1], (*r.witness)[2])) {
      res.problem = fmt::format(
          "{}'s witness (device {}, chunk {}, source {}) is not a difference under the "
          "counting replay",
          r.solver, (*r.witness)[0], (*r.witness)[1], (*r.witness)[2]);
      return;
    }
  }
  if (!all_unsat && !all_sat) {
    std::string who;
    for (const auto& r : res.runs)
      who += fmt::format("{}{} {}", who.empty() ? "" : ", ", r.solver, smt::to_string(r.result));
    res.problem = "the solvers disagree: " + who;
    return;
  }
  if (all_unsat && res.difference) {
    res.problem = "the solvers say equal but the counting replay finds " + res.difference->describe();
    return;
  }
  if (all_sat && !res.difference) {
    res.problem = "the solvers say the sides differ but the counting replay finds them equal";
    return;
  }
  res.verdict = all_unsat ? EquationResult::Equal : EquationResult::Differ;
}

}  // namespace

const char* to_string(EquationResult::Verdict v) {
  switch (v) {
    case EquationResult::Equal:
      return "equal";
    case EquationResult::Differ:
      return "differ";
    default:
      return "unknown";
  }
}

const char* to_string(RuleProof::Status s) {
  switch (s) {
    case RuleProof::Proved:
      return "proved";
    case RuleProof::Refuted:
      return "refuted";
    case RuleProof::Unknown:
      return "unknown";
    default:
      return "error";
  }
}

std::string fnv1a64_hex(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

SolverPool::SolverPool(const std::vector<smt::SolverKind>& kinds, unsigned timeout_ms)
    : kinds(kinds), timeout_ms(timeout_ms) {
  smt::SolverOptions o;
  o.timeout_ms = timeout_ms;
  for (auto k : kinds) solvers.push_back(k == smt::SolverKind::Z3 ? std::make_unique<smt::Solver>(k, o) : nullptr);
}

smt::Solver& SolverPool::get(std::size_t i) {
  if (kinds[i] == smt::SolverKind::Z3) return *solvers[i];
  // cvc5: a fresh non-incremental solver per query (eager bit-blasting; 3x faster than push/pop).
  smt::SolverOptions o;
  o.timeout_ms = timeout_ms;
  o.incremental = false;
  solvers[i] = std::make_unique<smt::Solver>(kinds[i], o);
  return *solvers[i];
}
SolverPool::~SolverPool() = default;

EquationResult solve_equation(const Equation& eq, const std::vector<smt::SolverKind>& solvers, unsigned timeout_ms) {
  SolverPool pool(solvers, timeout_ms);
  return solve_equation(eq, pool);
}

EquationResult solve_equation(const Equation& eq, SolverPool& pool) {
  if (eq.k < 1) throw p2v::Error("an equation needs at least one device");
  EquationResult res;
  const CountState a = engine::run_lowered_side(eq.k, eq.lhs_layout, eq.lhs);
  const CountState b = engine::run_lowered_side(eq.k, eq.rhs_layout, eq.rhs);
  res.difference = engine::compare_counting(a, b, eq.compare);
  std::unique_ptr<Encoder> enc;
  res.runs = ask_solvers(
      pool, res.smtlib, res.hash,
      [&](smt::Solver& s, bool text) {
        enc = std::make_unique<Encoder>(s, eq, text);
        enc->encode();
        return enc->text();
      },
      [&](smt::Solver& s) {
        return std::optional<std::array<int, 3>>{std::array<int, 3>{
            static_cast<int>(s.value_u64(enc->D())), enc->row_of_class(static_cast<int>(s.value_u64(enc->R()))),
            static_cast<int>(s.value_u64(enc->J()))}};
      });
  conclude(res, a, b, eq.compare);
  return res;
}

namespace {
Equation rule_equation(const engine::Rule& rule, const std::vector<int>& shape) {
  Equation eq;
  eq.k = 1;
  for (int n : shape) eq.k *= n;
  eq.lhs_layout = engine::lower_grid(rule.lhs.layout, shape);
  eq.lhs = engine::lower_grid(rule.lhs.steps, shape);
  eq.rhs_layout = engine::lower_grid(rule.rhs.layout, shape);
  eq.rhs = engine::lower_grid(rule.rhs.steps, shape);
  eq.compare = rule.compare;
  return eq;
}

std::string shape_text(const std::vector<int>& s) { return fmt::format("{}", fmt::join(s, "x")); }
}  // namespace

RuleEncoding parse_rule_encoding(const std::string& s) {
  if (s == "auto") return RuleEncoding::Auto;
  if (s == "concrete") return RuleEncoding::Concrete;
  if (s == "per-digit") return RuleEncoding::PerDigit;
  throw p2v::Error(fmt::format("--encoding '{}': expected auto, concrete or per-digit", s));
}

namespace {
// One grid shape with the per-digit encoding: the closed forms must match the counting replay of
// both sides on the shape; then each solver answers the per-digit query specialised to the shape.
EquationResult solve_digit_shape(const engine::Rule& rule, const DigitRule& dr, const std::vector<int>& shape,
                                 SolverPool& pool) {
  EquationResult res;
  const CountState a = engine::run_side(rule.lhs, shape), b = engine::run_side(rule.rhs, shape);
  res.difference = engine::compare_counting(a, b, rule.compare);
  const std::string mismatch = dr.replay_check(shape, &a, &b);
  if (!mismatch.empty()) {
    res.problem = "the per-digit closed forms disagree with the counting replay: " + mismatch;
    return res;
  }
  DigitRule::Query q;
  res.runs = ask_solvers(
      pool, res.smtlib, res.hash,
      [&](smt::Solver& s, bool) {
        q = dr.query(&s, &shape);
        return q.text;
      },
      [&](smt::Solver& s) { return std::optional<std::array<int, 3>>{dr.witness(s, q, shape)}; });
  conclude(res, a, b, rule.compare);
  return res;
}

// The all-sizes query: each solver must answer unsat.
void prove_all_sizes(const engine::Rule& rule, const DigitRule& dr, SolverPool& pool, RuleProof::AllSizes& out) {
  const auto t0 = std::chrono::steady_clock::now();
  out.asked = true;
  out.status = "unknown";
  if (!dr.ok()) {
    out.reason = dr.reason();
  } else if (dr.size_dependent()) {
    out.forms = dr.forms_text();
    out.reason =
        "a closed-form multiplicity depends on a group size (n_x), which the equality-logic query "
        "cannot state";
  } else {
    out.forms = dr.forms_text();
    out.runs = ask_solvers(
        pool, out.smtlib, out.hash, [&](smt::Solver& s, bool) { return dr.query(&s, nullptr).text; },
        [](smt::Solver&) { return std::optional<std::array<int, 3>>{}; });
    bool all_unsat = true;
    for (const auto& run : out.runs) {
      all_unsat = all_unsat && run.result == smt::Result::unsat;
      if (run.result != smt::Result::unsat && out.reason.empty())
        out.reason = fmt::format("{} answered {} on the all-sizes query{}", run.solver, smt::to_string(run.result),
                                 run.reason.empty() ? "" : " (" + run.reason + ")");
    }
    if (all_unsat) out.status = "proved";
  }
  (void)rule;
  out.ms = ms_since(t0);
}
}  // namespace

RuleProof prove_rule(const engine::Rule& rule, int max_devices, const std::vector<smt::SolverKind>& solvers,
                     unsigned timeout_ms, RuleEncoding encoding, bool all_sizes) {
  if (max_devices < 2) throw p2v::Error(fmt::format("--max-devices {}: need at least 2", max_devices));
  RuleProof p;
  p.rule_id = rule.id;
  p.max_devices = max_devices;
  const auto t0 = std::chrono::steady_clock::now();
  SolverPool pool(solvers, timeout_ms);
  const DigitRule dr(rule);
  if (encoding == RuleEncoding::PerDigit && !dr.ok()) {
    p.status = RuleProof::Unknown;
    p.message = "--encoding per-digit: " + dr.reason();
    p.ms = ms_since(t0);
    return p;
  }
  const bool digits = dr.ok() && encoding != RuleEncoding::Concrete;
  if (digits) {
    p.encoding = "per-digit";
    p.radix_order = dr.order_text();
  }
  for (const auto& shape : engine::grid_shapes(rule.arity, max_devices)) {
    ShapeRecord rec{
        shape, digits ? solve_digit_shape(rule, dr, shape, pool) : solve_equation(rule_equation(rule, shape), pool)};
    const auto v = rec.result.verdict;
    const std::string problem = rec.result.problem;
    std::optional<engine::CountDifference> diff = rec.result.difference;
    p.shapes.push_back(std::move(rec));
    if (v == EquationResult::Unknown) {
      p.status = RuleProof::Unknown;
      p.message = fmt::format("shape {}: {}", shape_text(shape), problem);
      break;
    }
    if (v == EquationResult::Differ) {
      p.status = rule.holds ? RuleProof::Error : RuleProof::Refuted;
      int k = 1;
      for (int n : shape) k *= n;
      p.message = fmt::format("shape {} ({} devices): {}", shape_text(shape), k, diff->describe());
      if (rule.holds) p.message = "a positive rule is refuted: " + p.message;
      break;
    }
  }
  if (p.status == RuleProof::Unknown && p.message.empty()) {
    if (rule.holds) {
      p.status = RuleProof::Proved;
      p.scope = fmt::format("proved for every grid shape up to {} devices only (no all-sizes proof)", max_devices);
      if (all_sizes) {
        prove_all_sizes(rule, dr, pool, p.all_sizes);
        if (p.all_sizes.status == "proved")
          p.scope = fmt::format(
              "proved for every size (per-digit closed forms, z3 and cvc5 unsat) and on every grid shape up to {} "
              "devices",
              max_devices);
      }
    } else {
      p.status = RuleProof::Error;
      p.message = fmt::format("a negative rule holds on every shape up to {} devices", max_devices);
    }
  }
  p.ms = ms_since(t0);
  return p;
}

RuleCertificate make_rule_certificate(const engine::Rule& rule, const RuleProof& proof) {
  RuleCertificate c;
  c.rule = rule.id;
  c.title = rule.title;
  c.side_conditions = rule.side_conditions;
  c.lhs = engine::rule_side_text(rule.lhs);
  c.rhs = engine::rule_side_text(rule.rhs);
  c.compare = rule.compare == RuleCompare::Equal ? "equal" : "transpose";
  c.expected = rule.holds ? "holds" : "fails";
  c.status = to_string(proof.status);
  c.scope = proof.scope;
  c.message = proof.message;
  c.max_devices = proof.max_devices;
  c.ms = proof.ms;
  for (const auto& s : proof.shapes) {
    RuleCertShape sh;
    sh.shape = s.shape;
    sh.verdict = to_string(s.result.verdict);
    sh.query_hash = s.result.hash;
    for (const auto& r : s.result.runs)
      sh.answers.push_back({r.solver, r.version, smt::to_string(r.result), r.ms, r.witness});
    if (s.result.difference) {
      const auto& d = *s.result.difference;
      sh.counterexample = RuleCertCounterexample{d.device, d.row, d.source, d.lhs, d.rhs};
    }
    c.shapes.push_back(std::move(sh));
  }
  if (!proof.shapes.empty()) {
    c.smtlib_shape = proof.shapes.back().shape;
    c.smtlib = proof.shapes.back().result.smtlib;
  }
  c.encoding = proof.encoding;
  if (proof.encoding == "per-digit") c.radix_order = proof.radix_order;
  if (proof.all_sizes.asked) {
    const auto& as = proof.all_sizes;
    RuleCertAllSizes a{as.status, as.reason, as.forms, as.hash, as.smtlib, as.ms, {}};
    for (const auto& r : as.runs) a.answers.push_back({r.solver, r.version, smt::to_string(r.result), r.ms, {}});
    c.all_sizes = std::move(a);
  }
  return c;
}

namespace {
nlohmann::json answers_json(const std::vector<RuleCertAnswer>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : v) {
    nlohmann::json a{{"solver", r.solver}, {"version", r.version}, {"answer", r.answer}, {"ms", r.ms}};
    if (r.witness) a["witness"] = *r.witness;
    out.push_back(std::move(a));
  }
  return out;
}
}  // namespace

std::string write_rule_certificate(const RuleCertificate& c) {
  nlohmann::json j;
  j["format"] = fmt::format("{}/{}", kRuleCertificateFamily, c.version);
  j["kind"] = c.kind;
  j["rule"] = c.rule;
  j["title"] = c.title;
  j["side_conditions"] = c.side_conditions;
  j["lhs"] = c.lhs;
  j["rhs"] = c.rhs;
  j["compare"] = c.compare;
  j["expected"] = c.expected;
  j["status"] = c.status;
  j["scope"] = c.scope;
  j["message"] = c.message;
  j["max_devices"] = c.max_devices;
  j["ms"] = c.ms;
  j["shapes"] = nlohmann::json::array();
  for (const auto& s : c.shapes) {
    nlohmann::json sj{{"shape", s.shape}, {"verdict", s.verdict}, {"query_hash", s.query_hash}};
    sj["answers"] = answers_json(s.answers);
    if (s.counterexample) {
      const auto& d = *s.counterexample;
      sj["counterexample"] = {{"device", d.device},
                              {"chunk", d.chunk},
                              {"source", d.source},
                              {"lhs", d.lhs ? nlohmann::json(*d.lhs) : nlohmann::json(nullptr)},
                              {"rhs", d.rhs ? nlohmann::json(*d.rhs) : nlohmann::json(nullptr)}};
    }
    j["shapes"].push_back(std::move(sj));
  }
  if (c.smtlib_shape) j["smtlib_shape"] = *c.smtlib_shape;
  if (c.smtlib) j["smtlib"] = *c.smtlib;
  if (c.encoding) j["encoding"] = *c.encoding;
  if (c.radix_order) j["radix_order"] = *c.radix_order;
  if (c.all_sizes) {
    const auto& as = *c.all_sizes;
    nlohmann::json a{{"status", as.status},         {"reason", as.reason}, {"closed_forms", as.closed_forms},
                     {"query_hash", as.query_hash}, {"smtlib", as.smtlib}, {"ms", as.ms}};
    a["answers"] = answers_json(as.answers);
    j["all_sizes"] = std::move(a);
  }
  return j.dump(1);
}

std::string rule_certificate_json(const engine::Rule& rule, const RuleProof& proof) {
  return write_rule_certificate(make_rule_certificate(rule, proof));
}

namespace {
namespace jr = engine::json_read;
std::vector<RuleCertAnswer> read_answers(const jr::At& at, bool bounded) {
  std::vector<RuleCertAnswer> out;
  at.each([&](const jr::At& e) {
    jr::Object o(e);
    RuleCertAnswer a;
    a.solver = o["solver"].string();
    a.version = o["version"].string();
    a.answer = o["answer"].string();
    a.ms = o["ms"].number();
    if (bounded)
      if (auto w = o.optional("witness")) {
        const auto v = w->ints();
        if (v.size() != 3) w->fail("expected (device, chunk, source)");
        a.witness = std::array<int, 3>{v[0], v[1], v[2]};
      }
    o.finish();
    out.push_back(std::move(a));
  });
  return out;
}
std::optional<std::int64_t> nullable_int(const jr::At& at) {
  if (at.is_null()) return std::nullopt;
  return at.integer();
}
}  // namespace

RuleCertificate read_rule_certificate(const std::string& text, const std::string& origin) {
  const nlohmann::json doc = engine::parse_json(text, origin);
  RuleCertificate c;
  jr::Object o(jr::At(doc, origin, ""));
  c.version = jr::check_format(o, kRuleCertificateFamily, kRuleCertificateVersion);
  c.kind = o["kind"].string();
  c.rule = o["rule"].string();
  c.title = o["title"].string();
  c.side_conditions = o["side_conditions"].string();
  c.lhs = o["lhs"].string();
  c.rhs = o["rhs"].string();
  c.compare = o["compare"].string();
  c.expected = o["expected"].string();
  c.status = o["status"].string();
  c.scope = o["scope"].string();
  c.message = o["message"].string();
  c.max_devices = o["max_devices"].int32();
  c.ms = o["ms"].number();
  o["shapes"].each([&](const jr::At& e) {
    jr::Object so(e);
    RuleCertShape sh;
    sh.shape = so["shape"].ints();
    sh.verdict = so["verdict"].string();
    sh.query_hash = so["query_hash"].string();
    sh.answers = read_answers(so["answers"], true);
    if (auto ce = so.optional("counterexample")) {
      jr::Object co(*ce);
      RuleCertCounterexample x;
      x.device = co["device"].int32();
      x.chunk = co["chunk"].int32();
      x.source = co["source"].int32();
      x.lhs = nullable_int(co["lhs"]);
      x.rhs = nullable_int(co["rhs"]);
      co.finish();
      sh.counterexample = x;
    }
    so.finish();
    c.shapes.push_back(std::move(sh));
  });
  if (auto v = o.optional("smtlib_shape")) c.smtlib_shape = v->ints();
  if (auto v = o.optional("smtlib")) c.smtlib = v->string();
  if (auto v = o.optional("encoding")) c.encoding = v->string();
  if (auto v = o.optional("radix_order")) c.radix_order = v->string();
  if (auto v = o.optional("all_sizes")) {
    jr::Object ao(*v);
    RuleCertAllSizes as;
    as.status = ao["status"].string();
    as.reason = ao["reason"].string();
    as.closed_forms = ao["closed_forms"].string();
    as.query_hash = ao["query_hash"].string();
    as.smtlib = ao["smtlib"].string();
    as.ms = ao["ms"].number();
    as.answers = read_answers(ao["answers"], false);
    ao.finish();
    c.all_sizes = std::move(as);
  }
  o.finish();
  return c;
}

namespace {
struct BadCert : std::runtime_error {
  using std::runtime_error::runtime_error;
};
int in_range(int v, int lo, int hi, const std::string& what) {
  if (v < lo || v > hi)
    throw BadCert(what + ": an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + " expected");
  return v;
}
void non_negative(double v, const std::string& what) {
  if (!(v >= 0)) throw BadCert(what + ": a non-negative number expected");
}
// The query of one shape, as the prover builds it (the SMT-LIB text beside the solver terms).
std::string rule_query(const Equation& eq) {
  smt::SolverOptions o;
  smt::Solver s(smt::SolverKind::Z3, o);
  Encoder enc(s, eq, true);
  enc.encode();
  return enc.text();
}
}  // namespace

std::string equation_query(const Equation& eq) { return rule_query(eq); }

std::string check_rule_certificate(const std::string& text, std::string* summary,
                                   std::vector<std::array<std::string, 3>>* claims, bool resolve) {
  std::vector<std::array<std::string, 3>> cl;
  try {
    // Strict reading first (every field of the format, no other, types checked), then what it claims.
    const RuleCertificate c = read_rule_certificate(text, "rule certificate");
    if (c.kind != "rule") return "kind: expected \"rule\"";
    const engine::Rule& rule = engine::find_rule(c.rule);
    if (c.lhs != engine::rule_side_text(rule.lhs) || c.rhs != engine::rule_side_text(rule.rhs))
      return "the certificate's sides are not the catalogue's rule " + rule.id;
    if (c.title != rule.title) return "title: not the catalogue's";
    if (c.side_conditions != rule.side_conditions) return "side_conditions: not the catalogue's";
    if (c.compare != (rule.compare == RuleCompare::Equal ? "equal" : "transpose"))
      return "compare: not the catalogue's";
    const std::string expected = rule.holds ? "holds" : "fails";
    if (c.expected != expected) return "expected: the catalogue says the rule " + expected;
    cl.push_back(
        {"lhs, rhs, title, side_conditions, compare, expected", "the catalogue's rule " + rule.id, "re-derived"});
    const std::string& status = c.status;
    if (status != "proved" && status != "refuted") return "status " + status + " certifies nothing";
    if (status != (rule.holds ? "proved" : "refuted"))
      return "status " + status + " contradicts the catalogue (the rule " + expected + ")";
    // p2v rules prove certifies 2..kMaxRuleDevices devices (tools/cmd_rules.cpp); a larger bound
    // would make the shape list below run for hours (2000000000 hung p2v check).
    const int N = in_range(c.max_devices, 2, kMaxRuleDevices, "max_devices");
    non_negative(c.ms, "ms");
    const auto shapes = engine::grid_shapes(rule.arity, N);
    const auto& cs = c.shapes;
    if (cs.empty()) return "shapes: non-empty array expected";
    if (status == "proved" && cs.size() != shapes.size())
      return fmt::format("proved, but lists {} shapes of the {} up to {} devices", cs.size(), shapes.size(), N);
    std::string message, scope;
    if (status == "proved")
      scope = fmt::format("proved for every grid shape up to {} devices only (no all-sizes proof)", N);
    // The bounded queries' encoding (older certificates have none: concrete).
    const std::string encoding = c.encoding.value_or("concrete");
    if (encoding != "concrete" && encoding != "per-digit") return "encoding: concrete or per-digit expected";
    const DigitRule dr(rule);
    if (encoding == "per-digit") {
      if (!dr.ok()) return "encoding per-digit, but the rule is outside the per-digit fragment: " + dr.reason();
      if (c.radix_order != dr.order_text()) return "radix_order: expected \"" + dr.order_text() + "\"";
    } else if (c.radix_order) {
      return "radix_order: only with the per-digit encoding";
    }
    std::unique_ptr<SolverPool> pool;
    if (resolve) pool = std::make_unique<SolverPool>(std::vector{smt::SolverKind::Z3, smt::SolverKind::Cvc5}, 0u);
    std::string last_query;
    std::map<std::string, std::string> versions;
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const std::string at = fmt::format("shapes[{}]", i);
      const RuleCertShape& sh = cs[i];
      std::vector<int> shape;
      for (int v : sh.shape) shape.push_back(in_range(v, 1, N, at + ".shape"));
      if (i >= shapes.size() || shape != shapes[i])
        return fmt::format("{}: shape {} is not shape number {} of the rule's shapes, in order", at, shape_text(shape),
                           i + 1);
      const bool last = i + 1 == cs.size();
      const bool differ = status == "refuted" && last;
      const std::string want = differ ? "sat" : "unsat";
      if (sh.verdict != (differ ? "differ" : "equal"))
        return fmt::format("{}.verdict: expected {} (the replay and the status say so)", at,
                           differ ? "differ" : "equal");
      const auto a = engine::run_side(rule.lhs, shape), b = engine::run_side(rule.rhs, shape);
      const auto diff = engine::compare_counting(a, b, rule.compare);
      int k = 1;
      for (int n : shape) k *= n;
      if (!differ && diff) return fmt::format("shape {}: the replay finds {}", shape_text(shape), diff->describe());
      if (differ && !diff)
        return fmt::format("shape {}: claimed counterexample, but the replay finds the sides equal", shape_text(shape));
      // The query: re-derived from the rule and the shape; its hash must be the recorded one.
      const Equation eq = rule_equation(rule, shape);
      if (encoding == "per-digit") {
        const std::string mm = dr.replay_check(shape, &a, &b);
        if (!mm.empty())
          return fmt::format("shape {}: the per-digit closed forms are not the replay's: {}", shape_text(shape), mm);
      }
      const std::string query = encoding == "per-digit" ? dr.query(nullptr, &shape).text : rule_query(eq);
      if (sh.query_hash != fnv1a64_hex(query))
        return fmt::format("{}.query_hash: not the hash of the shape's query ({})", at, fnv1a64_hex(query));
      last_query = query;
      const auto& ans = sh.answers;
      if (ans.size() != 2) return at + ".answers: one answer of z3 and one of cvc5 expected";
      std::vector<std::string> solvers;
      for (std::size_t q = 0; q < ans.size(); ++q) {
        const std::string aat = fmt::format("{}.answers[{}]", at, q);
        solvers.push_back(ans[q].solver);
        const std::string& version = ans[q].version;
        if (version.empty()) return aat + ".version: empty";
        if (!versions.emplace(solvers.back(), version).second && versions[solvers.back()] != version)
          return aat + ".version: differs from the solver's other answers (one run per solver)";
        non_negative(ans[q].ms, aat + ".ms");
        if (ans[q].answer != want)
          return fmt::format("shape {}: {} answered {}, not {}", shape_text(shape), solvers.back(), ans[q].answer,
                             want);
        if (ans[q].witness.has_value() != differ) return aat + ".witness: present exactly with a sat answer";
        if (differ) {
          const auto& w = *ans[q].witness;
          const int d = in_range(w[0], 0, k - 1, aat + ".witness"), r = in_range(w[1], 0, k - 1, aat + ".witness"),
                    src = in_range(w[2], 0, k - 1, aat + ".witness");
          if (!differs_at(a, b, rule.compare, d, r, src))
            return aat + ".witness: not a difference under the counting replay";
        }
      }
      if (solvers != std::vector<std::string>{"z3", "cvc5"}) return at + ".answers: z3's then cvc5's expected";
      if (resolve) {
        const EquationResult again =
            encoding == "per-digit" ? solve_digit_shape(rule, dr, shape, *pool) : solve_equation(eq, *pool);
        for (std::size_t q = 0; q < again.runs.size(); ++q)
          if (smt::to_string(again.runs[q].result) != want)
            return fmt::format("shape {}: re-solved, {} answers {}, the certificate {}", shape_text(shape),
                               again.runs[q].solver, smt::to_string(again.runs[q].result), want);
      }
      if (sh.counterexample.has_value() != differ) return at + ".counterexample: present exactly when the sides differ";
      if (differ) {
        const auto& ce = *sh.counterexample;
        if (ce.device != diff->device || ce.chunk != diff->row || ce.source != diff->source || ce.lhs != diff->lhs ||
            ce.rhs != diff->rhs)
          return fmt::format("shape {}: the counterexample is not the replay's first difference ({})",
                             shape_text(shape), diff->describe());
        message = fmt::format("shape {} ({} devices): {}", shape_text(shape), k, diff->describe());
      }
    }
    // The all-sizes proof: closed forms and query re-derived, the closed forms replayed on every
    // listed shape, the answers recorded (or re-solved).
    bool all_sizes_proved = false;
    if (c.all_sizes) {
      if (!rule.holds) return "all_sizes: only positive rules have an all-sizes proof";
      if (status != "proved") return "all_sizes: only after the bounded proof";
      const auto& as = *c.all_sizes;
      non_negative(as.ms, "all_sizes.ms");
      const std::string& st = as.status;
      if (st != "proved" && st != "unknown") return "all_sizes.status: proved or unknown expected";
      const std::string forms = dr.ok() ? dr.forms_text() : "";
      if (as.closed_forms != forms) return "all_sizes.closed_forms: not the rule's per-digit closed forms";
      const bool can = dr.ok() && !dr.size_dependent();
      const std::string q = can ? dr.query(nullptr, nullptr).text : "";
      if (as.smtlib != q) return "all_sizes.smtlib: not the rule's all-sizes query";
      if (as.query_hash != (can ? fnv1a64_hex(q) : ""))
        return "all_sizes.query_hash: not the hash of the all-sizes query";
      const auto& ans = as.answers;
      if (ans.size() != (can ? 2u : 0u))
        return can ? "all_sizes.answers: one answer of z3 and one of cvc5 expected"
                   : "all_sizes.answers: none expected";
      bool both_unsat = can;
      std::vector<std::string> who;
      for (std::size_t q2 = 0; q2 < ans.size(); ++q2) {
        const std::string aat = fmt::format("all_sizes.answers[{}]", q2);
        who.push_back(ans[q2].solver);
        if (ans[q2].version.empty()) return aat + ".version: empty";
        non_negative(ans[q2].ms, aat + ".ms");
        const std::string& x = ans[q2].answer;
        if (x != "sat" && x != "unsat" && x != "unknown") return aat + ".answer: sat, unsat or unknown expected";
        both_unsat = both_unsat && x == "unsat";
      }
      if (can && who != std::vector<std::string>{"z3", "cvc5"}) return "all_sizes.answers: z3's then cvc5's expected";
      if ((st == "proved") != both_unsat)
        return "all_sizes.status: " + st + " but the answers say " + (both_unsat ? "proved" : "not proved");
      if (st == "unknown" && as.reason.empty()) return "all_sizes.reason: an unknown proof needs its reason";
      if (st == "proved" && !as.reason.empty()) return "all_sizes.reason: empty when proved";
      if (can && encoding != "per-digit") {  // per-digit: already replayed shape by shape above
        for (const auto& shape : shapes) {
          const std::string mm = dr.replay_check(shape);
          if (!mm.empty())
            return fmt::format("all_sizes: on shape {} the closed forms are not the replay's: {}", shape_text(shape),
                               mm);
        }
      }
      if (can && resolve) {
        SolverPool p2({smt::SolverKind::Z3, smt::SolverKind::Cvc5}, 0u);
        for (std::size_t q2 = 0; q2 < 2; ++q2) {
          smt::Solver& sv = p2.get(q2);
          dr.query(&sv, nullptr);
          const std::string again = smt::to_string(sv.check());
          if (again != ans[q2].answer)
            return fmt::format("all_sizes: re-solved, {} answers {}, the certificate {}", sv.name(), again,
                               ans[q2].answer);
        }
      }
      all_sizes_proved = st == "proved";
      cl.push_back({"all_sizes.closed_forms, all_sizes.smtlib, all_sizes.query_hash",
                    "the per-digit closed forms of both sides and the all-sizes query (rebuilt from the rule)",
                    "re-derived"});
      if (can)
        cl.push_back({"all_sizes.closed_forms",
                      fmt::format("agree with the counting replay on all {} shapes up to {} devices", shapes.size(), N),
                      "replayed"});
      cl.push_back({"all_sizes.answers[].answer",
                    all_sizes_proved ? "z3 and cvc5 answered unsat: the closed forms are equal for every size"
                                     : "the all-sizes query was not proved (" + st + ")",
                    resolve ? "re-solved" : "recorded"});
      cl.push_back({"all_sizes.ms", "the time of the all-sizes proof", "recorded"});
      if (can) {
        cl.push_back({"all_sizes.answers[].ms", "each all-sizes answer's time", "recorded"});
        cl.push_back({"all_sizes.answers[].version", "the solvers' versions (all-sizes query)", "recorded"});
      }
      cl.push_back({"all_sizes (per-digit semantics)",
                    "each collective's rule on the closed forms, for every size: by hand in docs/rules.md, checked "
                    "here only on the listed shapes",
                    "recorded"});
    }
    if (all_sizes_proved)
      scope = fmt::format(
          "proved for every size (per-digit closed forms, z3 and cvc5 unsat) and on every grid shape up to {} devices",
          N);
    if (c.scope != scope) return "scope: expected \"" + scope + "\"";
    if (c.message != message) return "message: expected \"" + message + "\"";
    if (!c.smtlib || !c.smtlib_shape) return "smtlib, smtlib_shape: missing";
    if (*c.smtlib_shape != cs.back().shape) return "smtlib_shape: not the last shape";
    if (*c.smtlib != last_query) return "smtlib: not the last shape's query";
    cl.push_back({"shapes[].verdict, counterexample, witness, message, scope",
                  fmt::format("{} shapes up to {} devices: {}", cs.size(), N,
                              status == "proved" ? "the sides are equal" : "equal, then a counterexample"),
                  "re-derived"});
    cl.push_back(
        {"shapes[].query_hash, smtlib", "each shape's query (rebuilt from the rule and the shape)", "re-derived"});
    cl.push_back({"shapes[].answers[].answer", "z3 and cvc5 answered every query as recorded",
                  resolve ? "re-solved" : "recorded"});
    cl.push_back({"ms", "the time of the proof", "recorded"});
    cl.push_back({"shapes[].answers[].ms", "each answer's time", "recorded"});
    cl.push_back({"shapes[].answers[].version", "the solvers' versions", "recorded"});
    if (status == "refuted")
      cl.push_back(
          {"max_devices", "the largest grid the search was asked for (the counterexample is within it)", "recorded"});
    if (summary)
      *summary = fmt::format(
          "rule {}: {} (re-derived: {} shapes up to {} devices replayed with the counting semantics; queries "
          "re-derived and hashed); solver answers {}",
          rule.id,
          status == "proved" ? "the sides are equal on every grid shape up to " + std::to_string(N) + " devices"
                             : "refuted by the counterexample on the last shape",
          cs.size(), N, resolve ? "re-solved by z3 and cvc5" : "recorded by z3+cvc5, not re-checked");
    if (summary && all_sizes_proved)
      *summary += fmt::format(
          "; for every size: the per-digit closed forms (re-derived, replayed on the {} shapes) are equal by z3's and "
          "cvc5's unsat ({}), the per-digit semantics by hand (docs/rules.md)",
          shapes.size(), resolve ? "re-solved" : "recorded");
    if (claims) *claims = std::move(cl);
    return "";
  } catch (const BadCert& e) {
    return e.what();
  } catch (const p2v::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("malformed certificate: ") + e.what();
  }
}

}  // namespace p2v::encodings
