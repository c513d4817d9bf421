#pragma once
// Commands infer the parallelism matrix when only one fits (README "Runtime (`p2v run`)"): the one selection
// and its messages, shared by run (runtime/src/jobs.cpp, on pattern programs) and by export,
// step (tools/infer_matrix.hpp, on the state engine).
#include <functional>
#include <string>
#include <vector>

#include "p2v/engine/placement.hpp"

namespace p2v::engine {

// What fits: the subject and the verb of the error when nothing does ("--program 'X'", "is not a
// program of" -> "--program 'X' is not a program of any of the 4 placements of the axes (...)"),
// and the test, which may throw p2v::Error saying why (the first reason is shown when none fits).
struct MatrixFit {
  std::string what, fails;
  std::function<bool(const ParallelismMatrix&)> fits;
};

// The candidates that fit, in order; throws p2v::Error when none does.
std::vector<ParallelismMatrix> matrices_fitting(const std::vector<ParallelismMatrix>& candidates, const MatrixFit& f);

// The one candidate that fits; throws p2v::Error listing them when several do ("<what> fits 2
// placements ([..], [..]): pick one with --matrix").
ParallelismMatrix infer_matrix(const std::vector<ParallelismMatrix>& candidates, const MatrixFit& f);

}  // namespace p2v::engine
