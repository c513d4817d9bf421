// p2v run --resume: the runs a CSV already holds.
#include "run_resume.hpp"

#include <fmt/core.h>

#include <fstream>
#include <set>
#include <vector>

#include "p2v/engine/error.hpp"
#include "p2v/engine/text_util.hpp"
#include "p2v/engine/units.hpp"

namespace p2v::tools {

std::string run_key(const std::string& system, std::int64_t ranks, const std::string& backend, const std::string& dtype,
                    int iters, const std::string& matrix, const std::string& program, std::int64_t bytes) {
  return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", system, ranks, backend, dtype, iters, matrix,
                     program, bytes);
}

namespace {

std::int64_t integer(const std::string& s, const std::string& where) {
  return engine::parse_integer(s, where, 0, std::int64_t{1} << 62);
}

// Lines of `path` with their numbers; no file: none.
std::vector<std::pair<int, std::string>> lines_of(const std::string& path) {
  std::vector<std::pair<int, std::string>> out;
  std::ifstream in(path, std::ios::binary);
  if (!in) return out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.emplace_back(n, line);
  }
  if (in.bad()) throw Error(fmt::format("--resume: cannot read '{}'", path));
  return out;
}

// --csv: "# total,groups,bytes,median,program,matrix,system,ranks,backend,dtype,iters,baseline".
std::map<std::string, DoneRun> from_steps_csv(const std::string& path) {
  std::map<std::string, DoneRun> out;
  for (const auto& [n, line] : lines_of(path)) {
    if (line.rfind("# total,", 0) != 0) continue;
    const std::string where = fmt::format("--resume: {}:{}", path, n);
    const auto f = engine::text::split_csv(line.substr(2), where);
    if (f.size() < 12) continue;  // written by a p2v run without --resume support: not resumable
    out[run_key(f[6], integer(f[7], where), f[8], f[9], static_cast<int>(integer(f[10], where)), f[5], f[4],
                integer(f[2], where))] = {engine::parse_double(f[3], where), engine::parse_double(f[11], where)};
  }
  return out;
}

// --csv-programs: by its header (program,seconds,matrix,...,baseline_seconds,bytes,system,ranks,backend,dtype,iters).
std::map<std::string, DoneRun> from_programs_csv(const std::string& path) {
  std::map<std::string, DoneRun> out;
  std::map<std::string, std::size_t> col;
  for (const auto& [n, line] : lines_of(path)) {
    if (line.empty() || line[0] == '#') continue;
    const std::string where = fmt::format("--resume: {}:{}", path, n);
    const auto f = engine::text::split_csv(line, where);
    if (col.empty()) {
      for (std::size_t i = 0; i < f.size(); ++i) col[f[i]] = i;
      for (const char* c : {"program", "seconds", "matrix", "baseline_seconds", "bytes", "system", "ranks", "backend",
                            "dtype", "iters"})
        if (!col.count(c)) throw Error(fmt::format("{}: the header has no column '{}'", where, c));
      continue;
    }
    const auto at = [&](const char* c) -> const std::string& {
      const std::size_t i = col.at(c);
      if (i >= f.size()) throw Error(fmt::format("{}: no field '{}'", where, c));
      return f[i];
    };
    out[run_key(at("system"), integer(at("ranks"), where), at("backend"), at("dtype"),
                static_cast<int>(integer(at("iters"), where)), at("matrix"), at("program"),
                integer(at("bytes"), where))] = {engine::parse_double(at("seconds"), where),
                                                 engine::parse_double(at("baseline_seconds"), where)};
  }
  return out;
}

}  // namespace

bool programs_csv_holds(const std::string& csv_programs, const std::string& key) {
  return from_programs_csv(csv_programs).count(key) > 0;
}

std::map<std::string, DoneRun> completed_runs(const std::string& csv, const std::string& csv_programs) {
  if (csv.empty()) return from_programs_csv(csv_programs);
  auto a = from_steps_csv(csv);
  if (csv_programs.empty()) return a;
  const auto b = from_programs_csv(csv_programs);
  for (auto it = a.begin(); it != a.end();) it = b.count(it->first) ? std::next(it) : a.erase(it);
  return a;
}

}  // namespace p2v::tools
