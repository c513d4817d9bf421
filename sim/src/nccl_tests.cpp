#include "p2v/sim/nccl_tests.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "p2v/engine/error.hpp"
#include "p2v/engine/text_util.hpp"
#include "p2v/engine/units.hpp"

namespace p2v::sim {

using engine::Collective;
using p2v::Error;

namespace {

std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string t;
  while (ss >> t) out.push_back(t);
  return out;
}

bool is_int(const std::string& s) {
  if (s.empty()) return false;
  std::size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

// A decimal number as a table prints it ("118.57", "0e+00", "-1", "N/A" is not).
bool is_number(const std::string& s) {
  double v = 0;
  const char* b = s.data();
  const auto r = std::from_chars(b, b + s.size(), v);
  return r.ec == std::errc() && r.ptr == b + s.size();
}

// Strips the prefixes launchers put before a process's output, outermost first: kubectl logs
// --prefix ("[pod/NAME/CONTAINER] "), mpirun --tag-output ("[1,0]<stdout>:"; sets `stderr_line` for
// <stderr> lines) and srun -l's task label ("0: ", right-aligned: "  12: ").
std::string strip_tag(const std::string& line, bool& stderr_line) {
  stderr_line = false;
  std::string s = line;
  for (bool again = true; again;) {  // nested launchers (srun running mpirun, ...): until nothing is left to strip
    again = false;
    if (s.rfind("[pod/", 0) == 0)
      if (const auto close = s.find("] "); close != std::string::npos) {
        s = s.substr(close + 2);
        again = true;
      }
    if (!s.empty() && s[0] == '[')
      if (const auto close = s.find(']'); close != std::string::npos)
        for (const char* tag : {"<stdout>:", "<stderr>:"}) {
          const auto n = std::strlen(tag);
          if (s.compare(close + 1, n, tag) == 0) {
            stderr_line = stderr_line || std::strcmp(tag, "<stderr>:") == 0;
            s = s.substr(close + 1 + n);
            again = true;
            break;
          }
        }
    // srun -l: optional blanks, a task number, ": " (a data row never has a colon after its size).
    std::size_t i = s.find_first_not_of(' ');
    if (i != std::string::npos && std::isdigit(static_cast<unsigned char>(s[i]))) {
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      if (i + 1 < s.size() && s[i] == ':' && s[i + 1] == ' ') {
        s = s.substr(i + 2);
        again = true;
      } else if (i + 1 == s.size() && s[i] == ':') {
        s.clear();
      }
    }
  }
  return s;
}

// Half a unit in the last printed digit of a decimal number ("118.57" -> 0.005); 0 for a form
// this does not know (exponent).
double half_ulp(const std::string& s) {
  if (s.find_first_of("eE") != std::string::npos) return 0;
  const auto dot = s.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(s.size() - dot - 1);
  return 0.5 * std::pow(10.0, -decimals);
}

// Finds a *_perf / *_perf_mpi test name as a word in `s`; "" when there is none.
std::string find_test(const std::string& s) {
  static const char* names[] = {"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "broadcast_perf",
                                "reduce_perf",     "alltoall_perf",   "sendrecv_perf",       "gather_perf",
                                "scatter_perf",    "hypercube_perf"};
  for (const char* n : names) {
    std::size_t pos = 0;
    while ((pos = s.find(n, pos)) != std::string::npos) {
      const bool left_ok = pos == 0 || !(std::isalnum(static_cast<unsigned char>(s[pos - 1])) || s[pos - 1] == '_');
      const auto end = pos + std::strlen(n);
      const bool right_ok = end == s.size() || !(std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_') ||
                            s.compare(end, 4, "_mpi") == 0;
      if (left_ok && right_ok) return n;
      pos = end;
    }
  }
  return "";
}

// A terminal's or a web page's dressing of a line, undone: ANSI escape sequences (colours: ESC '['
// parameters, a final byte '@'..'~') removed, Unicode spaces a copy from a web page brings (no-break,
// figure, thin, narrow no-break: U+00A0, U+2007, U+2009, U+202F) made ASCII spaces.
std::string plain(const std::string& raw) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if (c == 0x1b && i + 1 < raw.size() && raw[i + 1] == '[') {
      std::size_t j = i + 2;
      while (j < raw.size() && !(raw[j] >= '@' && raw[j] <= '~')) ++j;
      i = j;  // past the final byte (or the end)
      continue;
    }
    if (c == 0xc2 && i + 1 < raw.size() && static_cast<unsigned char>(raw[i + 1]) == 0xa0) {
      out += ' ';
      ++i;
      continue;
    }
    if (c == 0xe2 && i + 2 < raw.size() && static_cast<unsigned char>(raw[i + 1]) == 0x80) {
      const auto d = static_cast<unsigned char>(raw[i + 2]);
      if (d == 0x87 || d == 0x89 || d == 0xaf) {
        out += ' ';
        i += 2;
        continue;
      }
    }
    out += raw[i];
  }
  return out;
}

// kubectl logs --timestamps: an RFC 3339 time and a blank before the line ("2025-01-02T03:04:05.123Z ").
std::size_t timestamp_prefix(const std::string& s) {
  auto digits = [&](std::size_t at, std::size_t n) {
    if (at + n > s.size()) return false;
    for (std::size_t k = at; k < at + n; ++k)
      if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
    return true;
  };
  if (!(digits(0, 4) && s.size() > 19 && s[4] == '-' && digits(5, 2) && s[7] == '-' && digits(8, 2) && s[10] == 'T' &&
        digits(11, 2) && s[13] == ':' && digits(14, 2) && s[16] == ':' && digits(17, 2)))
    return 0;
  const auto blank = s.find(' ', 19);
  return blank == std::string::npos ? 0 : blank + 1;
}

// A log line as the reader sees it: its line end, terminal and web dressing (plain) and launcher
// prefixes stripped (`line`), and its words with a comment's leading '#' dropped (alone or glued to
// the first word; "#wrong" is a column). No words for an empty line or a <stderr> line.
std::vector<std::string> line_words(std::string raw, std::string& line) {
  if (!raw.empty() && raw.back() == '\r') raw.pop_back();
  raw = plain(raw);
  // A quoted paste ("> " of Markdown or e-mail, nested) and kubectl's timestamps, before the launchers'.
  for (bool again = true; again;) {
    again = false;
    if (!raw.empty() && raw[0] == '>') {
      raw.erase(0, raw.size() > 1 && raw[1] == ' ' ? 2 : 1);
      again = true;
    }
    if (const auto n = timestamp_prefix(raw); n > 0) {
      raw.erase(0, n);
      again = true;
    }
  }
  bool err_line = false;
  line = strip_tag(raw, err_line);
  if (err_line) return {};
  auto toks = tokens(line);
  if (toks.empty()) return toks;
  if (toks[0] == "#")
    toks.erase(toks.begin());
  else if (toks[0][0] == '#' && toks[0].size() > 1 && toks[0] != "#wrong")
    toks[0] = toks[0].substr(1);
  return toks;
}

double number(const std::string& s, const std::string& where, const char* what) {
  return engine::parse_double(s, fmt::format("{}: {}", where, what));
}

struct Columns {
  int size = -1, count = -1, type = -1, redop = -1, root = -1, time = -1, algbw = -1, busbw = -1;
  std::size_t width = 0;
  bool timestamp = false;  // nccl-tests -T 1 (--report_timestamps): a last column "YYYY-mm-dd HH:MM:SS"
  int wrong = -1;          // the out-of-place "#wrong" column (elements that came out wrong), where printed
};

// A column-header line: "size count type redop root time algbw busbw #wrong time ..." (the words
// may have a leading '#'). Returns nullopt when `toks` is not one.
std::optional<Columns> header_columns(const std::vector<std::string>& toks) {
  Columns c;
  c.width = toks.size();
  for (int i = 0; i < static_cast<int>(toks.size()); ++i) {
    const auto& t = toks[static_cast<std::size_t>(i)];
    auto first = [&](int& slot) {
      if (slot < 0) slot = i;
    };
    if (t == "size")
      first(c.size);
    else if (t == "count")
      first(c.count);
    else if (t == "type")
      first(c.type);
    else if (t == "redop")
      first(c.redop);
    else if (t == "root")
      first(c.root);
    else if (t == "time")
      first(c.time);
    else if (t == "algbw")
      first(c.algbw);
    else if (t == "busbw")
      first(c.busbw);
    else if (t == "timestamp")
      c.timestamp = true;
    else if (t == "#wrong" || t == "wrong")
      first(c.wrong);
  }
  if (c.size != 0 || c.count < 0 || c.type < 0 || c.time < 0 || c.algbw < 0 || c.busbw < 0) return std::nullopt;
  return c;
}

// More ranks than any log this reads could come from (an integer guard, not a limit of the model).
constexpr double kMaxRanks = 1e7;

// A whole number as a log writes it; p2v::Error "<where>: <what> 'text' ..." when it is not one or does
// not fit in T.
template <typename T>
T whole(const std::string& s, const std::string& where, const char* what) {
  T v{};
  const char* b = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(b, s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) throw Error(fmt::format("{}: {} '{}' is out of range", where, what, s));
  if (ec != std::errc() || end != s.data() + s.size())
    throw Error(fmt::format("{}: {} '{}' is not a whole number", where, what, s));
  return v;
}

// A rank or node count written in an NCCL INFO line ("nRanks 16"); 0 when it is not a count this reads.
int small_count(const std::string& s) {
  if (!is_int(s) || s[0] == '-' || s[0] == '+' || s.size() > 8) return 0;
  return whole<int>(s, "", "");
}

// A number from 0 on written in an NCCL INFO line (an index, a channel); -1 when it is not one this reads.
int small_index(const std::string& s) {
  if (s == "0") return 0;
  const int n = small_count(s);
  return n > 0 ? n : -1;
}

// The rank count the bus-bandwidth factor of an all-reduce gives (nccl-tests: busbw = algbw x 2 (n-1) / n):
// per row, the n whose factor lies within the printed precision of busbw / algbw; the one n every
// row allows, else 0 (not an all-reduce, no row precise enough, or rows that disagree).
int ranks_from_bandwidths(const NcclTestsLog& log) {
  if (log.collective != Collective::AllReduce) return 0;
  double lo = 1, hi = 1e18;
  bool any = false;
  for (const auto& r : log.rows) {
    const double ea = r.algbw_half_ulp, eb = r.busbw_half_ulp;
    if (ea <= 0 || eb <= 0 || r.algbw_gbps <= 20 * ea) continue;  // too few digits to tell
    const double fmin = std::max(0.0, r.busbw_gbps - eb) / (r.algbw_gbps + ea);
    const double fmax = (r.busbw_gbps + eb) / (r.algbw_gbps - ea);
    if (fmin >= 2) return 0;  // not an all-reduce's factor
    lo = std::max(lo, 2 / (2 - fmin));
    hi = std::min(hi, fmax >= 2 ? 1e18 : 2 / (2 - fmax));
    any = true;
  }
  if (!any || lo > hi) return 0;
  const double first = std::ceil(lo - 1e-9);
  if (first > kMaxRanks) return 0;
  return first <= hi + 1e-9 && first + 1 > hi + 1e-9 ? static_cast<int>(first) : 0;
}

}  // namespace

