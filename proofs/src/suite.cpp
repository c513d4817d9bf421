#include <fmt/core.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/proofs/expressiveness.hpp"

namespace p2v::proofs {

std::vector<SuiteCase> load_suite(const std::string& path) {
  const nlohmann::json j = engine::parse_json(engine::read_text_file(path, "suite file"), path);
  if (!j.is_array()) throw Error(fmt::format("{}: a suite is a JSON list of cases", path));
  const auto dir = std::filesystem::path(path).parent_path();
  std::vector<SuiteCase> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto& c = j[i];
    const std::string where = fmt::format("{}: [{}]", path, i);
    if (!c.is_object()) throw Error(where + ": a case is an object");
    SuiteCase sc;
    sc.name = c.value("name", fmt::format("case{}", i));
    if (!c.contains("system")) throw Error(where + ".system: missing");
    const auto& s = c["system"];
    if (s.is_object()) {
      sc.system = engine::parse_system_json(s.dump(), where + ".system");
    } else if (s.is_string()) {
      const std::string v = s.get<std::string>();
      const auto rel = dir / v;
      sc.system = v.find('=') != std::string::npos && !std::filesystem::exists(rel)
                      ? engine::parse_system_inline(v)
                      : engine::load_system_file(std::filesystem::exists(rel) ? rel.string() : v);
    } else {
      throw Error(where + ".system: a file path, an inline hierarchy or a system object");
    }
    auto ints = [&](const char* key) {
      if (!c.contains(key) || !c[key].is_array()) throw Error(fmt::format("{}.{}: missing or not a list", where, key));
      std::vector<int> v;
      for (const auto& e : c[key]) {
        if (!e.is_number_integer()) throw Error(fmt::format("{}.{}: entries must be integers", where, key));
        v.push_back(e.get<int>());
      }
      return v;
    };
    sc.axes = ints("axes");
    const auto levels = sc.system.cardinalities();
    try {
      engine::check_axes(levels, sc.axes);
      sc.reduce = engine::check_reduce(ints("reduce"), sc.axes.size());
      if (c.contains("matrix")) {
        auto x = c["matrix"].get<engine::ParallelismMatrix>();
        engine::check_matrix(x, levels, sc.axes);
        sc.matrices.push_back(x);
      } else {
        sc.matrices = engine::enumerate_matrices(levels, sc.axes);
      }
    } catch (const Error& e) {
      throw Error(fmt::format("{} ({}): {}", where, sc.name, e.what()));
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format("{} ({}): matrix: {}", where, sc.name, e.what()));
    }
    sc.max_size = c.value("max_size", 4);
    if (sc.max_size < 1 || sc.max_size > engine::kMaxProgramSize)
      throw Error(fmt::format("{}.max_size: must be 1..{}", where, engine::kMaxProgramSize));
    if (c.contains("expect_fail")) {
      const auto& e = c["expect_fail"];
      if (!e.is_object()) throw Error(where + ".expect_fail: an object {check id: reason}");
      for (auto it = e.begin(); it != e.end(); ++it) {
        if (!it.value().is_string()) throw Error(where + ".expect_fail: reasons must be strings");
        sc.expect_fail[it.key()] = it.value().get<std::string>();
      }
    }
    out.push_back(std::move(sc));
  }
  return out;
}

}  // namespace p2v::proofs
