#pragma once
// A small solver-neutral SMT layer (in the style of Alive2's smt/): terms over booleans and
// fixed-width bitvectors, assertions, push/pop, check with a time limit, and models. Backends:
// Z3 (C++ API) and cvc5 (C++ API, 1.0.x). No solver type appears in this header.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace p2v::encodings::smt {

enum class Result { sat, unsat, unknown };
const char* to_string(Result r);

enum class SolverKind { Z3, Cvc5 };
const char* to_string(SolverKind k);                 // "z3", "cvc5"
SolverKind parse_solver_kind(const std::string& s);  // throws p2v::Error
// "z3", "cvc5" or "both" -> list of solvers.
std::vector<SolverKind> parse_solver_list(const std::string& s);

// Operations a backend implements (n-ary where it says so).
enum class Op : std::uint8_t {
  Not,
  And,
  Or,
  Implies,
  Eq,
  Ite,  // And/Or n-ary; Eq on bool or bv
  BvNot,
  BvAnd,
  BvOr,
  BvXor,
  BvAdd,
  BvMul,  // BvAnd/BvOr/BvAdd n-ary
  BvUdiv,
  BvUrem,
  BvUle,
  BvUlt,
  Extract,  // params hi, lo
  ZeroExt,  // param: bits added
  Concat,   // first argument most significant
};

class Backend;

// A term handle, valid while its Solver lives. width() == 0 for booleans.
class Term {
 public:
  Term() = default;
  bool valid() const { return b_ != nullptr; }
  unsigned width() const { return w_; }
  bool is_bool() const { return w_ == 0; }
  int id() const { return id_; }

 private:
  friend class Solver;
  friend Term apply(Op, std::initializer_list<Term>, unsigned, unsigned);
  friend Term apply_n(Op, const std::vector<Term>&);
  Term(Backend* b, int id, unsigned w) : b_(b), id_(id), w_(w) {}
  Backend* b_ = nullptr;
  int id_ = -1;
  unsigned w_ = 0;
};

Term apply(Op op, std::initializer_list<Term> args, unsigned p0 = 0, unsigned p1 = 0);
Term apply_n(Op op, const std::vector<Term>& args);  // And, Or, BvAnd, BvOr, BvAdd

// Boolean connectives and bitvector operators.
inline Term operator!(Term a) { return apply(Op::Not, {a}); }
inline Term operator&&(Term a, Term b) { return apply(Op::And, {a, b}); }
inline Term operator||(Term a, Term b) { return apply(Op::Or, {a, b}); }
inline Term operator==(Term a, Term b) { return apply(Op::Eq, {a, b}); }
inline Term operator!=(Term a, Term b) { return !(a == b); }
inline Term operator~(Term a) { return apply(Op::BvNot, {a}); }
inline Term operator&(Term a, Term b) { return apply(Op::BvAnd, {a, b}); }
inline Term operator|(Term a, Term b) { return apply(Op::BvOr, {a, b}); }
inline Term operator^(Term a, Term b) { return apply(Op::BvXor, {a, b}); }
inline Term operator+(Term a, Term b) { return apply(Op::BvAdd, {a, b}); }
inline Term operator*(Term a, Term b) { return apply(Op::BvMul, {a, b}); }
inline Term implies(Term a, Term b) { return apply(Op::Implies, {a, b}); }
inline Term ite(Term c, Term a, Term b) { return apply(Op::Ite, {c, a, b}); }
inline Term udiv(Term a, Term b) { return apply(Op::BvUdiv, {a, b}); }
inline Term urem(Term a, Term b) { return apply(Op::BvUrem, {a, b}); }
inline Term ule(Term a, Term b) { return apply(Op::BvUle, {a, b}); }
inline Term ult(Term a, Term b) { return apply(Op::BvUlt, {a, b}); }
inline Term extract(Term a, unsigned hi, unsigned lo) { return apply(Op::Extract, {a}, hi, lo); }
inline Term zext(Term a, unsigned extra) { return apply(Op::ZeroExt, {a}, extra); }
inline Term concat(Term hi, Term lo) { return apply(Op::Concat, {hi, lo}); }
Term all_of(const std::vector<Term>& v, Term if_empty);  // n-ary And
Term any_of(const std::vector<Term>& v, Term if_empty);  // n-ary Or

// Solver set-up. Everything that changes how a solver is configured is here (no environment
// variables); Solver::settings() describes the result, and certificates record it.
struct SolverOptions {
  unsigned timeout_ms = 0;  // per check; 0 = none
  bool proofs = false;      // produce proofs (cvc5 only)
  bool incremental = true;
  // Build a model on sat (value_* need it; cvc5: produce-models). Off for queries whose answers
  // are read as sat/unsat only: Z3's SAT-based solver then skips the model conversion, about a
  // third of the closure check's time (bench_certify, four-level shape: z3 18.3 s -> 11.7 s CPU).
  bool models = true;
  // Z3: the logic the solver is created for. "" = QF_FD (Z3's incremental SAT-based solver:
  // bit-blasting, learned clauses kept across checks; 4-5x faster here than the combined solver).
  std::string z3_logic;
  // cvc5: further options (name, value), set after p2v's own (so they override them); a bad name or
  // value throws p2v::Error.
  std::vector<std::pair<std::string, std::string>> cvc5_options;
};

// Creates a solver of each kind the options configure (a Z3 logic, cvc5 options), so that a logic
// Z3 does not know or an option cvc5 refuses is reported (p2v::Error naming the flag and the valid
// choices) before any search starts.
void check_solver_options(const SolverOptions& opt);

// "name=value" -> (name, value); throws p2v::Error naming `what` (e.g. "--cvc5-option") otherwise.
std::pair<std::string, std::string> parse_option_assignment(const std::string& s, const std::string& what);

// Owns a backend (and so every term made with it). Not copyable.
class Solver {
 public:
  Solver(SolverKind kind, const SolverOptions& opt = {});
  ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  SolverKind kind() const { return kind_; }
  std::string name() const;     // "z3" / "cvc5"
  std::string version() const;  // e.g. "4.8.12"
  // The configuration in use, e.g. "logic=QF_FD" or "bitblast=eager bv-sat-solver=cadical ..."
  // (what certificates record beside the name and version).
  std::string settings() const;

  Term bool_val(bool v);
  Term bool_var(const std::string& name);
  Term bv_val(unsigned width, std::uint64_t v);                // width <= 64, or upper bits zero
  Term bv_val(unsigned width, const std::vector<bool>& bits);  // bits[i] = bit i (LSB first)
  Term bv_var(const std::string& name, unsigned width);

  void add(Term t);
  void push();
  void pop();
  Result check();
  // Check under assumptions (boolean terms), without push/pop: learned facts are kept.
  Result check_assuming(const std::vector<Term>& assumptions);
  std::string reason_unknown() const;  // after an unknown answer

  // Model access after sat.
  bool value_bool(Term t);
  std::vector<bool> value_bv(Term t);  // LSB first
  std::uint64_t value_u64(Term t);     // width <= 64

  // After unsat with proofs enabled: the proof text, or "" if unavailable.
  std::string proof();

  std::size_t num_terms() const;

 private:
  SolverKind kind_;
  std::unique_ptr<Backend> b_;
};

}  // namespace p2v::encodings::smt