int nccl_type_bytes(const std::string& type) {
  static const std::map<std::string, int> sizes = {
      {"int8", 1},  {"uint8", 1},   {"char", 1},     {"f8e4m3", 1}, {"f8e5m2", 1}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1},
      {"half", 2},  {"float16", 2}, {"bfloat16", 2}, {"bf16", 2},   {"int32", 4},  {"uint32", 4},   {"int", 4},
      {"float", 4}, {"float32", 4}, {"int64", 8},    {"uint64", 8}, {"double", 8}, {"float64", 8}};
  const auto it = sizes.find(type);
  return it == sizes.end() ? 0 : it->second;
}

std::optional<Collective> collective_of_test(const std::string& test) {
  std::string t = test;
  if (t.size() > 4 && t.compare(t.size() - 4, 4, "_mpi") == 0) t.resize(t.size() - 4);
  if (t == "all_reduce_perf") return Collective::AllReduce;
  if (t == "all_gather_perf") return Collective::AllGather;
  if (t == "reduce_scatter_perf") return Collective::ReduceScatter;
  if (t == "broadcast_perf") return Collective::Broadcast;
  if (t == "reduce_perf") return Collective::Reduce;
  return std::nullopt;
}

namespace {
NcclTestsLog parse_run(const std::string& text, const std::string& origin, const NcclTestsOptions& opt,
                       int lines_before);
}  // namespace

