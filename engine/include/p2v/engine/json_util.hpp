#pragma once
// JSON parsing shared by the file readers of the engine and the simulator (needs nlohmann-json).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace p2v::engine {

// Arrays and objects nest at most this deep in an input file (p2v's formats nest fewer than 10
// levels); deeper input is refused before anything recursive (printing, comparing) sees it.
inline constexpr std::size_t kMaxJsonDepth = 256;

// Parses `text` as JSON; `origin` names the source in error messages. Every failure is a
// p2v::Error naming the origin: "<origin>: malformed JSON: <where and why>", or for a value that
// parses but cannot be held, "<origin>: <json path>: <why>" (a number beyond the range of a
// double such as 1e400, nesting deeper than kMaxJsonDepth, an object holding a key twice).
nlohmann::json parse_json(const std::string& text, const std::string& origin);

// A JSON value as shown in an error message: its text, cut to about 80 characters.
std::string json_brief(const nlohmann::json& v);

// Parses `text` as a JSON object; `origin` names the source in error messages.
nlohmann::json parse_json_object(const std::string& text, const std::string& origin);

}  // namespace p2v::engine
