#pragma once
// Commands infer the parallelism matrix when only one fits (README "Runtime (`p2v run`)"): export and step take
// the placements a program is valid on, through engine/infer_matrix.hpp, which run uses too
// (runtime/src/jobs.cpp, on pattern programs that scale past the state engine).
#include <string>
#include <vector>

#include "common.hpp"
#include "p2v/engine/infer_matrix.hpp"

namespace p2v::tools {

// The matrices of p.matrices (all placements, or the one --matrix gave) that fit
// (engine::matrices_fitting), and the one that fits (engine::infer_matrix).
std::vector<engine::ParallelismMatrix> matrices_fitting(const Problem& p, const engine::MatrixFit& f);
engine::ParallelismMatrix infer_matrix(const Problem& p, const engine::MatrixFit& f);

// `program` (p2v's notation on hierarchy `kind`) resolves on the placement of x, every step runs
// and it ends at the placement's AllReduce goal (on systems of at most engine::kMaxStateDevices
// devices; beyond, resolving is the test). Throws p2v::Error naming what fails.
bool program_fits(const Problem& p, const engine::ParallelismMatrix& x, const std::string& program,
                  engine::HierarchyKind kind);

}  // namespace p2v::tools
