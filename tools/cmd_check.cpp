// p2v check: the independent certificate checker (proofs/checker) on certificate files and
// certificate directories (their manifest first), with every claim's status (re-derived,
// replayed, re-solved or recorded, not re-checked).
#ifdef P2V_HAVE_CHECKER
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "command.hpp"
#include "p2v/checker/checker.hpp"
#include "p2v/encodings/rewrite_certificate.hpp"
#include "p2v/encodings/rules.hpp"
#include "p2v/engine/certificate_format.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/progress.hpp"
#include "p2v/engine/workers.hpp"

namespace p2v::tools {
namespace {

// What the directory-level checks need of a program certificate (p2v-certificate/1 or
// p2v-shape-certificate/1): the question it answers (the certificate without its own program's
// fields), the run's problem (system, axes, reduce), its program, and how many programs it says the
// complete set up to its bound holds (-1: it says none).
struct Listed {
  std::string question, problem, matrix, program;
  long long claimed = -1;
};

std::optional<Listed> listed_of(const nlohmann::json& doc) {
  try {
    if (!doc.is_object() || !doc.contains("format")) return std::nullopt;
    const std::string format = doc["format"].is_string() ? doc["format"].get<std::string>() : "";
    nlohmann::json question = doc;
    const nlohmann::json* inst = &doc;  // the concrete part: the certificate, or a shape's instance
    for (const char* k : {"program", "states", "lowered", "facts"}) question.erase(k);
    if (format == engine::kShapeCertificateFormat) {
      inst = &doc.at("instance");
      question.erase("steps");
      question.erase("relies_on");  // worded per program (what its validity rests on)
      for (const char* k : {"program", "states", "lowered", "facts"}) question["instance"].erase(k);
    } else if (format != engine::kCertificateFormat) {
      return std::nullopt;
    }
    Listed l;
    l.question = question.dump();
    l.problem = nlohmann::json{doc.at("system"), doc.at("axes"), doc.at("reduce")}.dump();
    l.matrix = doc.at("matrix").dump();
    l.program = inst->at("program").at("notation").get<std::string>();
    const auto bound = inst->at("max_size");
    if (inst->contains("facts") && inst->at("facts").contains("complete"))
      for (const auto& e : inst->at("facts").at("complete"))
        if (e.at("bound") == bound) l.claimed = std::max(l.claimed, e.at("programs").get<long long>());
    return l;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // not the shape the checker accepts; its verdict says so
  }
}

// Text from the files themselves (a reason quoting a field, a summary, the manifest's command line)
// with its control characters escaped, so that no line of the output can be forged by a file:
// `lines` keeps the checker's own continuation lines (a newline followed by two spaces).
std::string shown(const std::string& s, bool lines) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto ch = static_cast<unsigned char>(s[i]);
    if (ch == '\n' && lines && s.compare(i + 1, 2, "  ") == 0)
      out += '\n';
    else if (ch < 0x20 || ch == 0x7f)
      out += fmt::format("\\x{:02x}", ch);
    else
      out += s[i];
  }
  return out;
}

// The directory-level checks on its accepted program certificates (each checked alone before):
// one run's problem, no program twice, and every program of the complete set each claims. "" when
// they hold, else why not.
std::string check_listing(const std::vector<std::pair<std::string, Listed>>& certs) {
  std::map<std::string, std::string> problems;  // problem -> first file
  for (const auto& [f, l] : certs) problems.emplace(l.problem, f);
  if (problems.size() > 1) {
    auto a = problems.begin(), b = std::next(a);
    return fmt::format(
        "its certificates answer {} different problems (system, axes, reduce), e.g. {} and {}; one run writes "
        "the certificates of one problem",
        problems.size(), a->second, b->second);
  }
  std::map<std::string, std::map<std::string, std::string>> by_question;  // question -> program -> file
  std::map<std::string, std::pair<std::string, long long>> claims;        // question -> (matrix, claimed)
  for (const auto& [f, l] : certs) {
    auto [it, fresh] = by_question[l.question].emplace(l.program, f);
    if (!fresh) return fmt::format("{} and {} certify the same program, {}", it->second, f, l.program);
    auto [c, first] = claims.emplace(l.question, std::make_pair(l.matrix, l.claimed));
    if (!first && c->second.second != l.claimed)
      return fmt::format(
          "the certificates of matrix {} disagree on how many programs the complete set holds ({} and {})", l.matrix,
          c->second.second, l.claimed);
  }
  for (const auto& [q, progs] : by_question) {
    const auto& [matrix, claimed] = claims[q];
    if (claimed >= 0 && static_cast<long long>(progs.size()) != claimed)
      return fmt::format(
          "matrix {}: {} program certificate(s), but they say the complete set up to their bound holds {} programs "
          "(a run writes one certificate per program; the directory is not a whole run)",
          matrix, progs.size(), claimed);
  }
  return "";
}