namespace {
// Text this reader can read: no NUL byte (UTF-16, as Windows editors save, has one in every ASCII
// character; a binary file has them too).
void check_text(const std::string& text, const std::string& origin) {
  const bool bom16 = text.size() >= 2 &&
                     ((static_cast<unsigned char>(text[0]) == 0xff && static_cast<unsigned char>(text[1]) == 0xfe) ||
                      (static_cast<unsigned char>(text[0]) == 0xfe && static_cast<unsigned char>(text[1]) == 0xff));
  if (bom16 || text.find('\0') != std::string::npos)
    throw Error(fmt::format("{}: {}; save the log as UTF-8 or ASCII text (e.g. iconv -f UTF-16 -t UTF-8)", origin,
                            bom16 ? "UTF-16 text (its byte-order mark)" : "NUL bytes: UTF-16 text or a binary file"));
}
}  // namespace

NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& origin, const NcclTestsOptions& opt) {
  check_text(text, origin);
  return parse_run(text, origin, opt, 0);
}

namespace {
// One run: `text` starts at line lines_before + 1 of the file it comes from.
NcclTestsLog parse_run(const std::string& text, const std::string& origin, const NcclTestsOptions& opt,
                       int lines_before) {
  NcclTestsLog log;
  log.origin = origin;
  std::optional<Columns> cols;
  int cols_line = 0;
  std::map<int, int> rank_line;  // rank -> line where listed
  std::map<int, std::string> rank_host, rank_dev;
  // A cut Rank list: a Rank line nccl-tests itself ended in "..." (its 2 KiB per-process buffer), or a
  // "..." line after a Rank line (a pasted log's elision) followed by more Rank lines. A "..." line
  // after the last Rank line may elide other text: `ellipsis_after_ranks`, decided after reading.
  bool rank_list_cut = false, ellipsis_after_ranks = false, prev_rank = false;
  std::set<int> info_ranks, info_nodes;  // NCCL INFO "nRanks N" / "nranks N", "nNodes N"
  std::map<int, int> coll_channels;      // NCCL INFO "N coll channels" -> line where first printed
  bool mnnvl = false;                    // NCCL INFO "MNNVL 1": nNodes counts NVLink domains, not hosts
  std::set<int> groups;                  // the Rank lines' Group values (NCCL_TESTS_SPLIT runs several)
  std::map<double, int> sizes_seen;      // a row's size -> its line
  int test_line = 0;
  std::stringstream ss(text);
  std::string raw;
  int ln = lines_before;
  while (std::getline(ss, raw)) {
    ++ln;
    std::string line;
    auto toks = line_words(raw, line);
    if (toks.empty()) continue;
    const auto where = fmt::format("{}:{}", origin, ln);

    // The NCCL version the run used: NCCL's "NCCL version 2.26.2+cuda12.8" (also after "NCCL INFO"), or
    // nccl-tests' header "nccl-library=22602" (NCCL_VERSION_CODE: major x 10000 + minor x 100 + patch).
    {
      std::string v;
      for (std::size_t i = 0; i + 2 < toks.size(); ++i)
        if (toks[i] == "NCCL" && toks[i + 1] == "version" && !toks[i + 2].empty() &&
            std::isdigit(static_cast<unsigned char>(toks[i + 2][0])))
          v = toks[i + 2];
      for (const auto& w : toks)
        if (w.rfind("nccl-library=", 0) == 0 && w.size() > 13 && is_int(w.substr(13))) {
          const int code = whole<int>(w.substr(13), where, "nccl-library");
          v = fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
        }
      if (!v.empty()) {
        const auto core = v.substr(0, v.find_first_of("+-"));
        if (!log.nccl_version.empty() && log.nccl_version.substr(0, log.nccl_version.find_first_of("+-")) != core)
          throw Error(fmt::format("{}: NCCL version {} after {} (line {}); one run per log", where, v, log.nccl_version,
                                  log.nccl_version_line));
        if (log.nccl_version.empty()) {
          log.nccl_version = v;
          log.nccl_version_line = ln;
        }
        continue;
      }
    }
    // NCCL's INFO lines: the communicator's size ("comm 0x.. rank 0 nranks 16 ... Init COMPLETE";
    // from v2.19 "ncclCommInitRank ... nRanks 16 nNodes 2 localRanks 8").
    if (std::adjacent_find(toks.begin(), toks.end(), [](const std::string& a, const std::string& b) {
          return a == "NCCL" && b == "INFO";
        }) != toks.end()) {
      for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
        const int n = small_count(toks[i + 1]);
        if ((toks[i] == "nranks" || toks[i] == "nRanks") && n > 0) info_ranks.insert(n);
        // NCCL's "%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, ..." (src/init.cc
        // from v2.19; src/graph/paths.cc before: "%d coll channels, %d p2p channels, ..."): every rank prints
        // it. Counts that disagree (several communicators) are dropped with a note after the loop.
        if (i + 2 < toks.size() && toks[i + 1] == "coll" && toks[i + 2].rfind("channels", 0) == 0) {
          if (const int c = small_count(toks[i]); c > 0 && c <= 64) coll_channels.emplace(c, ln);
        }
        if (toks[i] == "nNodes" && n > 0) info_nodes.insert(n);
        if (toks[i] == "MNNVL" && toks[i + 1] != "0") mnnvl = true;
        // src/enqueue.cc (v2.23 on), NCCL_DEBUG_SUBSYS=TUNING: "Func: N Bytes -> Algo A proto P
        // channel{Lo..Hi}={l..h}".
        if (i >= 2 && i + 4 < toks.size() && toks[i] == "Bytes" && toks[i + 1] == "->" && toks[i + 2] == "Algo" &&
            toks[i + 4] == "proto" && i + 5 < toks.size() && toks[i - 2].size() > 1 && toks[i - 2].back() == ':' &&
            is_int(toks[i - 1]) && toks[i - 1][0] != '-' && toks[i - 1].size() <= 18) {
          NcclTestsLog::Pick pk{toks[i - 2].substr(0, toks[i - 2].size() - 1),
                                std::stod(toks[i - 1]),
                                toks[i + 3],
                                toks[i + 5],
                                false,
                                0,
                                ln};
          if (is_int(toks[i + 3]) && is_int(toks[i + 5]) && i + 6 < toks.size() && toks[i + 6] == "time") {
            // v2.23: NCCL's numbers (src/include/device.h NCCL_ALGO_*, NCCL_PROTO_*), the call's whole bytes.
            static const char* const kAlgos[] = {"TREE",      "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
                                                 "NVLS_TREE", "PAT"};
            static const char* const kProtos[] = {"LL", "LL128", "SIMPLE"};
            auto name = [](int k, const auto& names) -> std::string {
              return k >= 0 && k < static_cast<int>(std::size(names)) ? names[k] : "?";
            };
            pk.algo = name(small_index(toks[i + 3]), kAlgos);
            pk.proto = name(small_index(toks[i + 5]), kProtos);
            pk.total = true;
          }
          if (i + 6 < toks.size() && toks[i + 6].rfind("channel{Lo..Hi}={", 0) == 0) {
            const auto r = toks[i + 6].substr(17);
            const auto dots = r.find("..");
            if (dots != std::string::npos && r.size() > dots + 3 && r.back() == '}') {
              const int lo = small_index(r.substr(0, dots)), hi = small_index(r.substr(dots + 2, r.size() - dots - 3));
              if (lo >= 0 && hi >= lo && hi < 1024) pk.channels = hi - lo + 1;
            }
          }
          auto it = std::find_if(log.picks.begin(), log.picks.end(),
                                 [&](const auto& x) { return x.func == pk.func && x.bytes == pk.bytes; });
          if (it == log.picks.end())
            log.picks.push_back(pk);
          else if ((it->algo != pk.algo || it->proto != pk.proto) && it->line > 0) {
            log.notes.push_back(fmt::format("{}: NCCL picked {}/{} for {} of {} B and (line {}) {}/{}: not used", where,
                                            pk.algo, pk.proto, pk.func, toks[i - 1], it->line, it->algo, it->proto));
            it->line = 0;  // marked: left out below
          }
        }
        // src/misc/param.cc, src/graph/tuning.cc: "NAME set by environment to VALUE" (integers end in '.').
        if (i >= 1 && i + 4 < toks.size() && toks[i] == "set" && toks[i + 1] == "by" && toks[i + 2] == "environment" &&
            toks[i + 3] == "to" && toks[i - 1].rfind("NCCL_", 0) == 0) {
          std::string v = toks[i + 4];
          if (v.size() > 1 && v.back() == '.' && is_int(v.substr(0, v.size() - 1))) v.pop_back();
          const auto& name = toks[i - 1];
          auto it = std::find_if(log.env.begin(), log.env.end(), [&](const auto& e) { return e.name == name; });
          if (it == log.env.end())
            log.env.push_back({name, v, ln});
          else if (it->value != v && it->line > 0) {
            log.notes.push_back(fmt::format("{}: {} set by environment to {} and (line {}) {}: not used", where, name,
                                            v, it->line, it->value));
            it->line = 0;  // marked: left out below
          }
        }
      }
      continue;
    }
    const bool was_rank = prev_rank;
    prev_rank = false;
    if (toks.size() == 1 && toks[0] == "...") {
      if (was_rank && !cols) ellipsis_after_ranks = true;
      continue;
    }
    // The test's name.
    if (const auto t = find_test(line); !t.empty()) {
      const bool marker = line.find("Collective test starting") != std::string::npos;
      if (log.test.empty() || marker) {
        if (!log.test.empty() && log.test != t && marker && test_line > 0 && !log.rows.empty())
          throw Error(fmt::format("{}: a second test ({}) after the rows of {} in one run", where, t, log.test));
        log.test = t;
        test_line = ln;
      }
      if (toks[0] != "Rank") continue;
    }
    // "nThread 1 nGpus 8 minBytes ..."
    if (toks[0] == "nThread") {
      for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
        if (toks[i] == "nThread" && is_int(toks[i + 1])) log.nthread = whole<int>(toks[i + 1], where, "nThread");
        if (toks[i] == "nGpus" && is_int(toks[i + 1])) log.ngpus = whole<int>(toks[i + 1], where, "nGpus");
      }
      continue;
    }
    // "Rank  3 Group  0 Pid 123 on HOST device  3 [0x..] NAME" (older: no Group)
    if (toks[0] == "Rank" && toks.size() >= 2 && is_int(toks[1])) {
      if (ellipsis_after_ranks) rank_list_cut = true;  // Rank lines go on after a "...": the list was cut
      if (toks.back().size() >= 3 && toks.back().compare(toks.back().size() - 3, 3, "...") == 0) {
        rank_list_cut = true;  // nccl-tests' own cut: the line is incomplete
        continue;
      }
      prev_rank = true;
      for (std::size_t i = 1; i + 1 < toks.size(); ++i)
        if (toks[i] == "Group" && is_int(toks[i + 1])) groups.insert(whole<int>(toks[i + 1], where, "group"));
      const auto on = std::find(toks.begin(), toks.end(), "on");
      const auto dev = std::find(toks.begin(), toks.end(), "device");
      if (on == toks.end() || on + 1 == toks.end() || dev == toks.end() || dev < on)
        throw Error(
            fmt::format("{}: rank line without 'on HOST device N' (nccl-tests prints '#  Rank R Group G Pid P on "
                        "HOST device D [BUS] GPU'); restore the line as printed or remove the Rank lines",
                        where));
      const int r = whole<int>(toks[1], where, "rank");
      if (r < 0) throw Error(fmt::format("{}: negative rank {}", where, r));
      if (const auto it = rank_line.find(r); it != rank_line.end())
        throw Error(
            fmt::format("{}: rank {} is listed twice (first at line {}); one run per log, started by one "
                        "launcher (mpirun or a single process)",
                        where, r, it->second));
      rank_line[r] = ln;
      rank_host[r] = *(on + 1);
      // the device name: the words after the "[bus id]" word
      std::string name;
      for (auto it = dev + 1; it != toks.end(); ++it)
        if (!it->empty() && it->front() == '[')
          for (auto jt = it + 1; jt != toks.end(); ++jt) name += (name.empty() ? "" : " ") + *jt;
      rank_dev[r] = name;
      continue;
    }
    // Column header.
    if (toks.size() > 2 && toks[0] == "size" && toks[1] == "count" &&
        std::find(toks.begin(), toks.end(), "cputime") != toks.end())
      throw Error(
          fmt::format("{}: the table reports CPU time (nccl-tests -C 1): the host's time to launch the calls, not the "
                      "collective's; rerun without -C (p2v reads the GPU time nccl-tests prints by default)",
                      where));
    if (auto c = header_columns(toks)) {
      if (cols && !log.rows.empty())
        throw Error(fmt::format("{}: a second result table (the first starts at line {}); give one table per log",
                                where, cols_line));
      cols = c;
      cols_line = ln;
      continue;
    }
    // A data row: the first word an integer size.
    if (!is_int(toks[0])) {
      // Under a column header, a line shaped like a row (the header's width, mostly numbers) whose first
      // word is not a size: a prefix or a mark this reader does not know. Left out, but said.
      if (cols && toks.size() + 1 >= cols->width) {
        std::size_t numbers = 0;
        for (const auto& w : toks) numbers += is_number(w) ? 1 : 0;
        if (numbers + 2 >= cols->width)
          log.notes.push_back(
              fmt::format("{}: a line shaped like a row of the table, but its first word '{}' is not a "
                          "size: left out (remove what comes before the size)",
                          where, toks[0].size() > 24 ? toks[0].substr(0, 21) + "..." : toks[0]));
      }
      continue;
    }
    if (!cols) {
      // A number before any column header: text we do not know (e.g. a shell listing); rows need it.
      continue;
    }
    const auto& c = *cols;
    // A launcher's message between the rows that happens to start with a number (Open MPI's "8 more
    // processes have sent help message ..."): a word where the count is, and not a data type where the
    // type is. Skipped with a note; a row with a bad field still is an error.
    if (static_cast<std::size_t>(c.count) < toks.size() && !is_int(toks[c.count]) &&
        (static_cast<std::size_t>(c.type) >= toks.size() || nccl_type_bytes(toks[c.type]) == 0)) {
      log.notes.push_back(fmt::format("{}: not a row of the table, skipped: '{}'", where,
                                      line.size() > 80 ? line.substr(0, 77) + "..." : line));
      continue;
    }
    const int need = std::max({c.size, c.count, c.type, c.redop, c.root, c.time, c.algbw, c.busbw}) + 1;
    if (static_cast<int>(toks.size()) < need)
      throw Error(fmt::format("{}: {} fields, the column header (line {}) needs at least {}", where, toks.size(),
                              cols_line, need));
    // The timestamp column's header is one word, its values two ("2025-01-01 12:00:00").
    const std::size_t width = c.width + (c.timestamp ? 1 : 0);
    if (toks.size() > width)
      throw Error(fmt::format("{}: {} fields, more than the {} of the column header (line {})", where, toks.size(),
                              width, cols_line));
    auto at = [&](int i) -> const std::string& { return toks[static_cast<std::size_t>(i)]; };
    NcclTestsRow row;
    row.line = ln;
    if (!is_int(at(c.size)) || at(c.size)[0] == '-')
      throw Error(fmt::format("{}: size '{}' is not a byte count", where, at(c.size)));
    row.bytes = number(at(c.size), where, "size");
    if (!is_int(at(c.count)) || at(c.count)[0] == '-')
      throw Error(fmt::format("{}: count '{}' is not an element count", where, at(c.count)));
    row.count = whole<std::int64_t>(at(c.count), where, "count");
    row.type = at(c.type);
    if (nccl_type_bytes(row.type) == 0) throw Error(fmt::format("{}: unknown data type '{}'", where, row.type));
    if (c.redop >= 0) row.redop = at(c.redop);
    if (c.root >= 0) {
      if (!is_int(at(c.root))) throw Error(fmt::format("{}: root '{}' is not a rank", where, at(c.root)));
      row.root = whole<int>(at(c.root), where, "root");
    }
    row.time_us = number(at(c.time), where, "time");
    row.algbw_gbps = number(at(c.algbw), where, "algbw");
    row.busbw_gbps = number(at(c.busbw), where, "busbw");
    row.algbw_half_ulp = half_ulp(at(c.algbw));
    row.busbw_half_ulp = half_ulp(at(c.busbw));
    if (row.bytes == 0) {  // nccl-tests -b 0: a call that moves nothing, no point to fit or predict
      ++log.zero_rows;
      continue;
    }
    if (row.time_us <= 0) throw Error(fmt::format("{}: time {} us is not positive", where, at(c.time)));
    if (row.algbw_gbps < 0 || row.busbw_gbps < 0) throw Error(fmt::format("{}: negative bandwidth", where));
    // One measurement: the size a whole number of elements (count x type, times the ranks for
    // all-gather and reduce-scatter), and the printed algbw the size over the printed time (nccl-tests:
    // algbw = size / time), each within half a unit of its last printed digit.
    const int type_bytes = nccl_type_bytes(row.type);
    if (row.count > 0 && std::fmod(row.bytes, static_cast<double>(row.count) * type_bytes) != 0)
      throw Error(
          fmt::format("{}: size {} is not a whole multiple of count x type ({} x {} B): not a row nccl-tests "
                      "prints",
                      where, at(c.size), row.count, type_bytes));
    {
      const double time_ulp = half_ulp(at(c.time));
      const double ht = time_ulp > 0 ? time_ulp : 1e-3 * row.time_us;
      const double ha = row.algbw_half_ulp > 0 ? row.algbw_half_ulp : 1e-3 * row.algbw_gbps;
      const double lo = row.bytes / ((row.time_us + ht) * 1e3);
      const double hi = row.time_us > ht ? row.bytes / ((row.time_us - ht) * 1e3) : HUGE_VAL;
      const double slack = 1e-9 * (1 + row.algbw_gbps);
      if (lo > row.algbw_gbps + ha + slack || hi < row.algbw_gbps - ha - slack)
        throw Error(
            fmt::format("{}: time {} us and algbw {} GB/s do not agree (size / time = {:.4g} GB/s; nccl-tests "
                        "prints algbw = size / time): an edited or corrupted row",
                        where, at(c.time), at(c.algbw), row.bytes / (row.time_us * 1e3)));
    }
    if (const auto it = sizes_seen.find(row.bytes); it != sizes_seen.end())
      throw Error(
          fmt::format("{}: size {} repeats the row of line {} (one table per run; a second copy of the table, "
                      "or a second run without its header, is not read)",
                      where, at(c.size), it->second));
    sizes_seen[row.bytes] = ln;
    // nccl-tests' check found wrong results (-c 1): the run was broken at this size; its time is left out.
    if (c.wrong >= 0 && static_cast<std::size_t>(c.wrong) < toks.size() && is_int(at(c.wrong)) && at(c.wrong) != "0" &&
        whole<std::int64_t>(at(c.wrong), where, "#wrong") > 0) {
      log.notes.push_back(
          fmt::format("{}: size {}: nccl-tests counted {} wrong element(s) (#wrong): the row is left "
                      "out",
                      where, at(c.size), at(c.wrong)));
      continue;
    }
    log.rows.push_back(std::move(row));
  }
  std::erase_if(log.env, [](const auto& e) { return e.line == 0; });
  std::erase_if(log.picks, [](const auto& x) { return x.line == 0; });
  if (log.rows.empty())
    throw Error(
        fmt::format("{}: no result rows (expected the nccl-tests table: a header naming size, count, type, "
                    "time, algbw, busbw and rows below it)",
                    origin));

  // The collective.
  std::optional<Collective> named;
  if (!log.test.empty()) {
    named = collective_of_test(log.test);
    if (!named)
      throw Error(
          fmt::format("{}:{}: test {} is not one p2v models (all_reduce, all_gather, reduce_scatter, "
                      "broadcast, reduce)",
                      origin, test_line, log.test));
  }
  // What the table says, when it can tell: root >= 0 means broadcast/reduce, redop none a data movement;
  // a reduction whose count is size / (element x k), k > 1, is a reduce-scatter over k ranks.
  const auto& r0 = log.rows.front();
  const int elt = nccl_type_bytes(r0.type);
  std::optional<Collective> table;
  const double per_rank = static_cast<double>(r0.count) * elt;
  // size / (count x element): 1 for all-reduce, the ranks for all-gather and reduce-scatter (0: not whole).
  const double size_ranks = per_rank > 0 && std::fmod(r0.bytes, per_rank) == 0 ? r0.bytes / per_rank : 0;
  if (r0.root >= 0) {
    table = (r0.redop == "none") ? Collective::Broadcast : Collective::Reduce;
  } else if (r0.redop == "none") {
    table = Collective::AllGather;
  } else if (!r0.redop.empty()) {
    if (per_rank == r0.bytes)
      table = Collective::AllReduce;
    else if (size_ranks > 1)
      table = Collective::ReduceScatter;
  }
  if (opt.collective) {
    if (named && *named != *opt.collective)
      throw Error(fmt::format("{}:{}: the log runs {}, {} was asked", origin, test_line, log.test,
                              engine::to_string(*opt.collective)));
    log.collective = *opt.collective;
  } else if (named) {
    log.collective = *named;
  } else if (table) {
    log.collective = *table;
  } else {
    throw Error(
        fmt::format("{}: the log does not name its test and the table does not tell (give the collective)", origin));
  }
  if (named && table && *named != *table && !(r0.redop.empty()))
    throw Error(fmt::format("{}:{}: the rows look like {} but the log runs {}", origin, r0.line,
                            engine::to_string(*table), log.test));

  // Ranks and hosts. Sources, most direct first: the complete list of Rank lines; NCCL's INFO lines
  // ("nRanks 16 nNodes 2", "nranks 16"); the sizes (all-gather and reduce-scatter: count = size /
  // (element x ranks)); the bandwidths (all-reduce: busbw / algbw = 2 (n-1) / n). Every source the
  // log has must agree: a disagreement means mixed output, which is an error.
  if (groups.size() > 1)
    throw Error(fmt::format(
        "{}:{}: the Rank lines name {} groups (NCCL_TESTS_SPLIT / _SPLIT_MASK: several communicators at once); p2v "
        "reads runs of one communicator of all the ranks",
        origin, rank_line.begin()->second, groups.size()));
  if (!coll_channels.empty() && mnnvl) {
    // Hosts of one NVLink domain are one node to NCCL: its channels are not those of a call
    // across this model's nodes.
    log.notes.push_back(fmt::format(
        "{}: NCCL INFO says MNNVL: its {} coll channels are those of an NVLink domain of several hosts; not used",
        origin, coll_channels.begin()->first));
  } else if (coll_channels.size() == 1 && info_ranks.size() <= 1) {
    std::tie(log.coll_channels, log.coll_channels_line) = *coll_channels.begin();
  } else if (!coll_channels.empty()) {
    log.notes.push_back(fmt::format(
        "{}: NCCL INFO lines print {} collective channel counts (first at lines {} and {}) or name communicators "
        "of several sizes: channels not used",
        origin, coll_channels.size(), coll_channels.begin()->second,
        coll_channels.size() > 1 ? std::next(coll_channels.begin())->second : coll_channels.begin()->second));
  }
  if (info_ranks.size() > 1 || info_nodes.size() > 1) {
    // INFO lines of several communicator sizes (an application's communicators around the test): none
    // is the test's for sure.
    log.notes.push_back(
        fmt::format("{}: NCCL INFO lines name communicators of {} sizes and {} node counts: not used for the shape",
                    origin, info_ranks.size(), info_nodes.size()));
    info_ranks.clear();
    info_nodes.clear();
  }
  struct Source {
    int ranks;
    std::string what;
  };
  std::vector<Source> others;  // every source but the Rank lines
  if (info_ranks.size() == 1) others.push_back({*info_ranks.begin(), "the log's NCCL INFO lines say {} ranks"});
  if ((log.collective == Collective::AllGather || log.collective == Collective::ReduceScatter) && size_ranks >= 1 &&
      size_ranks <= kMaxRanks)
    others.push_back(
        {static_cast<int>(size_ranks),
         fmt::format("the log's sizes (line {}: count x element = size / ranks) give {{}} ranks", r0.line)});
  if (const int n = ranks_from_bandwidths(log); n > 0)
    others.push_back({n, "the log's busbw/algbw ratios (2 (n-1) / n) give {} ranks"});
  // The Rank lines are the run's whole list when they are 0..n-1 and not cut; a "..." line after the
  // last of them counts as a cut unless another source gives exactly n.
  const int listed = static_cast<int>(rank_line.size());
  const bool contiguous = !rank_line.empty() && rank_line.rbegin()->first == listed - 1;
  const bool others_say_listed = !others.empty() && others.front().ranks == listed;
  const bool listed_complete = contiguous && !rank_list_cut && (!ellipsis_after_ranks || others_say_listed);
  std::vector<Source> sources;
  if (listed_complete) {
    sources.push_back({listed, "the log lists {} ranks"});
    for (const auto& [r, h] : rank_host)
      if (std::find(log.hosts.begin(), log.hosts.end(), h) == log.hosts.end()) log.hosts.push_back(h);
    log.nodes = static_cast<int>(log.hosts.size());
    for (const auto& [r, d] : rank_dev) log.devices.push_back(d);
    std::map<std::string, int> per_host;
    for (const auto& [r, h] : rank_host) ++per_host[h];
    const int first = per_host.begin()->second;
    log.ranks_per_node =
        std::all_of(per_host.begin(), per_host.end(), [&](const auto& x) { return x.second == first; }) ? first : 0;
  } else if (!rank_line.empty()) {
    log.notes.push_back(
        fmt::format("{}:{}: the log lists {} of its ranks (up to rank {}; the list was cut: a '...' among or after "
                    "the Rank lines, or gaps): the shape is not read from it",
                    origin, rank_line.begin()->second, listed, rank_line.rbegin()->first));
  }
  sources.insert(sources.end(), others.begin(), others.end());
  if (!rank_line.empty()) {
    log.top_rank = rank_line.rbegin()->first;
    log.top_rank_line = rank_line.rbegin()->second;
  }
  if (!info_nodes.empty()) {
    const int nn = *info_nodes.begin();
    if (mnnvl)
      log.notes.push_back(fmt::format(
          "{}: NCCL INFO says MNNVL: its nNodes {} counts NVLink domains, not hosts; not used", origin, nn));
    else if (log.nodes > 0 && log.nodes != nn)
      log.notes.push_back(fmt::format("{}: the Rank lines name {} hosts, NCCL INFO says nNodes {}: the hosts are used",
                                      origin, log.nodes, nn));
    else
      log.nodes = nn;
  }
  auto said = [](const Source& x) { return fmt::format(fmt::runtime(x.what), x.ranks); };
  for (const auto& src : sources)
    if (src.ranks != sources.front().ranks)
      throw Error(fmt::format("{}: {}, but {}; one run per log (or a Rank list cut without a '...')", origin,
                              said(sources.front()), said(src)));
  if (!sources.empty()) {
    log.ranks = sources.front().ranks;
    log.ranks_said = said(sources.front());
  }
  if (opt.ranks > 0) expect_ranks(log, opt.ranks, fmt::format("the run has {} ranks", opt.ranks));
  if (!listed_complete && !rank_line.empty() && log.ranks > 0 && rank_line.rbegin()->first >= log.ranks)
    throw Error(fmt::format("{}:{}: rank {} listed, but the run has {} ranks", origin, rank_line.rbegin()->second,
                            rank_line.rbegin()->first, log.ranks));
  if (log.nodes > 0 && log.ranks > 0 && !listed_complete) {
    if (log.ranks % log.nodes != 0)
      throw Error(
          fmt::format("{}: {} ranks on {} nodes: not the same number on every node", origin, log.ranks, log.nodes));
    log.ranks_per_node = log.ranks / log.nodes;
  }
  return log;
}
}  // namespace

