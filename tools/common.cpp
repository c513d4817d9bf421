#include "common.hpp"

#include <sys/stat.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include <fmt/core.h>
#include "p2v/engine/dtype.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/write.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/fidelity.hpp"
#include "p2v/sim/fit.hpp"
#include "p2v/sim/levels.hpp"
#include "p2v/sim/preset_devices.hpp"
#include "p2v/sim/report.hpp"

namespace p2v::tools {

void add_system_options(CLI::App& sub, std::string& system, std::string& preset, bool* sharp) {
  sub.add_option("--system", system,
                 "the system: a file (JSON), or an inline hierarchy, outermost level first, e.g. node=4,gpu=8 "
                 "(or --preset NAME alone: one node of the preset)");
  add_preset_option(sub, preset, sharp);
}

engine::System load_system(const std::string& system, const std::string& preset) {
  if (!system.empty()) {
    if (!preset.empty()) (void)sim::find_preset(preset);  // an unknown name fails here, whatever the command
    return engine::parse_system_arg(system);
  }
  if (preset.empty()) {
    std::string names;
    for (const auto& pr : sim::presets()) names += (names.empty() ? "" : ", ") + pr.name;
    throw Error(
        fmt::format("no system: give --system FILE (JSON), --system with an inline hierarchy (e.g. node=4,gpu=8) "
                    "or --preset NAME (one node of a preset: {})",
                    names));
  }
  const auto& pr = sim::find_preset(preset);
  const auto& dev = sim::preset_device(pr);
  engine::System s = engine::parse_system_inline(fmt::format("gpu={}", dev.node_devices));
  s.name = pr.name;
  sim::apply_preset(s, pr);
  s.device = dev.device;
  return s;
}

void add_problem_options(CLI::App& sub, ProblemArgs& a, bool need_reduce, bool sharp) {
  a.need_reduce = need_reduce;
  add_system_options(sub, a.system, a.preset, sharp ? &a.sharp : nullptr);
  if (sharp) {
    sub.add_option("--nccl-version", a.nccl_version,
                   "NCCL version whose tuning constants apply, 2.9 or later (default: the system's, else 2.30.7)");
    add_nccl_tuner_option(sub, a.nccl_tuner);
  }
  sub.add_option("--axes", a.axes, "parallelism axis sizes, e.g. 4,16")->required();
  auto* r = sub.add_option("--reduce", a.reduce, "reduction axis indices (0-based), e.g. 0 or 0,2");
  if (need_reduce) r->required();
  sub.add_option("--matrix", a.matrix,
                 "one parallelism matrix, rows separated by ';', e.g. \"1 4;4 4\" (default: all)");
}

Problem load_problem(const ProblemArgs& a) {
  Problem p;
  p.system = load_system(a.system, a.preset);
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

void add_preset_option(CLI::App& sub, std::string& preset, bool* sharp) {
  std::string names;
  for (const auto& pr : sim::presets()) names += (names.empty() ? "" : ", ") + pr.name;
  sub.add_option("--preset", preset,
                 fmt::format("system preset for levels the system leaves without an interconnect (inline systems): "
                             "{} (old names a100, v100); default {}",
                             names, sim::kDefaultPreset));
  if (sharp)
    sub.add_flag("--sharp", *sharp,
                 "the network reduces in-switch (InfiniBand SHARP / NCCL CollNet): makes the collnet algorithm "
                 "available");
}

void add_nccl_tuner_option(CLI::App& sub, std::string& tuner) {
  sub.add_option(
         "--nccl-tuner", tuner,
         "NCCL tuner plugin that picks the algorithm: none (NCCL's own pick), fastest (a plugin tuned on the "
         "cluster: the model's fastest candidate), aws-ofi-p5 (aws-ofi-nccl's p5 regions, 3+ nodes) (default: the "
         "system's, else none)")
      ->check(
          CLI::IsMember(std::vector<std::string>(std::begin(sim::kNcclTunerNames), std::end(sim::kNcclTunerNames))));
}

std::string fill_interconnects(engine::System& s, const std::string& name, bool sharp, const std::string& nccl_version,
                               const std::string& nccl_tuner, nlohmann::json* accuracy) {
  const auto& preset = sim::find_preset(name.empty() ? std::string(sim::kDefaultPreset) : name);
  // The accuracy line (sim/fidelity.hpp) is for the preset's own numbers, uncalibrated: a preset
  // alone (the whole system equal to what load_system builds from it), or an inline hierarchy the
  // preset fills entirely (no interconnect, no "nccl" section and no topology of its own). A system
  // file with numbers of its own, calibrated or edited, gets none.
  bool alone = false;
  if (!name.empty() && s.name == preset.name && s.levels.size() == 1)
    alone = engine::system_json(s) == engine::system_json(load_system("", preset.name));
  const bool bare = s.nccl.is_null() && !s.has_topology() &&
                    std::none_of(s.levels.begin(), s.levels.end(), [](const auto& l) { return l.interconnect; });
  std::string partial;  // a system on part of each node: the NICs it has (sim/levels.hpp)
  const bool links = !s.has_topology() && sim::apply_preset(s, preset, &partial) > 0;
  // After the preset: apply_preset writes its "nccl" section only into a system without one.
  if (sharp) sim::set_sharp(s, true);
  if (!nccl_version.empty()) {
    if (s.nccl.is_null()) s.nccl = nlohmann::json::object();
    s.nccl["version"] = sim::nccl_version_string(sim::parse_nccl_version(nccl_version, "--nccl-version"));
  }
  if (!nccl_tuner.empty()) {
    if (s.nccl.is_null()) s.nccl = nlohmann::json::object();
    s.nccl["tuner"] = nccl_tuner;
  }
  // Device numbers: from the preset that gave the interconnects, or from one named explicitly.
  std::string device;
  if (!s.device && (links || !name.empty())) {
    s.device = sim::preset_device(preset).device;
    const auto& d = *s.device;
    device = fmt::format("; device {} ({:g} TFLOP/s bf16 peak, efficiency {:g} assumed, {:g} GB)", d.name,
                         d.peak_tflops, d.efficiency, d.memory_gb);
  }
  // How far the preset's uncalibrated times held against published measurements (sim/fidelity.hpp).
  std::string line;
  if (alone || (links && bare && partial.empty())) {  // the suite measures whole nodes only
    auto a = sim::accuracy_json(sim::published_accuracy(), preset.name, alone ? 1 : sim::system_nodes(s));
    line = a.at("note").get<std::string>();
    if (accuracy) *accuracy = std::move(a);
  }
  if (alone) return line;
  if (!links && device.empty()) return "";
  std::string note = fmt::format("{}: preset {} ({}){}{}", links ? "interconnects" : "device numbers", preset.name,
                                 preset.description, device, name.empty() ? "; choose another with --preset" : "");
  if (!partial.empty()) note += "; " + partial;
  if (!line.empty()) note += "\n" + line;
  return note;
}

void add_accuracy(nlohmann::json& out, const nlohmann::json& accuracy) {
  if (!accuracy.is_null()) out["accuracy"] = accuracy;
}

CLI::Option* add_dtype_option(CLI::App& sub, std::string& dtype, const std::string& what) {
  return sub.add_option("--dtype", dtype, fmt::format("{}: {}", what, engine::dtype_spellings()));
}

std::string canonical_dtype(const std::string& text) {
  return engine::dtype_info(engine::parse_dtype(text, "--dtype")).name;
}

CLI::Option* add_certify_option(CLI::App& sub, std::string& dir, const std::string& help) {
  auto* o = sub.add_option("--certify", dir, help);
  // The old name of some commands: same meaning, kept for scripts (docs/formats.md).
  sub.add_option("--certificates", dir, "deprecated alias of --certify")->group("")->each([](const std::string&) {
    fmt::print(stderr, "p2v: note: --certificates is the old name of --certify (it still works)\n");
  });
  return o;
}

void add_cost_options(CLI::App& sub, CostArgs& a) {
  sub.add_option("--algo", a.algo,
                 "NCCL algorithm: auto (NCCL's pick per step), ring, tree (AllReduce), nvls (NVSwitch reduction; "
                 "NVLS tree across nodes) or collnet (SHARP; needs --sharp or \"sharp\" in the system's nccl section)")
      ->capture_default_str();
  sub.add_option("--proto", a.proto, "NCCL protocol: auto (NCCL's pick), ll, ll128 or simple")->capture_default_str();
  sub.add_option("--bytes", a.bytes, "data per device, e.g. 8GiB or 1e9 (default: the paper's 2^29 x nodes float32)");
}

sim::CostOptions CostArgs::options(const engine::System& system) const {
  sim::CostOptions opt;
  opt.algo = sim::parse_algorithm(algo);
  opt.proto = sim::parse_protocol(proto);
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

void write_file(const std::string& path, const std::string& text, const std::string& what) {
  engine::write_file_atomic(path, text, what);
}

void append_file(const std::string& path, const std::string& header, const std::string& text, const std::string& what) {
  std::string content;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(fmt::format("cannot read {} '{}' to append to it", what, path));
    std::ostringstream old;
    old << in.rdbuf();
    if (in.bad()) throw Error(fmt::format("cannot read {} '{}' to append to it", what, path));
    content = old.str();
    if (!content.empty() && content.back() != '\n') content += '\n';
  }
  // A device or FIFO (/dev/stdout, /dev/null) is not read back: the rows go to it as they are.
  if (content.empty() && (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode))) content = header;
  content += text;
  engine::write_file_atomic(path, content, what);
}

}  // namespace p2v::tools
