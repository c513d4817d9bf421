#include "p2v/encodings/smt.hpp"

#include <stdexcept>

#include "backend.hpp"
#include "p2v/engine/error.hpp"

namespace p2v::encodings::smt {

const char* to_string(Result r) {
  switch (r) {
    case Result::sat:
      return "sat";
    case Result::unsat:
      return "unsat";
    case Result::unknown:
      return "unknown";
  }
  return "?";
}

const char* to_string(SolverKind k) { return k == SolverKind::Z3 ? "z3" : "cvc5"; }

SolverKind parse_solver_kind(const std::string& s) {
  if (s == "z3") return SolverKind::Z3;
  if (s == "cvc5") return SolverKind::Cvc5;
  throw Error("unknown solver '" + s + "': use z3 or cvc5");
}

std::vector<SolverKind> parse_solver_list(const std::string& s) {
  if (s == "both") return {SolverKind::Z3, SolverKind::Cvc5};
  if (s == "none") return {};
  if (s == "z3" || s == "cvc5") return {parse_solver_kind(s)};
  throw Error("--solver '" + s + "': use z3, cvc5 or both");
}

namespace {
unsigned result_width(Op op, const std::vector<Term>& a, unsigned p0, unsigned p1) {
  switch (op) {
    case Op::Not:
    case Op::And:
    case Op::Or:
    case Op::Implies:
    case Op::Eq:
    case Op::BvUle:
    case Op::BvUlt:
      return 0;
    case Op::Ite:
      return a.at(1).width();
    case Op::Extract:
      return p0 - p1 + 1;
    case Op::ZeroExt:
      return a.at(0).width() + p0;
    case Op::Concat:
      return a.at(0).width() + a.at(1).width();
    default:
      return a.at(0).width();
  }
}
}  // namespace

Term apply_n(Op op, const std::vector<Term>& args) {
  if (args.empty()) throw std::logic_error("smt: operation without arguments");
  Backend* b = args[0].b_;
  std::vector<int> ids;
  ids.reserve(args.size());
  for (const auto& t : args) {
    if (t.b_ != b || !b) throw std::logic_error("smt: terms of different solvers mixed");
    ids.push_back(t.id_);
  }
  const unsigned w = result_width(op, args, 0, 0);
  return Term(b, b->op(op, ids, 0, 0), w);
}

Term apply(Op op, std::initializer_list<Term> args, unsigned p0, unsigned p1) {
  std::vector<Term> v(args);
  if (v.empty()) throw std::logic_error("smt: operation without arguments");
  Backend* b = v[0].b_;
  std::vector<int> ids;
  for (const auto& t : v) {
    if (t.b_ != b || !b) throw std::logic_error("smt: terms of different solvers mixed");
    ids.push_back(t.id_);
  }
  const unsigned w = result_width(op, v, p0, p1);
  return Term(b, b->op(op, ids, p0, p1), w);
}

Term all_of(const std::vector<Term>& v, Term if_empty) {
  if (v.empty()) return if_empty;
  if (v.size() == 1) return v[0];
  return apply_n(Op::And, v);
}
Term any_of(const std::vector<Term>& v, Term if_empty) {
  if (v.empty()) return if_empty;
  if (v.size() == 1) return v[0];
  return apply_n(Op::Or, v);
}

Solver::Solver(SolverKind kind, const SolverOptions& opt) : kind_(kind) {
  b_ = kind == SolverKind::Z3 ? make_z3_backend(opt) : make_cvc5_backend(opt);
}
Solver::~Solver() = default;

std::string Solver::name() const { return b_->name(); }
std::string Solver::version() const { return b_->version(); }
std::string Solver::settings() const { return b_->settings(); }

void check_solver_options(const SolverOptions& opt) {
  if (!opt.z3_logic.empty()) Solver z3(SolverKind::Z3, opt);
  if (!opt.cvc5_options.empty()) Solver cvc5(SolverKind::Cvc5, opt);
}

std::pair<std::string, std::string> parse_option_assignment(const std::string& s, const std::string& what) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw Error(what + " '" + s + "': expected NAME=VALUE, e.g. bv-sat-solver=cryptominisat");
  return {s.substr(0, eq), s.substr(eq + 1)};
}
Term Solver::bool_val(bool v) { return Term(b_.get(), b_->bool_val(v), 0); }
Term Solver::bool_var(const std::string& n) { return Term(b_.get(), b_->bool_var(n), 0); }
Term Solver::bv_val(unsigned width, std::uint64_t v) {
  std::vector<bool> bits(width);
  for (unsigned i = 0; i < width && i < 64; ++i) bits[i] = (v >> i) & 1u;
  return bv_val(width, bits);
}
Term Solver::bv_val(unsigned width, const std::vector<bool>& bits) {
  if (width == 0 || bits.size() != width) throw std::logic_error("smt: bad bitvector constant");
  return Term(b_.get(), b_->bv_val(bits), width);
}
Term Solver::bv_var(const std::string& n, unsigned width) {
  if (width == 0) throw std::logic_error("smt: zero-width bitvector");
  return Term(b_.get(), b_->bv_var(n, width), width);
}
void Solver::add(Term t) {
  if (!t.is_bool()) throw std::logic_error("smt: asserting a non-boolean term");
  b_->add(t.id());
}
void Solver::push() { b_->push(); }
void Solver::pop() { b_->pop(); }
Result Solver::check() { return b_->check(); }
Result Solver::check_assuming(const std::vector<Term>& assumptions) {
  std::vector<int> ids;
  ids.reserve(assumptions.size());
  for (const auto& t : assumptions) ids.push_back(t.id_);
  return b_->check_assuming(ids);
}
std::string Solver::reason_unknown() const { return b_->reason_unknown(); }
bool Solver::value_bool(Term t) { return b_->value_bool(t.id()); }
std::vector<bool> Solver::value_bv(Term t) { return b_->value_bv(t.id(), t.width()); }
std::uint64_t Solver::value_u64(Term t) {
  auto bits = value_bv(t);
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bits.size() && i < 64; ++i)
    if (bits[i]) v |= std::uint64_t{1} << i;
  return v;
}
std::string Solver::proof() { return b_->proof(); }
std::size_t Solver::num_terms() const { return b_->num_terms(); }

}  // namespace p2v::encodings::smt