std::vector<NcclTestsLog> parse_nccl_tests_runs(const std::string& text, const std::string& origin,
                                                const NcclTestsOptions& opt) {
  check_text(text, origin);
  // Where each run starts: nccl-tests' version line, its test marker, its "nThread" line, or a line
  // naming a test (a command line, a script's echo; not nccl-tests' closing line), when it comes
  // after rows of the run before it, or when that run printed the same kind of header already (a
  // test that stopped before its table) or named another test (e.g. a script's echo of the test
  // before). Lines are counted as parse_run counts them.
  struct Run {
    std::size_t begin = 0;  // byte offset of its first line
    int first_line = 1;
    std::string marked,
        named;  // the test of its last marker line (as parse_run takes it), of its first line naming one
    bool rows = false, version = false, marker = false, nthread = false;
  };
  std::vector<Run> runs(1);
  bool table = false;
  std::size_t pos = 0;
  int ln = 0;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    const auto end = nl == std::string::npos ? text.size() : nl;
    const std::size_t begin = pos;
    pos = nl == std::string::npos ? text.size() : nl + 1;
    ++ln;
    std::string line;
    const auto toks = line_words(text.substr(begin, end - begin), line);
    if (toks.empty()) continue;
    const bool marker = line.find("Collective test starting") != std::string::npos;
    const bool closing = line.find("Collective test concluded") != std::string::npos;
    const std::string test = toks[0] == "Rank" ? "" : find_test(line);
    const bool version = toks.size() > 1 && toks[0] == "nccl-tests" && toks[1] == "version";
    const bool nthread = toks[0] == "nThread";
    const bool names = !test.empty() && !marker && !closing;
    {
      const auto& cur = runs.back();
      const bool header = marker || version || nthread || names;
      const bool again = (version && cur.version) || (marker && cur.marker) || (nthread && cur.nthread) ||
                         (names && !cur.named.empty() && cur.named != test && !cur.rows);
      if (header && (cur.rows || again)) {
        Run next;
        next.begin = begin;
        next.first_line = ln;
        runs.push_back(std::move(next));
        table = false;
      }
    }
    auto& r = runs.back();
    r.version = r.version || version;
    r.nthread = r.nthread || nthread;
    if (marker && !test.empty()) {
      r.marker = true;
      r.marked = test;
    }
    if (!test.empty() && r.named.empty()) r.named = test;
    if (header_columns(toks))
      table = true;
    else if (table && is_int(toks[0]))
      r.rows = true;
  }
  // A stretch without rows and without nccl-tests' headers (a line naming the test after its
  // table) belongs to the run before it; one with headers is a run that printed no table.
  for (std::size_t i = runs.size(); i-- > 1;)
    if (!runs[i].rows && !runs[i].version && !runs[i].marker && !runs[i].nthread)
      runs.erase(runs.begin() + static_cast<std::ptrdiff_t>(i));
  if (runs.size() == 1) return {parse_nccl_tests(text, origin, opt)};

  std::vector<NcclTestsLog> out;
  std::vector<std::string> left_out;
  std::string tests;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& r = runs[i];
    const std::string& test = r.marked.empty() ? r.named : r.marked;  // as parse_run takes it
    if (i < 8) tests += (tests.empty() ? "" : ", ") + (test.empty() ? std::string("unnamed") : test);
    if (i == 8) tests += ", ...";
    if (!r.rows) {
      left_out.push_back(fmt::format("{}:{}: the run of {} left out (it printed no result rows)", origin, r.first_line,
                                     test.empty() ? std::string("an unnamed test") : test));
      continue;
    }
    const auto named = test.empty() ? std::nullopt : collective_of_test(test);
    if (!test.empty() && !named) {
      left_out.push_back(
          fmt::format("{}:{}: the run of {} left out (not a test p2v models)", origin, r.first_line, test));
      continue;
    }
    if (named && opt.collective && *named != *opt.collective) {
      left_out.push_back(fmt::format("{}:{}: the run of {} left out ({} was asked)", origin, r.first_line, test,
                                     engine::to_string(*opt.collective)));
      continue;
    }
    // The run alone; its errors and rows carry the file's line numbers.
    const std::size_t end = i + 1 < runs.size() ? runs[i + 1].begin : text.size();
    const std::string part = text.substr(r.begin, end - r.begin);
    if (test.empty() && opt.collective) {
      // A run that does not name its test: left out when its table says another collective than the
      // one asked for (the asked collective is for runs the table cannot tell).
      NcclTestsOptions plain = opt;
      plain.collective.reset();
      std::optional<engine::Collective> table;
      try {
        table = parse_run(part, origin, plain, r.first_line - 1).collective;
      } catch (const Error&) {
      }
      if (table && *table != *opt.collective) {
        left_out.push_back(fmt::format("{}:{}: a run whose table is {} left out ({} was asked)", origin, r.first_line,
                                       engine::to_string(*table), engine::to_string(*opt.collective)));
        continue;
      }
    }
    out.push_back(parse_run(part, origin, opt, r.first_line - 1));
  }
  if (out.empty())
    throw Error(fmt::format("{}: none of its {} runs ({}) is {}", origin, runs.size(), tests,
                            opt.collective ? fmt::format("a run of {}", engine::to_string(*opt.collective))
                                           : std::string("of a test p2v models (all_reduce, all_gather, "
                                                         "reduce_scatter, broadcast, reduce)")));
  out.front().notes.insert(out.front().notes.begin(), left_out.begin(), left_out.end());
  return out;
}

