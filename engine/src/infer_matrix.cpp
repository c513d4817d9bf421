#include "p2v/engine/infer_matrix.hpp"

#include <fmt/core.h>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

std::vector<ParallelismMatrix> matrices_fitting(const std::vector<ParallelismMatrix>& candidates, const MatrixFit& f) {
  std::vector<ParallelismMatrix> out;
  std::string first_error;
  for (const auto& x : candidates) {
    try {
      if (f.fits(x)) out.push_back(x);
    } catch (const Error& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (out.empty())
    throw Error(fmt::format("{} {} {}{}", f.what, f.fails,
                            candidates.size() == 1
                                ? "the placement " + format_matrix_brackets(candidates.front())
                                : fmt::format("any of the {} placements of the axes", candidates.size()),
                            first_error.empty() ? std::string() : " (" + first_error + ")"));
  return out;
}

ParallelismMatrix infer_matrix(const std::vector<ParallelismMatrix>& candidates, const MatrixFit& f) {
  const auto fit = matrices_fitting(candidates, f);
  if (fit.size() == 1) return fit.front();
  std::string list;
  for (const auto& x : fit) list += (list.empty() ? "" : ", ") + format_matrix_brackets(x);
  throw Error(fmt::format("{} fits {} placements ({}): pick one with --matrix", f.what, fit.size(), list));
}

}  // namespace p2v::engine
