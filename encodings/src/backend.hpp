#pragma once
// The interface both solver backends implement (private to encodings/).
#include <memory>
#include <string>
#include <vector>

#include "p2v/encodings/smt.hpp"

namespace p2v::encodings::smt {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual std::string version() const = 0;
  virtual std::string settings() const = 0;
  virtual int bool_val(bool v) = 0;
  virtual int bool_var(const std::string& name) = 0;
  virtual int bv_val(const std::vector<bool>& bits) = 0;  // width = bits.size()
  virtual int bv_var(const std::string& name, unsigned width) = 0;
  virtual int op(Op op, const std::vector<int>& args, unsigned p0, unsigned p1) = 0;
  virtual void add(int t) = 0;
  virtual void push() = 0;
  virtual void pop() = 0;
  virtual Result check() = 0;
  virtual Result check_assuming(const std::vector<int>& assumptions) = 0;
  virtual std::string reason_unknown() const = 0;
  virtual bool value_bool(int t) = 0;
  virtual std::vector<bool> value_bv(int t, unsigned width) = 0;
  virtual std::string proof() = 0;
  virtual std::size_t num_terms() const = 0;
};

std::unique_ptr<Backend> make_z3_backend(const SolverOptions& opt);
std::unique_ptr<Backend> make_cvc5_backend(const SolverOptions& opt);

}  // namespace p2v::encodings::smt