void expect_ranks(NcclTestsLog& log, int ranks, const std::string& of) {
  if (log.ranks > 0) {
    if (log.ranks != ranks) throw Error(fmt::format("{}: {}, {} expected", log.origin, log.ranks_said, ranks));
    return;
  }
  if (log.top_rank >= ranks)
    throw Error(fmt::format("{}:{}: rank {} listed, but {}", log.origin, log.top_rank_line, log.top_rank, of));
  log.ranks = ranks;
}

namespace {

// The file's text, at most kMaxNcclTestsBytes; "-" is standard input (a pipe from kubectl logs, ...).
std::string read_log(const std::string& path) {
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw Error(fmt::format("nccl-tests log '{}': cannot open it ({})", path, std::strerror(errno)));
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::error_code ec;
  std::string text;
  text.resize(kMaxNcclTestsBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad())
    throw Error(fmt::format("nccl-tests log '{}': read error{}", path,
                            std::filesystem::is_directory(path, ec) ? " (a directory, not a file)" : ""));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxNcclTestsBytes)
    throw Error(fmt::format("nccl-tests log '{}': larger than {} MiB; cut it to the test's output", path,
                            kMaxNcclTestsBytes >> 20));
  return text;
}

}  // namespace

NcclTestsLog load_nccl_tests(const std::string& path, const NcclTestsOptions& opt) {
  return parse_nccl_tests(read_log(path), path == "-" ? "<stdin>" : path, opt);
}

