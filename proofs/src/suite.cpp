#include <fmt/core.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_reader.hpp"
#include "p2v/engine/json_util.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/proofs/expressiveness.hpp"

namespace p2v::proofs {

namespace {

namespace jr = engine::json_read;

bool is_file(const std::filesystem::path& p) {
  std::error_code ec;  // a name the file system cannot look up (too long, ...) is no file
  return std::filesystem::exists(p, ec);
}

SuiteCase read_case(const jr::At& at, std::size_t i, const std::filesystem::path& dir) {
  jr::Object c(at);
  SuiteCase sc;
  sc.name = fmt::format("case{}", i);
  if (auto n = c.optional("name")) sc.name = n->string();
  const jr::At s = c["system"];
  if (s.raw().is_object()) {
    sc.system = engine::system_from_json(s.raw(), fmt::format("{}: {}", s.origin(), s.path()));
  } else if (s.raw().is_string()) {
    const std::string v = s.string();
    const auto rel = dir / v;
    try {
      sc.system = v.find('=') != std::string::npos && !is_file(rel)
                      ? engine::parse_system_inline(v)
                      : engine::load_system_file(is_file(rel) ? rel.string() : v);
    } catch (const Error& e) {
      s.fail(e.what());
    }
  } else {
    s.fail("expected a file path, an inline hierarchy or a system object");
  }
  const jr::At axes = c["axes"];
  sc.axes = axes.ints();
  const auto levels = sc.system.cardinalities();
  const auto in_case = [&](const jr::At& where, const auto& f) {
    try {
      f();
    } catch (const Error& e) {
      where.fail(fmt::format("({}) {}", sc.name, e.what()));
    }
  };
  in_case(axes, [&] { engine::check_axes(levels, sc.axes); });
  const jr::At reduce = c["reduce"];
  const auto r = reduce.ints();
  in_case(reduce, [&] { sc.reduce = engine::check_reduce(r, sc.axes.size()); });
  if (auto m = c.optional("matrix")) {
    const auto x = m->int_rows();
    in_case(*m, [&] { engine::check_matrix(x, levels, sc.axes); });
    sc.matrices.push_back(x);
  } else {
    in_case(at, [&] { sc.matrices = engine::enumerate_matrices(levels, sc.axes); });
  }
  if (auto m = c.optional("max_size")) {
    sc.max_size = m->int32();
    if (sc.max_size < 1 || sc.max_size > engine::kMaxProgramSize)
      m->fail(fmt::format("must be 1..{}", engine::kMaxProgramSize));
  }
  if (auto e = c.optional("expect_fail")) {
    e->expect(e->raw().is_object(), "an object {check id: reason}");
    jr::Object reasons(*e);
    for (auto it = e->raw().begin(); it != e->raw().end(); ++it)
      sc.expect_fail[it.key()] = reasons[it.key().c_str()].string();
  }
  c.finish();
  return sc;
}

}  // namespace

std::vector<SuiteCase> parse_suite(const std::string& text, const std::string& path) {
  const nlohmann::json j = engine::parse_json(text, path);
  const jr::At top(j, path, "");
  top.expect(j.is_array(), "a JSON list of cases");
  const auto dir = std::filesystem::path(path).parent_path();
  std::vector<SuiteCase> out;
  std::size_t i = 0;
  top.each([&](const jr::At& c) { out.push_back(read_case(c, i++, dir)); });
  return out;
}

std::vector<SuiteCase> load_suite(const std::string& path) {
  return parse_suite(engine::read_text_file(path, "suite file"), path);
}

}  // namespace p2v::proofs