// Dispatch on the certificate's kind: rule certificates (p2v rules prove --certify) and
// rewrite certificates (p2v rewrite --certificate) are re-validated by the counting replay and
// their re-derived queries; program and reshard certificates by the independent checker.
// `deferred`: given, a rule or rewrite certificate is not checked but its text moved there and
// nothing returned (the caller checks it on its own thread; only the independent checker is known
// to run on several threads at once).
// `listed`: given, what the directory-level checks need of a program certificate (check_listing).
std::optional<checker::Verdict> check_text(std::string text, const checker::Context& ctx, bool resolve,
                                           std::string* deferred = nullptr, std::optional<Listed>* listed = nullptr) {
  // Dispatch on the format field itself (a format's name may appear in any text field). Parsed as
  // the checker parses (an object with a key twice is refused, whatever the certificate's kind).
  nlohmann::json doc;
  try {
    doc = checker::parse_json_strict(text);
  } catch (const std::invalid_argument& e) {
    return checker::Verdict{false, std::string("malformed JSON: ") + e.what(), "", {}};
  } catch (const nlohmann::json::exception&) {
    doc = nlohmann::json(nlohmann::json::value_t::discarded);
  }
  if (listed) *listed = listed_of(doc);
  const std::string format = doc.is_object() && doc.contains("format") && doc["format"].is_string()
                                 ? doc["format"].get<std::string>()
                                 : std::string();
  const bool rule = format == encodings::kRuleCertificateFormat;
  const bool rewrite = format.rfind(std::string(encodings::kRewriteCertificateFormat) + "/", 0) == 0;
  // A format this p2v does not read (another version, a typo) is said to be one, not read as a program
  // certificate whose first missing field would be the message. (Rewrite versions: their reader words it.)
  if (!format.empty() && !rule && !rewrite && format != engine::kCertificateFormat &&
      format != engine::kShapeCertificateFormat && format != checker::kReshardCertificateFormat)
    return checker::Verdict{false,
                            "format " + nlohmann::json(format).dump(-1, ' ', true) +
                                ": not a certificate format this p2v reads (" + engine::kCertificateFormat + ", " +
                                engine::kShapeCertificateFormat + ", " + checker::kReshardCertificateFormat + ", " +
                                encodings::kRuleCertificateFormat + ", " + encodings::kRewriteCertificateFormat + "/" +
                                std::to_string(encodings::kRewriteCertificateVersion) + ")",
                            "",
                            {}};
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
                                           std::string* deferred = nullptr, std::optional<Listed>* listed = nullptr) {
  std::string text;
  try {
    text = engine::read_text_file(f, "certificate");
  } catch (const Error& e) {
    return checker::Verdict{false, e.what(), "", {}};
  }
  return check_text(std::move(text), ctx, resolve, deferred, listed);
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
        fmt::print("REJECTED {}: {}\n", shown(f, false), shown(v.reason, true));
      } else if (!*quiet) {
        fmt::print("ok       {}: {}\n", shown(f, false), shown(v.summary, true));
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
    // A directory named twice (DIR and DIR/MANIFEST.json, or two spellings) is checked once.
    {
      std::set<std::string> seen;
      std::vector<std::string> once;
      for (const auto& d : dirs)
        if (seen.insert(std::filesystem::weakly_canonical(d).string()).second) once.push_back(d);
      dirs = std::move(once);
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
        fmt::print("manifest {}: {} files, hashes match, nothing else in the directory; run (as recorded): {}\n",
                   shown(dir, false), d.context.files.size(), shown(d.run, false));
      // Checked in batches by `workers` threads, reported in manifest order after each batch.
      std::vector<std::string> certs_of;
      for (const auto& name : d.context.files)
        if (name.size() > 5 && name.substr(name.size() - 5) == ".json")
          certs_of.push_back((std::filesystem::path(dir) / name).string());
      std::vector<std::pair<std::string, Listed>> accepted;  // the directory-level checks' input
      bool accepted_all = true;
      constexpr std::size_t kBatch = 64;
      for (std::size_t b = 0; b < certs_of.size(); b += kBatch) {
        const std::size_t e = std::min(certs_of.size(), b + kBatch);
        std::vector<std::optional<checker::Verdict>> verdicts(e - b);
        std::vector<std::string> deferred(e - b);  // rule and rewrite certificates, read once
        std::vector<std::optional<Listed>> listed(e - b);
        engine::parallel_for(
            e - b, workers,
            [&](std::size_t i) {
              verdicts[i] = check_file(certs_of[b + i], d.context, *resolve, &deferred[i], &listed[i]);
            },
            "try --jobs 1");
        for (std::size_t i = b; i < e; ++i) {
          const auto v =
              verdicts[i - b] ? *verdicts[i - b] : *check_text(std::move(deferred[i - b]), d.context, *resolve);
          report(certs_of[i], v);
          accepted_all = accepted_all && v.ok;
          if (v.ok && listed[i - b]) accepted.emplace_back(certs_of[i], std::move(*listed[i - b]));
        }
      }
      // (A rejected certificate already fails the directory; the listing is checked on whole runs.)
      if (accepted_all)
        if (const std::string why = check_listing(accepted); !why.empty()) report(dir, {false, why, "", {}});
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
