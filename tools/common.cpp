#include "common.hpp"

#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <fmt/core.h>
#include "p2v/engine/error.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/levels.hpp"
#include "p2v/sim/report.hpp"

namespace p2v::tools {

void add_problem_options(CLI::App& sub, ProblemArgs& a, bool need_reduce) {
  a.need_reduce = need_reduce;
  sub.add_option("--system", a.system, "system file (JSON) or inline hierarchy, e.g. node=4,gpu=16")->required();
  sub.add_option("--axes", a.axes, "parallelism axis sizes, e.g. 4,16")->required();
  auto* r = sub.add_option("--reduce", a.reduce, "reduction axis indices (0-based), e.g. 0 or 0,2");
  if (need_reduce) r->required();
  sub.add_option("--matrix", a.matrix,
                 "one parallelism matrix, rows separated by ';', e.g. \"1 4;4 4\" (default: all)");
}

Problem load_problem(const ProblemArgs& a) {
  Problem p;
  p.system = engine::parse_system_arg(a.system);
  p.axes = engine::parse_int_list(a.axes, "--axes");
  const auto levels = p.system.cardinalities();
  engine::check_axes(levels, p.axes);
  if (!a.reduce.empty() || a.need_reduce) {
    if (a.reduce.empty()) throw Error("--reduce: give at least one reduction axis index");
    const std::vector<int> r = engine::parse_axis_indices(a.reduce, "--reduce");
    p.reduce = engine::check_reduce(r, p.axes.size());
  }
  if (!a.matrix.empty()) {
    auto x = engine::parse_matrix(a.matrix);
    engine::check_matrix(x, levels, p.axes);
    p.matrices.push_back(std::move(x));
  } else {
    p.matrices = engine::enumerate_matrices(levels, p.axes);
  }
  return p;
}

void add_search_options(CLI::App& sub, SearchArgs& a, bool with_hierarchy) {
  if (with_hierarchy)
    sub.add_option("--hierarchy", a.hierarchy, "synthesis hierarchy: a, b, c, d or d-uncollapsed")
        ->capture_default_str();
  sub.add_option("--max-size", a.max_size, "largest program size (number of instructions), 1..10")
      ->capture_default_str();
  sub.add_option("--master-collectives", a.master,
                 "collectives a Master step may carry: allreduce (the paper's reading) or all")
      ->capture_default_str();
  if (with_hierarchy) sub.add_flag("--no-collapse", a.no_collapse, "use the uncollapsed reduction-axes hierarchy (d)");
  sub.add_flag("--stats", a.stats,
               "print the enumerator's search counters to stderr (attempts, applied steps, memo entries and hits, "
               "nodes, group cache, results, device states)");
}

void add_preset_option(CLI::App& sub, std::string& preset) {
  std::string names;
  for (const auto& pr : sim::presets()) names += (names.empty() ? "" : ", ") + pr.name;
  sub.add_option("--preset", preset,
                 fmt::format("interconnects for levels the system leaves without one (inline systems): {}; default {}",
                             names, sim::kDefaultPreset));
}

std::string fill_interconnects(engine::System& s, const std::string& name) {
  const auto& preset = sim::find_preset(name.empty() ? std::string(sim::kDefaultPreset) : name);
  if (s.has_topology() || sim::apply_preset(s, preset) == 0) return "";
  return fmt::format("interconnects: preset {} ({}){}", preset.name, preset.description,
                     name.empty() ? "; choose another with --preset" : "");
}

void add_cost_options(CLI::App& sub, CostArgs& a) {
  sub.add_option("--algo", a.algo, "NCCL algorithm: ring, tree (AllReduce only) or auto (NCCL's pick per step)")
      ->capture_default_str();
  sub.add_option("--bytes", a.bytes, "data per device, e.g. 8GiB or 1e9 (default: the paper's 2^29 x nodes float32)");
}

sim::CostOptions CostArgs::options(const engine::System& system) const {
  sim::CostOptions opt;
  opt.algo = sim::parse_algorithm(algo);
  opt.bytes = bytes.empty() ? sim::default_bytes(system) : sim::parse_bytes(bytes);
  return opt;
}

engine::SynthOptions SearchArgs::options() const {
  engine::SynthOptions opt;
  opt.max_size = max_size;
  opt.master = engine::parse_master_collectives(master);
  opt.stats = stats;
  return opt;
}

engine::HierarchyKind SearchArgs::kind() const {
  auto k = engine::parse_hierarchy_kind(hierarchy);
  if (no_collapse) {
    if (k != engine::HierarchyKind::ReductionAxes) throw Error("--no-collapse applies to hierarchy (d) only");
    k = engine::HierarchyKind::ReductionUncollapsed;
  }
  return k;
}

engine::Placement Problem::placement(const engine::ParallelismMatrix& x) const {
  return engine::Placement(system.cardinalities(), axes, x, reduce);
}

void write_file(const std::string& path, const std::string& text) {
  // Whole or not at all: a temporary in the same directory, fsync, rename over `path`.
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error(fmt::format("cannot write '{}' ({})", path, std::strerror(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    const auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      std::remove(tmp.c_str());
      throw Error(fmt::format("cannot write '{}' ({})", path, std::strerror(e)));
    }
    done += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const int sync_errno = errno;
  const bool closed = ::close(fd) == 0;
  if (!synced) errno = sync_errno;
  if (!synced || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw Error(fmt::format("cannot write '{}' ({})", path, std::strerror(e)));
  }
}

}  // namespace p2v::tools
