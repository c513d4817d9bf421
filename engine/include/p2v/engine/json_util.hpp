#pragma once
// JSON parsing shared by the file readers of the engine and the simulator (needs nlohmann-json).
#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <string>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

// Parses `text` as JSON; `origin` names the source in error messages.
inline nlohmann::json parse_json(const std::string& text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{}: malformed JSON: {}", origin, e.what()));
  }
}

// Parses `text` as a JSON object; `origin` names the source in error messages.
inline nlohmann::json parse_json_object(const std::string& text, const std::string& origin) {
  nlohmann::json j = parse_json(text, origin);
  if (!j.is_object()) throw Error(fmt::format("{}: the top level must be a JSON object", origin));
  return j;
}

}  // namespace p2v::engine
