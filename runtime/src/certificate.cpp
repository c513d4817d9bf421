#include "p2v/runtime/certificate.hpp"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "p2v/engine/certificate_format.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/json_util.hpp"
#ifdef P2V_HAVE_CHECKER
#include "p2v/checker/checker.hpp"
#endif

namespace p2v::runtime {

namespace {

// Runs the independent checker; empty string = accepted.
std::string run_checker(const std::string& path, const std::string& text);

}  // namespace

Certificate load_certificate(const std::string& path) {
  const std::string text = engine::read_text_file(path, "--certificate");
  Certificate c;
  nlohmann::json j;
  try {
    j = engine::parse_json(text, path);
  } catch (const Error& e) {
    c.reason = fmt::format("not valid JSON: {}", e.what());
    return c;
  }
  try {  // the strict reader of the format (engine/certificate_format.hpp)
    const auto any = engine::any_certificate_from_json(j, path);
    if (const auto* s = std::get_if<engine::ShapeCertificate>(&any)) {
      c.system = s->system;
      for (const auto a : s->axes) c.axes.push_back(static_cast<int>(a));
      c.reduce = s->reduce;
      c.matrix = s->matrix;
      c.notation = s->notation;
    } else {
      const auto& cc = std::get<engine::Certificate>(any);
      c.system = cc.system;
      c.axes = cc.axes;
      c.reduce = cc.reduce;
      c.matrix = cc.matrix;
      c.notation = cc.notation;
      c.lowered = cc.lowered;
    }
  } catch (const Error& e) {
    c.reason = e.what();
    return c;
  }
  c.reason = run_checker(path, text);
  c.checked = c.reason.empty();
  return c;
}

#ifdef P2V_HAVE_CHECKER

bool checker_available() { return true; }

namespace {
std::string run_checker(const std::string&, const std::string& text) {
  const auto v = p2v::checker::check_certificate(text);
  if (v.ok) return {};
  return v.reason.empty() ? std::string("rejected") : v.reason;
}
}  // namespace

#else

bool checker_available() { return false; }

namespace {
std::string run_checker(const std::string&, const std::string&) {
  return "this p2v was built without the certificate checker (proofs/checker)";
}
}  // namespace

#endif

}  // namespace p2v::runtime
