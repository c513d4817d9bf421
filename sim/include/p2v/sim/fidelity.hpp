#pragma once
// How close the presets' uncalibrated predictions came to published measurements: the fidelity
// suite's numbers (bench/fidelity/run.py --accuracy-json, shipped as sim/data/fidelity.json and
// built into p2v), per preset, one node or several, and size regime. Commands print them beside a
// prediction on a preset (docs/simulator.md §6), so a user sees how far to trust the number before
// calibrating. A CTest regenerates the file from the suite and fails if the shipped one differs.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace p2v::sim {

struct AccuracyRow {
  std::string preset;  // the preset's name (levels.hpp)
  bool multi_node = false;
  std::string regime;  // "<= 1 MiB", "1-64 MiB", ">= 128 MiB" (bytes per GPU)
  int points = 0, logs = 0;
  std::vector<int> nodes;   // the node counts of its logs
  double median = 0;        // predicted / measured
  double within_1_25 = 0;   // share of points within 1.25x (0..1)
  double within_2 = 0;      // share within 2x
  double min = 0, max = 0;  // extreme ratios
};

struct PublishedAccuracy {
  int points = 0, logs = 0;
  std::vector<AccuracyRow> rows;
  std::string error;  // published_accuracy(): why the built-in file could not be read (empty: it was)
};

// The size regimes of the suite (bench/fidelity/run.py REGIMES), in order, and the one of a
// collective of `bytes` per GPU: "<= 1 MiB", "1-64 MiB" (everything below 128 MiB) or ">= 128 MiB".
inline constexpr const char* kSizeRegimes[] = {"<= 1 MiB", "1-64 MiB", ">= 128 MiB"};
const char* size_regime(double bytes);

// Parses a p2v-fidelity/1 file strictly (unknown fields, wrong types, inconsistent or repeated rows,
// aliases for preset names are errors); throws p2v::Error naming `origin` and what is wrong.
PublishedAccuracy parse_accuracy(std::string_view json_text, std::string_view origin);
// The built-in numbers (parsed once; `error` set if they cannot be read).
const PublishedAccuracy& published_accuracy();
// The rows of one preset (by name or alias) for one node or several; empty if the suite has none.
std::vector<AccuracyRow> accuracy_rows(const PublishedAccuracy& a, std::string_view preset, bool multi_node);
// The same for `--json` outputs ("accuracy"): {"preset", "scope" ("one node" / "several nodes"),
// "points", "nodes", "regimes": [{"regime", "points", and where points > 0 "logs", "nodes",
// "median", "within_1_25", "within_2", "min", "max"}], "note": the line below}; with "error" (and
// no counts) when the built-in file could not be read. docs/formats.md, "accuracy".
nlohmann::json accuracy_json(const PublishedAccuracy& a, std::string_view preset, int nodes);
// One line for a prediction on preset `preset` over `nodes` nodes: per regime the share within
// 1.25x and the median, or that no published measurement checks it.
std::string accuracy_note(const PublishedAccuracy& a, std::string_view preset, int nodes);

}  // namespace p2v::sim