std::vector<NcclTestsLog> load_nccl_tests_runs(const std::string& path, const NcclTestsOptions& opt) {
  return parse_nccl_tests_runs(read_log(path), path == "-" ? "<stdin>" : path, opt);
}

// NCCL's parseList (src/graph/tuning.cc); see the header.
std::optional<std::vector<std::string>> nccl_env_list(const std::string& value, engine::Collective coll, int v,
                                                      const std::vector<std::string>& all, const std::string& where,
                                                      std::vector<std::string>& notes) {
  using engine::text::lower;
  auto split = [](const std::string& x, char sep) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= x.size()) {
      const auto at = std::min(x.find(sep, pos), x.size());
      out.push_back(x.substr(pos, at - pos));
      pos = at + 1;
    }
    return out;
  };
  auto parse = [&](std::string list) {
    const bool except = !list.empty() && list[0] == '^';
    if (except) list.erase(0, 1);
    std::vector<std::string> named;
    for (const auto& w0 : split(list, ',')) {
      const auto w = lower(w0);
      if (w.empty()) continue;
      // "CollNet" is v2.9-v2.13's name; from v2.14 CollNetDirect and CollNetChain.
      if (std::find(all.begin(), all.end(), w) == all.end() || (w == "collnet" && v >= 21400)) {
        if (v >= 22400)
          throw Error(fmt::format("{}: '{}' is not one of NCCL's names ({})", where, w0, fmt::join(all, ", ")));
        notes.push_back(
            fmt::format("{}: '{}' is not one of NCCL's names: ignored, as NCCL does before v2.24", where, w0));
        continue;
      }
      named.push_back(w);
    }
    if (!except) return named;
    std::vector<std::string> out;
    for (const auto& x : all)
      if (std::find(named.begin(), named.end(), x) == named.end()) out.push_back(x);
    return out;
  };
  if (v < 22400) return parse(value);
  static const std::vector<std::string> kFuncs = {"broadcast", "reduce", "allgather", "reducescatter",
                                                  "allreduce"};  // ncclFuncStr
  const std::string c = lower(engine::to_string(coll));
  std::optional<std::vector<std::string>> out;
  const auto entries = split(value, ';');
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto colon = entries[i].find(':');
    if (colon == std::string::npos) {
      if (i > 0)
        throw Error(fmt::format("{}: '{}': every entry but the first names its function (NCCL's rule)", where, value));
      out = parse(entries[i]);
      continue;
    }
    const auto f = lower(entries[i].substr(0, colon));
    if (std::find(kFuncs.begin(), kFuncs.end(), f) == kFuncs.end())
      throw Error(fmt::format("{}: '{}' is not one of NCCL's functions", where, entries[i].substr(0, colon)));
    if (f == c) out = parse(entries[i].substr(colon + 1));
  }
  return out;
}

}  // namespace p2v::sim
