#pragma once
// Strict JSON reading for p2v's file formats (docs/formats.md): every object is read through an
// ObjectReader, which names the file and the path of a missing, mistyped or unknown field.
//
//   ObjectReader r(j, "synth.json: results[3]");
//   auto m = r.get<ParallelismMatrix>("matrix");
//   auto s = r.get_or<std::string>("shape", "");
//   r.finish();  // throws on fields that were never read
#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

class ObjectReader {
 public:
  // `path` names the object in messages ("file.json: results[2].instructions[0]").
  ObjectReader(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) throw Error(fmt::format("{}: expected a JSON object, found {}", path_, j_.type_name()));
  }

  const std::string& path() const { return path_; }
  std::string at(const std::string& key) const { return path_ + "." + key; }
  bool has(const std::string& key) const { return j_.contains(key); }

  // The field's JSON, which must be present.
  const nlohmann::json& json(const std::string& key) {
    seen_.insert(key);
    const auto it = j_.find(key);
    if (it == j_.end()) throw Error(fmt::format("{}: missing field \"{}\"", path_, key));
    return *it;
  }
  const nlohmann::json* json_opt(const std::string& key) {
    seen_.insert(key);
    const auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }

  template <class T>
  T get(const std::string& key) {
    return convert<T>(json(key), key);
  }
  template <class T>
  T get_or(const std::string& key, T fallback) {
    const auto* v = json_opt(key);
    return v ? convert<T>(*v, key) : fallback;
  }
  template <class T>
  std::optional<T> get_opt(const std::string& key) {
    const auto* v = json_opt(key);
    if (!v) return std::nullopt;
    return convert<T>(*v, key);
  }

  // Throws when the object has a field no get*/json* call asked for.
  void finish() const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!seen_.count(it.key())) {
        std::string known;
        for (const auto& k : seen_) known += (known.empty() ? "" : ", ") + k;
        throw Error(fmt::format("{}: unknown field \"{}\" (known here: {})", path_, it.key(), known));
      }
  }

 private:
  template <class T>
  T convert(const nlohmann::json& v, const std::string& key) const {
    try {
      return v.get<T>();
    } catch (const nlohmann::json::exception&) {
      throw Error(fmt::format("{}.{}: wrong type ({}: {})", path_, key, v.type_name(), v.dump().substr(0, 60)));
    }
  }

  const nlohmann::json& j_;
  std::string path_;
  std::set<std::string> seen_;
};

// The array at `key`, which must be present and an array.
inline const nlohmann::json& array_field(ObjectReader& r, const std::string& key) {
  const auto& v = r.json(key);
  if (!v.is_array()) throw Error(fmt::format("{}: expected an array, found {}", r.at(key), v.type_name()));
  return v;
}

// Checks the "format" field: `family`/N with N in [1, max_version]; returns N.
int check_format(ObjectReader& r, const std::string& family, int max_version);

}  // namespace p2v::engine
