#pragma once
// Strict reading of p2v's JSON formats (docs/formats.md): every read names the value by its path
// ("results[0].programs[2].time_s"); a missing field, a value of the wrong type and a field the
// format does not define are errors naming the file and the path.
//
//   json_read::Object o(json_read::At(doc, "sim.json", ""));
//   json_read::check_format(o, "p2v-simulate", 1);
//   const auto axes = o["axes"].ints();
//   if (auto s = o.optional("shape")) shape = s->string();
//   o.finish();  // refuses the fields nobody read
#include <fmt/core.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "p2v/engine/error.hpp"
#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/engine/json_util.hpp"

namespace p2v::engine::json_read {

using nlohmann::json;

// One value of a document and where it is.
class At {
 public:
  At(const json& v, const std::string& origin, std::string path) : v_(v), origin_(origin), path_(std::move(path)) {}

  const json& raw() const { return v_; }
  const std::string& path() const { return path_; }
  const std::string& origin() const { return origin_; }
  bool is_null() const { return v_.is_null(); }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{}: {}: {}", origin_, path_.empty() ? "(top level)" : path_, what));
  }
  void expect(bool ok, const char* what) const {
    if (!ok) fail(fmt::format("expected {}, got {}", what, json_brief(v_)));
  }

  double number() const {
    expect(v_.is_number() && std::isfinite(v_.get<double>()), "a number");
    return v_.get<double>();
  }
  std::int64_t integer() const {
    expect(v_.is_number_integer(), "an integer");
    return v_.get<std::int64_t>();
  }
  int int32() const {
    const auto i = integer();
    if (i < INT32_MIN || i > INT32_MAX) fail(fmt::format("{} is out of range", i));
    return static_cast<int>(i);
  }
  bool boolean() const {
    expect(v_.is_boolean(), "true or false");
    return v_.get<bool>();
  }
  std::string string() const {
    expect(v_.is_string(), "a string");
    return v_.get<std::string>();
  }
  // Calls f(At) for every element of an array.
  template <class F>
  void each(F&& f) const {
    expect(v_.is_array(), "an array");
    for (std::size_t i = 0; i < v_.size(); ++i) f(At(v_[i], origin_, fmt::format("{}[{}]", path_, i)));
  }
  std::vector<int> ints() const {
    std::vector<int> out;
    each([&](const At& e) { out.push_back(e.int32()); });
    return out;
  }
  std::vector<std::vector<int>> int_rows() const {
    std::vector<std::vector<int>> out;
    each([&](const At& e) { out.push_back(e.ints()); });
    return out;
  }

 private:
  const json& v_;
  const std::string& origin_;
  std::string path_;
};

// One JSON object whose fields are read once each; finish() refuses the fields nobody read.
class Object {
 public:
  explicit Object(const At& at) : at_(at) { at_.expect(at_.raw().is_object(), "an object"); }

  // A field that must be present.
  At operator[](const char* key) {
    if (!at_.raw().contains(key)) At(at_.raw(), origin(), child(key)).fail("missing");
    return field(key);
  }
  // A field that may be absent (std::nullopt then).
  std::optional<At> optional(const char* key) {
    read_.insert(key);
    if (!at_.raw().contains(key)) return std::nullopt;
    return field(key);
  }
  // A field renamed so its name says its unit ("bandwidth_GBps", once "bandwidth_gbps"): read under
  // either name (the old one is deprecated, docs/formats.md), never both; absent: std::nullopt.
  std::optional<At> optional_renamed(const char* now, const char* old) {
    auto a = optional(now);
    auto b = optional(old);
    if (a && b) b->fail(fmt::format("give \"{}\" or its deprecated name \"{}\", not both", now, old));
    return a ? a : b;
  }
  // The same for a field that must be present (the error names the new spelling).
  At renamed(const char* now, const char* old) {
    if (auto v = optional_renamed(now, old)) return *v;
    return (*this)[now];  // fails: missing
  }
  // Every field not read is unknown to the format.
  void finish() const {
    for (auto it = at_.raw().begin(); it != at_.raw().end(); ++it)
      if (!read_.count(it.key())) {
        std::string known;
        for (const auto& k : read_) known += (known.empty() ? "" : ", ") + k;
        At(it.value(), origin(), child(it.key().c_str()))
            .fail(fmt::format("unknown field (this format has {} here)", known.empty() ? "no fields" : known));
      }
  }
  const At& at() const { return at_; }

 private:
  At field(const char* key) {
    read_.insert(key);
    return At(at_.raw()[key], origin(), child(key));
  }
  std::string child(const char* key) const { return at_.path().empty() ? key : at_.path() + "." + key; }
  const std::string& origin() const { return at_.origin(); }

  At at_;
  std::set<std::string> read_;
};

// A string value read by one of the engine's parsers (whose Error then names the path).
template <class Parse>
auto parsed(const At& at, Parse&& parse) {
  const std::string text = at.string();
  try {
    return parse(text);
  } catch (const Error& e) {
    at.fail(e.what());
  }
}
// A collective's name ("AllReduce"), a hierarchy kind ("d"), a Master setting ("allreduce").
inline engine::Collective collective(const At& at) { return parsed(at, engine::parse_collective); }
inline engine::HierarchyKind hierarchy_kind(const At& at) { return parsed(at, engine::parse_hierarchy_kind); }
inline engine::MasterCollectives master_collectives(const At& at) {
  return parsed(at, engine::parse_master_collectives);
}

// The "format" field every p2v file starts with: "<family>/<version>", e.g. "p2v-synth/2".
// Refuses other families and versions this p2v does not read (newer ones, or older ones no longer
// read: versions below `oldest`).
inline int check_format(Object& o, const char* family, int version, int oldest = -1) {
  const At f = o["format"];
  const std::string s = f.string();
  const std::string prefix = std::string(family) + "/";
  if (s.rfind(prefix, 0) != 0) f.fail(fmt::format("expected \"{}/{}\", got \"{}\"", family, version, s));
  int v = -1;
  try {
    std::size_t used = 0;
    v = std::stoi(s.substr(prefix.size()), &used);
    if (used != s.size() - prefix.size()) v = -1;
  } catch (const std::exception&) {
  }
  if (v < (oldest < 0 ? version : oldest) || v > version)
    f.fail(fmt::format("\"{}\" is not a version this p2v reads (it reads {}/{})", s, family, version));
  return v;
}

}  // namespace p2v::engine::json_read
