#pragma once
// Commands infer the parallelism matrix when only one fits (issue 26 item 5): export, step and
// simulate --program take the placements a program is valid on; run does the same in the
// runtime (runtime/src/jobs.cpp, on pattern programs that scale past the state engine).
#include <functional>
#include <string>
#include <vector>

#include "common.hpp"

namespace p2v::tools {

// Does the matrix fit? Throws p2v::Error saying why not (the first reason is shown when none fits).
using MatrixFits = std::function<bool(const engine::ParallelismMatrix&)>;

// What fits: the subject and the verb of the error when nothing does ("--program 'X'", "is not a
// program of" -> "--program 'X' is not a program of any of the 4 placements of the axes (e.g. ...)").
struct Fitting {
  std::string what, fails;
  MatrixFits fits;
};

// The matrices of p.matrices (all placements, or the one --matrix gave) that fit, in order;
// throws p2v::Error when none does.
std::vector<engine::ParallelismMatrix> matrices_fitting(const Problem& p, const Fitting& f);

// The one matrix that fits; throws p2v::Error listing the candidates when several do
// ("<what> fits 2 placements ([..], [..]): pick one with --matrix").
engine::ParallelismMatrix infer_matrix(const Problem& p, const Fitting& f);

// `program` (p2v's notation on hierarchy `kind`) resolves on the placement of x, every step runs
// and it ends at the placement's AllReduce goal (on systems of at most engine::kMaxStateDevices
// devices; beyond, resolving is the test). Throws p2v::Error naming what fails.
bool program_fits(const Problem& p, const engine::ParallelismMatrix& x, const std::string& program,
                  engine::HierarchyKind kind);

}  // namespace p2v::tools
