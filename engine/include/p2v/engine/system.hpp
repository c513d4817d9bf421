#pragma once
// A system: a hierarchy of levels, outermost first (docs/model.md §1), with per-level interconnects.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace p2v::engine {

enum class LinkKind { Switch, Ring, Pcie, Nic };

const char* to_string(LinkKind k);

// The link or switch joining the instances of a level inside one instance of the level above
// (i.e. the children of one parent instance). Only the cost model reads it.
struct Interconnect {
  LinkKind kind = LinkKind::Switch;
  double bandwidth_gbps = 0.0;  // GB/s, one direction
  double latency_us = 0.0;      // µs
  // Optional cap on what one flow (one sender→receiver stream) gets through this interconnect,
  // GB/s; 0 = no cap. E.g. an AWS NIC of 50 Gb/s that gives a single TCP flow at most 10 Gb/s.
  double flow_bandwidth_gbps = 0.0;
};

// Optional numbers of the devices (the last level), read by `p2v step` to turn a model's FLOPs
// into time: FLOPs / (peak_tflops * 1e12 * efficiency). memory_gb bounds what fits.
struct Device {
  std::string name;
  double peak_tflops = 0.0;  // TFLOP/s at the model's precision
  double efficiency = 0.0;   // fraction of peak reached by training kernels, (0, 1]
  double memory_gb = 0.0;    // 0 = unknown (no fit check)
  // Optional datasheet peaks per element type (canonical dtype names, engine/dtype.hpp: "bf16",
  // "f32", ...), TFLOP/s dense; presets fill them. peak_tflops is the one `step` uses.
  std::map<std::string, double> peak_tflops_by_dtype;
  std::string source;  // where the numbers come from (a datasheet URL)
};

struct Level {
  std::string name;
  int cardinality = 1;
  std::optional<Interconnect> interconnect;  // joins the instances of this level within its parent
};

struct System {
  std::string name;
  // The levels the user wrote, outermost first. Parallelism matrices have one column per entry.
  std::vector<Level> levels;
  // The optional "topology" section as read (its format belongs to the simulator, sim/topology.hpp);
  // null if absent.
  nlohmann::json topology;
  bool has_topology() const { return !topology.is_null(); }
  // The optional "nccl" section as read (NCCL model parameters; its format belongs to the
  // simulator, sim/nccl_model.hpp, which reads it strictly); null if absent.
  nlohmann::json nccl;
  // Optional "device" section.
  std::optional<Device> device;

  // Names of the user's levels (the matrix columns), outermost first.
  std::vector<std::string> level_names() const;
  // Cardinalities of the user's levels (the matrix columns).
  std::vector<int> cardinalities() const;
  // Total number of devices (product of cardinalities).
  std::int64_t num_devices() const;
  // True when the user's first level does not have cardinality 1, so a (root,1) is implied.
  bool root_implied() const;
  // Level names for the system hierarchy (a), with "root" prepended when implied.
  std::vector<std::string> hierarchy_names() const;
  std::vector<int> hierarchy_cardinalities() const;
};

// Largest number of devices a system may have.
inline constexpr std::int64_t kMaxSystemDevices = 1 << 20;

// Parses a system from JSON text; `origin` names the source in error messages.
System parse_system_json(const std::string& text, const std::string& origin);
System system_from_json(const nlohmann::json& j, const std::string& origin);
// Loads a system file.
System load_system_file(const std::string& path);
// Parses an inline hierarchy, e.g. "node=4,gpu=16" (no interconnects).
System parse_system_inline(const std::string& spec);
// What `--system` accepts: an existing file path, or an inline `name=card,...` list.
System parse_system_arg(const std::string& arg);
// Serializes a system (round-trips through parse_system_json): as JSON, and as its text.
nlohmann::json system_json(const System& s);
std::string system_to_json(const System& s);

}  // namespace p2v::engine
