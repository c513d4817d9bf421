#pragma once
// Options shared by the subcommands that take a placement problem.
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI
namespace p2v::sim {
struct CostOptions;
}

namespace p2v::tools {

// The system of every command, in one of three forms (one parser, one error text):
//   --system FILE             a system file (JSON, docs/formats.md)
//   --system node=4,gpu=8     an inline hierarchy, outermost level first
//   --preset NAME             one node of a preset (sim/levels.hpp; e.g. 8 x H100 for dgx-h100)
// --preset with --system names the preset that fills what the system leaves out (interconnects,
// NCCL parameters and device numbers of inline systems).
// Adds --system and --preset (and --sharp when `sharp` is given) to `sub`.
void add_system_options(CLI::App& sub, std::string& system, std::string& preset, bool* sharp = nullptr);
// The system the options name; throws p2v::Error (the one text naming the three forms) when
// neither is given.
engine::System load_system(const std::string& system, const std::string& preset);

// --system F|INLINE [--preset NAME] --axes 4,16 --reduce 0 [--matrix "1 4;4 4"]
struct ProblemArgs {
  std::string system, axes, reduce, matrix;
  std::string preset;        // --preset NAME
  bool sharp = false;        // --sharp (commands with the cost model)
  std::string nccl_version;  // --nccl-version (with --sharp: commands with the cost model)
  std::string nccl_tuner;    // --nccl-tuner (likewise)
  bool need_reduce = true;
};

// Adds --system/--preset/--axes/--reduce/--matrix to `sub` (and --sharp with `sharp`).
void add_problem_options(CLI::App& sub, ProblemArgs& a, bool need_reduce = true, bool sharp = false);

// A parsed, validated problem: the system, axes, reduction axes and the matrices to consider
// (the one given with --matrix, or all of them).
struct Problem {
  engine::System system;
  std::vector<int> axes;
  std::vector<int> reduce;  // sorted; empty when not needed
  std::vector<engine::ParallelismMatrix> matrices;
  engine::Placement placement(const engine::ParallelismMatrix& x) const;
};

Problem load_problem(const ProblemArgs& a);

// How programs are searched: --max-size, --master-collectives and, where the command lets the
// user pick the synthesis hierarchy, --hierarchy and --no-collapse.
struct SearchArgs {
  std::string hierarchy = "d";
  int max_size = 5;
  std::string master = "allreduce";
  bool no_collapse = false;
  bool stats = false;  // --stats: the enumerator's search counters on stderr
  engine::SynthOptions options() const;
  // --hierarchy with --no-collapse applied (throws p2v::Error on a bad combination).
  engine::HierarchyKind kind() const;
};

void add_search_options(CLI::App& sub, SearchArgs& a, bool with_hierarchy);

// The cost model's options of simulate and explore: --algo auto|ring|tree|nvls|collnet,
// --proto auto|ll|ll128|simple, --bytes SIZE.
struct CostArgs {
  std::string algo = "auto";
  std::string proto = "auto";
  std::string bytes;                                             // empty: the paper's size for the system
  sim::CostOptions options(const engine::System& system) const;  // throws p2v::Error
};

void add_cost_options(CLI::App& sub, CostArgs& a);

// --preset NAME: adds the option (help lists the presets) to `sub`.
// With `sharp`, also --sharp (in-network reduction, CollNet/SHARP, on the system's network).
void add_preset_option(CLI::App& sub, std::string& preset, bool* sharp = nullptr);
// Fills the interconnects a system leaves out (inline systems) from preset `name` (empty: the
// default preset), and the device numbers (sim/preset_devices.hpp) when it fills interconnects or
// `name` is given and the system has none; `sharp` turns SHARP on. Returns a line naming the
// preset used, or "" when nothing was filled. A non-empty `nccl_tuner` sets its tuner plugin; a
// non-empty `nccl_version` sets the system's NCCL
// version (docs/simulator.md §2, "NCCL version"; p2v::Error when it is not one p2v holds).
// Where the line carries the preset's published accuracy (the preset's own system), `accuracy`
// (if given) receives it as sim::accuracy_json for --json outputs; else it is left as it is.
std::string fill_interconnects(engine::System& s, const std::string& name, bool sharp = false,
                               const std::string& nccl_version = "", const std::string& nccl_tuner = "",
                               nlohmann::json* accuracy = nullptr);
// Adds that accuracy to a --json output object as "accuracy" (nothing when it is null).
void add_accuracy(nlohmann::json& out, const nlohmann::json& accuracy);
// Adds --nccl-tuner (none, fastest, aws-ofi-p5: the system's "nccl" "tuner", docs/simulator.md §2).
void add_nccl_tuner_option(CLI::App& sub, std::string& tuner);

// The one element-type option: --dtype in any spelling of engine::parse_dtype (f32, float32,
// float, ...); help lists them.
CLI::Option* add_dtype_option(CLI::App& sub, std::string& dtype, const std::string& what);
// The canonical short name (f32) of a --dtype value; throws p2v::Error for an unknown one.
std::string canonical_dtype(const std::string& text);
// --certify DIR (writes certificates) with --certificates DIR as its deprecated alias (same
// variable; a note on stderr when the old name is used).
CLI::Option* add_certify_option(CLI::App& sub, std::string& dir, const std::string& help);

// Writes `text` to `path` whole or not at all (engine::write_file_atomic); throws p2v::Error
// "cannot write <what> '<path>': <reason>" on any failure.
void write_file(const std::string& path, const std::string& text, const std::string& what = "file");
// Appends `text` to the file at `path` (`header` first when the file is new or empty): the old
// content and the new text are written together through write_file, so the file is either the old
// one or the old one plus all of `text`. A device or FIFO is written in place without the header.
void append_file(const std::string& path, const std::string& header, const std::string& text, const std::string& what);

}  // namespace p2v::tools
