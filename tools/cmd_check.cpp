// p2v check: the independent certificate checker (proofs/checker) on certificate files and
// certificate directories (their manifest first), with every claim's status (re-derived,
// replayed, re-solved or recorded, not re-checked).
#ifdef P2V_HAVE_CHECKER
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "command.hpp"
#include "p2v/checker/checker.hpp"
#include "p2v/encodings/rewrite_certificate.hpp"
#include "p2v/encodings/rules.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/progress.hpp"
#include "p2v/engine/workers.hpp"

namespace p2v::tools {
namespace {

// Dispatch on the certificate's kind: rule certificates (p2v rules prove --certify) and
// rewrite certificates (p2v rewrite --certificate) are re-validated by the counting replay and
// their re-derived queries; program and reshard certificates by the independent checker.
// `deferred`: given, a rule or rewrite certificate is not checked but its text moved there and
// nothing returned (the caller checks it on its own thread; only the independent checker is known
// to run on several threads at once).
std::optional<checker::Verdict> check_text(std::string text, const checker::Context& ctx, bool resolve,
                                           std::string* deferred = nullptr) {
  // Dispatch on the format field itself (a format's name may appear in any text field).
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string format = doc.is_object() && doc.contains("format") && doc["format"].is_string()
                                 ? doc["format"].get<std::string>()
                                 : std::string();
  const bool rule = format == encodings::kRuleCertificateFormat;
  const bool rewrite = format.rfind(std::string(encodings::kRewriteCertificateFormat) + "/", 0) == 0;
  if (!rule && !rewrite) {
    // The document is parsed once here; a text that does not parse goes to the checker as text
    // (it words the refusal).
    auto v = doc.is_discarded() ? checker::check_certificate(text, ctx) : checker::check_certificate(doc, text, ctx);
    if (v.ok && resolve)
      v.summary += "\n  --resolve: this kind stores no SMT-LIB queries; its solver answers stay recorded";
    return v;
  }
  if (deferred) {
    *deferred = std::move(text);
    return std::nullopt;
  }
  checker::Verdict v;
  std::vector<std::array<std::string, 3>> claims;
  v.reason = rule ? encodings::check_rule_certificate(text, &v.summary, &claims, resolve)
                  : encodings::check_rewrite_certificate(text, &v.summary, &claims, resolve);
  v.ok = v.reason.empty();
  for (const auto& c : claims) v.claims.push_back({c[0], c[1], c[2]});
  return v;
}

std::optional<checker::Verdict> check_file(const std::string& f, const checker::Context& ctx, bool resolve,
                                           std::string* deferred = nullptr) {
  std::string text;
  try {
    text = engine::read_text_file(f, "certificate");
  } catch (const Error& e) {
    return checker::Verdict{false, e.what(), "", {}};
  }
  return check_text(std::move(text), ctx, resolve, deferred);
}

Registrar reg("check", [](CLI::App& sub) -> std::function<int()> {
  auto paths = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto resolve = std::make_shared<bool>(false);
  auto progress_flag = std::make_shared<bool>(false);
  auto jobs = std::make_shared<int>(0);
  sub.add_option("certificates", *paths,
                 "certificate files (JSON) or certificate directories (checked against their MANIFEST.json)")
      ->required();
  sub.add_flag("--json", *json, "machine-readable output (every claim with how it was established)");
  sub.add_flag("--quiet", *quiet, "print only rejected certificates and the total");
  sub.add_flag("--progress", *progress_flag,
               "progress on stderr (certificates checked, rate, ETA) even when stderr is not a terminal; --quiet: "
               "none");
  sub.add_flag("--resolve", *resolve,
               "re-run the recorded solver queries with Z3 and cvc5 and compare the answers (rule and rewrite "
               "certificates)");
  sub.add_option("--jobs", *jobs,
                 "certificates of a directory checked at once; 0 = one per hardware thread (output order is "
                 "the manifest's either way)")
      ->capture_default_str();
  return [paths, json, quiet, resolve, progress_flag, jobs] {
    if (*jobs < 0) throw Error(fmt::format("--jobs {}: must be >= 0 (0 = one per hardware thread)", *jobs));
    const std::size_t workers = engine::worker_count(*jobs);
    nlohmann::json out = nlohmann::json::array();
    std::size_t bad = 0, total = 0;
    engine::Progress progress("check: certificates", 0, engine::progress_wanted(*quiet, *progress_flag));
    auto report = [&](const std::string& f, const checker::Verdict& v) {
      ++total;
      progress.add();
      if (!v.ok) ++bad;
      if (*json) {
        nlohmann::json claims = nlohmann::json::array();
        for (const auto& c : v.claims) claims.push_back({{"path", c.path}, {"claim", c.claim}, {"how", c.how}});
        out.push_back({{"file", f}, {"ok", v.ok}, {"reason", v.reason}, {"summary", v.summary}, {"claims", claims}});
      } else if (!v.ok) {
        fmt::print("REJECTED {}: {}\n", f, v.reason);
      } else if (!*quiet) {
        fmt::print("ok       {}: {}\n", f, v.summary);
      }
    };
    // Every argument must exist before anything is checked: a wrong path is the user's error
    // (exit 2), not a rejected certificate. `DIR/MANIFEST.json` among the arguments (the
    // `p2v check DIR/*` form) stands for its directory: the files it lists are checked once, with
    // the directory's rules, and skipped where they are named again.
    std::vector<std::string> dirs, files;
    std::set<std::string> in_dirs;
    for (const auto& p : *paths) {
      std::error_code ec;
      if (!std::filesystem::exists(p, ec)) throw Error(fmt::format("certificate '{}': no such file or directory", p));
      const std::filesystem::path fp(p);
      if (std::filesystem::is_directory(fp, ec))
        dirs.push_back(p);
      else if (fp.filename() == checker::kManifestName)
        dirs.push_back(fp.has_parent_path() ? fp.parent_path().string() : ".");
      else
        files.push_back(p);
    }
    progress.set_total(files.size() + dirs.size());
    for (std::size_t di = 0; di < dirs.size(); ++di) {
      const auto& dir = dirs[di];
      const auto d = checker::check_directory(dir);
      if (!d.ok) {
        report(dir, {false, d.reason, "", {}});
        continue;
      }
      std::size_t certs = 0;
      for (const auto& name : d.context.files) {
        const auto f = std::filesystem::path(dir) / name;
        in_dirs.insert(std::filesystem::weakly_canonical(f).string());
        certs += name.size() > 5 && name.substr(name.size() - 5) == ".json";
      }
      // Known now: this directory's certificates; each later directory counts one until it is read.
      progress.set_total(progress.done() + certs + (dirs.size() - di - 1) + files.size());
      if (certs == 0) {
        report(dir, {false, "the manifest lists no certificate: nothing to check", "", {}});
        continue;
      }
      if (!*json && !*quiet)
        fmt::print("manifest {}: {} files, hashes match, nothing else in the directory; run: {}\n", dir,
                   d.context.files.size(), d.run);
      // Checked in batches by `workers` threads, reported in manifest order after each batch.
      std::vector<std::string> certs_of;
      for (const auto& name : d.context.files)
        if (name.size() > 5 && name.substr(name.size() - 5) == ".json")
          certs_of.push_back((std::filesystem::path(dir) / name).string());
      constexpr std::size_t kBatch = 64;
      for (std::size_t b = 0; b < certs_of.size(); b += kBatch) {
        const std::size_t e = std::min(certs_of.size(), b + kBatch);
        std::vector<std::optional<checker::Verdict>> verdicts(e - b);
        std::vector<std::string> deferred(e - b);  // rule and rewrite certificates, read once
        engine::parallel_for(
            e - b, workers,
            [&](std::size_t i) { verdicts[i] = check_file(certs_of[b + i], d.context, *resolve, &deferred[i]); },
            "try --jobs 1");
        for (std::size_t i = b; i < e; ++i)
          report(certs_of[i],
                 verdicts[i - b] ? *verdicts[i - b] : *check_text(std::move(deferred[i - b]), d.context, *resolve));
      }
    }
    for (const auto& f : files)
      if (!in_dirs.count(std::filesystem::weakly_canonical(f).string())) report(f, *check_file(f, {}, *resolve));
    progress.finish();
    if (*json)
      fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));  // reasons quote raw input
    else
      fmt::print("{} of {} certificates accepted{}\n", total - bad, total,
                 bad ? fmt::format(", {} rejected", bad) : "");
    return bad ? 1 : 0;
  };
});

}  // namespace
}  // namespace p2v::tools
#endif
