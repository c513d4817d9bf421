#include "p2v/engine/json_util.hpp"

#include <fmt/core.h>

#include <set>
#include <vector>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

namespace {

using json = nlohmann::json;

// Builds the document like nlohmann's own DOM parser and knows at every event the JSON path of
// the value being read ("results[2].time_s"), so that a failure names where it happened.
class PathSax {
 public:
  explicit PathSax(json& root) : dom_(root, false) {}

  bool null() { return value(dom_.null()); }
  bool boolean(bool v) { return value(dom_.boolean(v)); }
  bool number_integer(json::number_integer_t v) { return value(dom_.number_integer(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(dom_.number_unsigned(v)); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return value(dom_.number_float(v, s)); }
  bool string(json::string_t& v) { return value(dom_.string(v)); }
  bool binary(json::binary_t& v) { return value(dom_.binary(v)); }
  bool start_object(std::size_t n) { return open(false) && dom_.start_object(n); }
  bool key(json::string_t& k) {
    // An object with a key twice is refused: readers differ on which copy they keep (nlohmann the
    // last), so the file would mean different things to different tools.
    auto& f = frames_.back();
    if (!f.keys.insert(k).second) {
      f.key = k;
      error_ = fmt::format("{}: the key appears twice in one object", path());
      return false;
    }
    f.key = k;
    return dom_.key(k);
  }
  bool end_object() { return close(dom_.end_object()); }
  bool start_array(std::size_t n) { return open(true) && dom_.start_array(n); }
  bool end_array() { return close(dom_.end_array()); }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& ex) {
    std::string why = ex.what();
    if (const auto b = why.find("] "); why.rfind("[json.exception.", 0) == 0 && b != std::string::npos)
      why = why.substr(b + 2);
    if (ex.id == 406)  // out_of_range.406: a number whose value is not a finite double
      error_ = fmt::format("{}: number {} is out of range (byte {}; numbers must be finite doubles)", path(), token,
                           position);
    else
      error_ = fmt::format("malformed JSON: {} (at {})", why, path());
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  struct Frame {
    bool array = false;
    std::size_t index = 0;
    std::string key;
    std::set<std::string> keys;  // an object's keys so far
  };

  std::string path() const {
    std::string p;
    for (const auto& f : frames_) {
      if (f.array)
        p += fmt::format("[{}]", f.index);
      else
        p += (p.empty() ? "" : ".") + f.key;
    }
    return p.empty() ? "(top level)" : p;
  }
  bool open(bool array) {
    if (frames_.size() >= kMaxJsonDepth) {
      error_ = fmt::format("{}: arrays and objects nested deeper than {} levels", path(), kMaxJsonDepth);
      return false;
    }
    frames_.push_back({array, 0, {}, {}});
    return true;
  }
  bool close(bool ok) {
    frames_.pop_back();
    return value(ok);
  }
  // A value was read: the next one in an array has the next index.
  bool value(bool ok) {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return ok;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<Frame> frames_;
  std::string error_;
};

}  // namespace

json parse_json(const std::string& text, const std::string& origin) {
  json j;
  PathSax sax(j);
  bool ok = false;
  try {
    ok = json::sax_parse(text, &sax);
  } catch (const json::exception& e) {  // not expected with a SAX handler; refused all the same
    throw Error(fmt::format("{}: malformed JSON: {}", origin, e.what()));
  }
  if (!ok) throw Error(fmt::format("{}: {}", origin, sax.error().empty() ? "malformed JSON" : sax.error()));
  return j;
}

std::string json_brief(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() <= 80) return s;
  std::size_t n = 76;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // not inside a UTF-8 character
  return s.substr(0, n) + " ...";
}

json parse_json_object(const std::string& text, const std::string& origin) {
  json j = parse_json(text, origin);
  if (!j.is_object()) throw Error(fmt::format("{}: the top level must be a JSON object", origin));
  return j;
}

}  // namespace p2v::engine
