// p2v groups: the instructions of a synthesis hierarchy and the device groups each forms (docs/model.md §5).
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/engine/shape.hpp"

namespace p2v::tools {
namespace {

std::string groups_text(const engine::Groups& g) {
  std::string s;
  for (const auto& grp : g) s += fmt::format("{{{}}}", fmt::join(grp, ","));
  return s;
}

Registrar reg("groups", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<ProblemArgs>();
  auto json = std::make_shared<bool>(false);
  auto kind = std::make_shared<std::string>("d");
  auto lowered = std::make_shared<bool>(false);
  add_problem_options(sub, *a);
  sub.add_option("--hierarchy", *kind, "synthesis hierarchy: a, b, c, d or d-uncollapsed")->capture_default_str();
  sub.add_flag("--json", *json, "machine-readable output");
  sub.add_flag("--lowered", *lowered,
               fmt::format("hierarchy (d): list the explicit device groups (systems of at most {} "
                           "devices) instead of level patterns",
                           engine::kMaxLoweredDevices));
  return [a, json, kind, lowered] {
    Problem p = load_problem(*a);
    const auto hk = engine::parse_hierarchy_kind(*kind);
    nlohmann::json out;
    out["system"] = p.system.name;
    out["axes"] = p.axes;
    out["reduce"] = p.reduce;
    out["results"] = nlohmann::json::array();
    const bool d = engine::is_reduction_kind(hk);
    if ((!d || *lowered) && p.system.num_devices() > engine::kMaxLoweredDevices)
      throw Error(
          fmt::format("explicit device groups are listed for systems of at most {} devices and "
                      "this one has {}; {}",
                      engine::kMaxLoweredDevices, p.system.num_devices(),
                      d ? "drop --lowered (groups are shown as level patterns)"
                        : "use hierarchy (d) (the default), whose groups are shown as level patterns"));
    for (const auto& x : p.matrices) {
      if (d && !*lowered) {  // level patterns, any size
        const auto s = engine::make_shape(p.system.cardinalities(), p.system.level_names(), x, p.reduce, hk);
        const auto h = engine::canonical_hierarchy(s);
        nlohmann::json r{{"matrix", x},
                         {"hierarchy", s.cards()},
                         {"hierarchy_names", s.names()},
                         {"shape", s.signature()},
                         {"instructions", nlohmann::json::array()}};
        if (!*json)
          fmt::print("matrix {}  hierarchy ({}) [{}] = [{}]\n", engine::format_matrix_brackets(x),
                     engine::to_string(hk), fmt::join(s.names(), " "), fmt::join(s.cards(), " "));
        for (const auto& g : engine::groupings(h)) {
          const auto pat = engine::group_pattern(s, g.slice, g.form, g.e);
          if (*json)
            r["instructions"].push_back({{"slice", h.names[g.slice]},
                                         {"form", engine::form_name(h, g)},
                                         {"group_size", pat.group_size},
                                         {"num_groups", pat.num_groups},
                                         {"master", pat.master},
                                         {"pattern", engine::describe(pat, s)}});
          else
            fmt::print("  {:<28} {}\n", engine::grouping_name(h, g), engine::describe(pat, s));
        }
        if (*json) out["results"].push_back(std::move(r));
        continue;
      }
      auto pl = p.placement(x);
      auto h = engine::make_hierarchy(pl, p.system.level_names(), hk);
      auto gs = engine::groupings(h);
      if (*json) {
        nlohmann::json r;
        r["matrix"] = x;
        r["hierarchy"] = h.cards;
        r["hierarchy_names"] = h.names;
        r["instructions"] = nlohmann::json::array();
        for (const auto& g : gs)
          r["instructions"].push_back({{"slice", h.names[g.slice]},
                                       {"form", engine::form_name(h, g)},
                                       {"groups", engine::lower_groups(h, g.groups)}});
        out["results"].push_back(r);
        continue;
      }
      fmt::print("matrix {}  hierarchy ({}) [{}] = [{}]\n", engine::format_matrix_brackets(x), engine::to_string(hk),
                 fmt::join(h.names, " "), fmt::join(h.cards, " "));
      for (const auto& g : gs)
        fmt::print("  {:<28} {}\n", engine::grouping_name(h, g), groups_text(engine::lower_groups(h, g.groups)));
      if (gs.empty()) fmt::print("  (no instruction forms a group of two or more devices)\n");
    }
    if (*json) fmt::print("{}\n", out.dump(2));
    return 0;
  };
});

}  // namespace
}  // namespace p2v::tools
