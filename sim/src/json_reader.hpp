#pragma once
// Strict reading of the simulator's JSON formats (private to sim): every read names the value by
// its path ("results[0].programs[2].time_s"); a missing field, a value of the wrong type and a
// field the format does not define are errors naming the path (docs/formats.md).
#include <fmt/core.h>

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "p2v/engine/error.hpp"
#include "p2v/engine/instruction.hpp"

namespace p2v::sim::json_read {

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
    if (!ok) fail(fmt::format("expected {}, got {}", what, v_.dump()));
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

// A collective's name ("AllReduce").
inline engine::Collective collective(const At& at) {
  const std::string name = at.string();
  try {
    return engine::parse_collective(name);
  } catch (const Error& e) {
    at.fail(e.what());
  }
}

// The "format" and "version" fields every simulator file starts with.
inline void check_format(Object& o, const char* format, int version) {
  const At f = o["format"];
  if (f.string() != format) f.fail(fmt::format("expected \"{}\", got {}", format, f.raw().dump()));
  const At v = o["version"];
  if (v.int32() != version)
    v.fail(fmt::format("{} is not a version this p2v reads (it reads version {})", v.int32(), version));
}

}  // namespace p2v::sim::json_read
