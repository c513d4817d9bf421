#pragma once
// Small text helpers shared by the file readers of the engine and the simulator.
#include <fmt/core.h>

#include <cctype>
#include <optional>
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

// ASCII case folding (names, keywords, column headers; other bytes are kept).
inline std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
inline std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

inline std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Splits one CSV line (RFC 4180 quoting: a field may be enclosed in double quotes, which protect
// commas, and "" inside them is one quote). Whitespace around a field is dropped; inside quotes it
// is kept. std::nullopt for a malformed line: a quote inside an unquoted field, text after a
// closing quote, an unterminated quote.
inline std::optional<std::vector<std::string>> try_split_csv(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  bool quoted = false, was_quoted = false, closed = false;
  auto end_field = [&] {
    f.push_back(was_quoted ? cur : trim(cur));
    cur.clear();
    was_quoted = closed = false;
  };
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c != '"') {
        cur += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else {
        quoted = false;
        closed = true;
      }
    } else if (c == ',') {
      end_field();
    } else if (closed) {
      if (!std::isspace(static_cast<unsigned char>(c))) return std::nullopt;  // text after the closing quote
    } else if (c == '"') {
      if (was_quoted || !trim(cur).empty()) return std::nullopt;  // a quote inside an unquoted field
      cur.clear();
      quoted = was_quoted = true;
    } else {
      cur += c;
    }
  }
  if (quoted) return std::nullopt;
  end_field();
  return f;
}

// The same; throws p2v::Error "<where>: malformed CSV line (...)" for a malformed line.
inline std::vector<std::string> split_csv(const std::string& line, const std::string& where = "CSV") {
  auto f = try_split_csv(line);
  if (!f)
    throw Error(
        fmt::format("{}: malformed CSV line (a quote inside an unquoted field, text after a closing "
                    "quote or an unterminated quote): {}",
                    where, line));
  return std::move(*f);
}

}  // namespace p2v::engine::text
