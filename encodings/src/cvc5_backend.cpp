// cvc5 backend (C++ API of cvc5 1.0.x). Without proofs: eager bit-blasting into CaDiCaL (4-8x
// faster here than the lazy default); with proofs: the default (lazy) BV solver, whose unsat
// answers cvc5 can justify. SolverOptions::cvc5_options (--cvc5-option NAME=VALUE) sets further
// options after these.
#include <cvc5/cvc5.h>

#include <sstream>
#include <stdexcept>

#include "backend.hpp"
#include "p2v/engine/error.hpp"

namespace p2v::encodings::smt {
namespace {

class Cvc5Backend final : public Backend {
 public:
  explicit Cvc5Backend(const SolverOptions& opt) : opt_(opt) {
    if (opt.models) set("produce-models", "true");
    set("incremental", opt.incremental ? "true" : "false");
    if (opt.timeout_ms) set("tlimit-per", std::to_string(opt.timeout_ms));
    if (opt.proofs) {
      set("produce-proofs", "true");
    } else {
      // Eager bit-blasting into CaDiCaL: 4-8x faster than the lazy default on these queries.
      set("bitblast", "eager");
      set("bv-sat-solver", "cadical");
      // No preprocessing simplification and the SAT solver's own decisions (no justification
      // heuristic): the queries are many small incremental checks whose assertions are mostly
      // constants (a closure step from a given state). Measured (CPU, bench_certify
      // --method symbolic-closure on pod=2,rack=2,node=2,gpu=2, one worker): 38.5 s before,
      // 28.5 s without simplification, 22.4-22.8 s with both.
      set("simplification", "none");
      set("decision", "internal");
    }
    for (const auto& [k, v] : opt.cvc5_options) {
      try {
        set(k, v);
      } catch (const cvc5::CVC5ApiException& e) {
        throw Error("--cvc5-option " + k + "=" + v + ": cvc5 does not accept it (" + e.getMessage() + ")");
      }
    }
    s_.setLogic("QF_BV");
  }
  std::string settings() const override {
    std::string out = "logic=QF_BV";
    for (const auto& [k, v] : set_) out += " " + k + "=" + v;
    return out;
  }
  std::string name() const override { return "cvc5"; }
  std::string version() const override { return s_.getVersion(); }
  int bool_val(bool v) override { return put(s_.mkBoolean(v)); }
  int bool_var(const std::string& n) override { return put(s_.mkConst(s_.getBooleanSort(), n)); }
  int bv_val(const std::vector<bool>& bits) override {
    std::string str(bits.size(), '0');
    for (std::size_t i = 0; i < bits.size(); ++i)
      if (bits[i]) str[bits.size() - 1 - i] = '1';
    return put(s_.mkBitVector(static_cast<std::uint32_t>(bits.size()), str, 2));
  }
  int bv_var(const std::string& n, unsigned w) override { return put(s_.mkConst(s_.mkBitVectorSort(w), n)); }
  int op(Op op, const std::vector<int>& a, unsigned p0, unsigned p1) override {
    std::vector<cvc5::Term> v;
    v.reserve(a.size());
    for (int i : a) v.push_back(terms_.at(static_cast<std::size_t>(i)));
    switch (op) {
      case Op::Not:
        return put(s_.mkTerm(cvc5::NOT, v));
      case Op::And:
        return put(v.size() == 1 ? v[0] : s_.mkTerm(cvc5::AND, v));
      case Op::Or:
        return put(v.size() == 1 ? v[0] : s_.mkTerm(cvc5::OR, v));
      case Op::Implies:
        return put(s_.mkTerm(cvc5::IMPLIES, v));
      case Op::Eq:
        return put(s_.mkTerm(cvc5::EQUAL, v));
      case Op::Ite:
        return put(s_.mkTerm(cvc5::ITE, v));
      case Op::BvNot:
        return put(s_.mkTerm(cvc5::BITVECTOR_NOT, v));
      case Op::BvAnd:
        return put(v.size() == 1 ? v[0] : s_.mkTerm(cvc5::BITVECTOR_AND, v));
      case Op::BvOr:
        return put(v.size() == 1 ? v[0] : s_.mkTerm(cvc5::BITVECTOR_OR, v));
      case Op::BvXor:
        return put(s_.mkTerm(cvc5::BITVECTOR_XOR, v));
      case Op::BvAdd:
        return put(v.size() == 1 ? v[0] : s_.mkTerm(cvc5::BITVECTOR_ADD, v));
      case Op::BvMul:
        return put(s_.mkTerm(cvc5::BITVECTOR_MULT, v));
      case Op::BvUdiv:
        return put(s_.mkTerm(cvc5::BITVECTOR_UDIV, v));
      case Op::BvUrem:
        return put(s_.mkTerm(cvc5::BITVECTOR_UREM, v));
      case Op::BvUle:
        return put(s_.mkTerm(cvc5::BITVECTOR_ULE, v));
      case Op::BvUlt:
        return put(s_.mkTerm(cvc5::BITVECTOR_ULT, v));
      case Op::Extract:
        return put(s_.mkTerm(s_.mkOp(cvc5::BITVECTOR_EXTRACT, {p0, p1}), v));
      case Op::ZeroExt:
        if (p0 == 0) return put(v[0]);
        return put(s_.mkTerm(s_.mkOp(cvc5::BITVECTOR_ZERO_EXTEND, {p0}), v));
      case Op::Concat:
        return put(s_.mkTerm(cvc5::BITVECTOR_CONCAT, v));
    }
    throw std::logic_error("cvc5 backend: unknown op");
  }
  void add(int t) override { s_.assertFormula(terms_.at(static_cast<std::size_t>(t))); }
  void push() override { s_.push(); }
  void pop() override { s_.pop(); }
  Result check() override { return result(s_.checkSat()); }
  Result check_assuming(const std::vector<int>& as) override {
    std::vector<cvc5::Term> v;
    for (int a : as) v.push_back(terms_.at(static_cast<std::size_t>(a)));
    return result(s_.checkSatAssuming(v));
  }
  std::string reason_unknown() const override {
    std::ostringstream os;
    os << last_.getUnknownExplanation();
    return os.str();
  }
  bool value_bool(int t) override { return s_.getValue(terms_.at(static_cast<std::size_t>(t))).getBooleanValue(); }
  std::vector<bool> value_bv(int t, unsigned w) override {
    const std::string str = s_.getValue(terms_.at(static_cast<std::size_t>(t))).getBitVectorValue(2);
    if (str.size() != w) throw std::runtime_error("cvc5 backend: model value of wrong width");
    std::vector<bool> bits(w);
    for (unsigned i = 0; i < w; ++i) bits[i] = str[w - 1 - i] == '1';
    return bits;
  }
  std::string proof() override {
    if (!opt_.proofs) return "";
    try {
      return s_.getProof();
    } catch (const std::exception& e) {
      return std::string("; proof unavailable: ") + e.what();
    }
  }
  std::size_t num_terms() const override { return terms_.size(); }

 private:
  Result result(const cvc5::Result& r) {
    last_ = r;
    if (r.isSat()) return Result::sat;
    return r.isUnsat() ? Result::unsat : Result::unknown;
  }
  int put(cvc5::Term t) {
    terms_.push_back(std::move(t));
    return static_cast<int>(terms_.size() - 1);
  }
  // Sets an option and remembers it for settings() (a later value for the same name replaces it).
  void set(const std::string& k, const std::string& v) {
    s_.setOption(k, v);
    for (auto& kv : set_)
      if (kv.first == k) {
        kv.second = v;
        return;
      }
    set_.emplace_back(k, v);
  }
  cvc5::Solver s_;
  std::vector<std::pair<std::string, std::string>> set_;
  SolverOptions opt_;
  std::vector<cvc5::Term> terms_;
  cvc5::Result last_;
};

}  // namespace

std::unique_ptr<Backend> make_cvc5_backend(const SolverOptions& opt) { return std::make_unique<Cvc5Backend>(opt); }

}  // namespace p2v::encodings::smt
