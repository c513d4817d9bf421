// p2v matrices: all parallelism matrices of a system for some axes (docs/model.md §2).
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"

namespace p2v::tools {
namespace {

Registrar reg("matrices", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<ProblemArgs>();
  auto json = std::make_shared<bool>(false);
  add_problem_options(sub, *a, /*need_reduce=*/false);
  sub.add_flag("--json", *json, "machine-readable output");
  return [a, json] {
    Problem p = load_problem(*a);
    if (*json) {
      nlohmann::json j;
      j["system"] = p.system.name;
      j["levels"] = p.system.cardinalities();
      j["axes"] = p.axes;
      j["matrices"] = p.matrices;
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("system {} levels [{}], axes [{}]: {} parallelism matrices\n", p.system.name,
               fmt::join(p.system.cardinalities(), " "), fmt::join(p.axes, " "), p.matrices.size());
    for (std::size_t i = 0; i < p.matrices.size(); ++i)
      fmt::print("  {:>4}  {}\n", i, engine::format_matrix_brackets(p.matrices[i]));
    return 0;
  };
});

}  // namespace
}  // namespace p2v::tools
