#include "infer_matrix.hpp"

#include <fmt/core.h>

#include "p2v/engine/error.hpp"
#include "p2v/engine/notation.hpp"
#include "p2v/engine/replay.hpp"
#include "p2v/engine/state.hpp"

namespace p2v::tools {

std::vector<engine::ParallelismMatrix> matrices_fitting(const Problem& p, const engine::MatrixFit& f) {
  return engine::matrices_fitting(p.matrices, f);
}

engine::ParallelismMatrix infer_matrix(const Problem& p, const engine::MatrixFit& f) {
  return engine::infer_matrix(p.matrices, f);
}

bool program_fits(const Problem& p, const engine::ParallelismMatrix& x, const std::string& program,
                  engine::HierarchyKind kind) {
  const auto pl = p.placement(x);
  const auto n = p.system.num_devices();
  const auto lowered = engine::resolve_program(engine::make_hierarchy(pl, p.system.level_names(), kind), program);
  // Beyond the state engine's size the notation resolving is the test (the commands then find the
  // program among the placement's ranked ones, or say it is not one of them).
  if (n > engine::kMaxStateDevices) return true;
  const auto goal = pl.reduction_groups();
  const auto t = engine::replay(static_cast<int>(n), lowered, &goal);
  if (t.failed_step >= 0)
    throw Error(
        fmt::format("on {}: step {} cannot run: {}", engine::format_matrix_brackets(x), t.failed_step + 1, t.reason));
  if (!t.reaches_goal)
    throw Error(fmt::format("on {}: it does not reach the AllReduce over the reduction groups",
                            engine::format_matrix_brackets(x)));
  return true;
}

}  // namespace p2v::tools
