#pragma once
// Small text helpers shared by the file readers of the engine and the simulator.
#include <fmt/core.h>

#include <cctype>
#include <string>
#include <vector>

#include "p2v/engine/error.hpp"

namespace p2v::engine::text {

// Escapes &, <, > and " for SVG/XML text and attributes.
inline std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

inline std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Splits a CSV line; double quotes protect commas. Fields are trimmed.
inline std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      f.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  f.push_back(trim(cur));
  return f;
}

}  // namespace p2v::engine::text
