// p2v check: the independent certificate checker (proofs/checker) on certificate files.
#ifdef P2V_HAVE_CHECKER
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "command.hpp"
#include "p2v/checker/checker.hpp"
#include "p2v/encodings/rules.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"

namespace p2v::tools {
namespace {

// Dispatch on the certificate's kind: rule certificates (p2v rules prove --certificates) are
// re-validated by the counting replay; program certificates by the independent checker.
checker::Verdict check_file(const std::string& f) {
  std::string text;
  try {
    text = engine::read_text_file(f, "certificate");
  } catch (const Error& e) {
    return {false, e.what(), ""};  // unreadable, a directory, or larger than the input limit
  }
  if (text.find(encodings::kRuleCertificateFormat) == std::string::npos) return checker::check_certificate(text);
  checker::Verdict v;
  v.reason = encodings::check_rule_certificate(text, &v.summary);
  v.ok = v.reason.empty();
  return v;
}

Registrar reg("check", [](CLI::App& sub) -> std::function<int()> {
  auto files = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  sub.add_option("certificates", *files, "certificate files (JSON)")->required();
  sub.add_flag("--json", *json, "machine-readable output");
  sub.add_flag("--quiet", *quiet, "print only rejected certificates and the total");
  return [files, json, quiet] {
    nlohmann::json out = nlohmann::json::array();
    std::size_t bad = 0;
    for (const auto& f : *files) {
      const auto v = check_file(f);
      if (!v.ok) ++bad;
      if (*json) {
        out.push_back({{"file", f}, {"ok", v.ok}, {"reason", v.reason}, {"summary", v.summary}});
      } else if (!v.ok) {
        fmt::print("REJECTED {}: {}\n", f, v.reason);
      } else if (!*quiet) {
        fmt::print("ok       {}: {}\n", f, v.summary);
      }
    }
    if (*json)
      fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));  // reasons quote raw input
    else
      fmt::print("{} of {} certificates accepted{}\n", files->size() - bad, files->size(),
                 bad ? fmt::format(", {} rejected", bad) : "");
    return bad ? 1 : 0;
  };
});

}  // namespace
}  // namespace p2v::tools
#endif
