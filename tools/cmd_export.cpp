// p2v export --format torch: a reduction program as a Python module for torch.distributed, with a
// self-check against a plain all_reduce (docs/step.md); --format msccl: an MSCCL algorithm (XML) for
// one reduction group's communicator (docs/export.md).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>
#include <optional>

#include "command.hpp"
#include "common.hpp"
#include "export_msccl.hpp"
#include "export_torch_template.hpp"
#include "infer_matrix.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/io.hpp"
#include "p2v/engine/notation.hpp"
#include "p2v/engine/replay.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/synth_format.hpp"

namespace p2v::tools {
namespace {

struct ExportArgs {
  ProblemArgs problem;
  SearchArgs search;
  std::string format = "torch", program, program_file, output;
  bool all = false, json = false;
};

struct Named {
  std::string name;
  engine::LoweredProgram steps;
};

// Rows each rank holds before the first step and after every step, as [begin, end) intervals.
nlohmann::json rows_per_state(const engine::LoweredProgram& prog, int n, const engine::Groups& reduction,
                              const std::string& name) {
  const engine::Trace t = engine::replay(n, prog);
  if (t.failed_step >= 0)
    throw Error(fmt::format("program '{}': step {} ({}) is not valid here: {}", name, t.failed_step + 1,
                            engine::to_string(prog[static_cast<std::size_t>(t.failed_step)].collective), t.reason));
  const auto& states = t.states;
  if (!(states.back() == engine::StateSet::goal(n, reduction)))
    throw Error(
        fmt::format("program '{}' does not reach the AllReduce over the reduction groups of this placement", name));
  nlohmann::json out = nlohmann::json::array();
  for (const auto& st : states) {
    nlohmann::json per = nlohmann::json::array();
    for (int d = 0; d < n; ++d) {
      nlohmann::json iv = nlohmann::json::array();
      for (int r : st.rows(d)) {
        if (!iv.empty() && iv.back()[1].get<int>() == r)
          iv.back()[1] = r + 1;
        else
          iv.push_back({r, r + 1});
      }
      per.push_back(std::move(iv));
    }
    out.push_back(std::move(per));
  }
  return out;
}

// --program-file's programs for matrix x: the one named --program, or all with --all-programs.
std::vector<Named> programs_from_file(const engine::SynthFile& f, const std::string& path, const std::string& want,
                                      bool all, const engine::ParallelismMatrix& x,
                                      const engine::SynthesisHierarchy& h) {
  std::vector<Named> out;
  for (const auto& r : f.results) {
    if (r.matrix != x) continue;
    for (const auto& p : r.programs) {
      if (!all && !want.empty() && p.notation != want) continue;
      // Explicit groups are in the file only with --lowered; otherwise the notation is resolved on
      // the placement's hierarchy.
      auto steps = engine::lowered_program(r, p);
      out.push_back({p.notation, steps ? std::move(*steps) : engine::resolve_program(h, p.notation)});
    }
  }
  if (out.empty())
    throw Error(fmt::format("--program-file '{}': no program{} for matrix {}", path,
                            want.empty() ? std::string() : " named '" + want + "'", engine::format_matrix_brackets(x)));
  if (!all && out.size() > 1)
    throw Error(
        fmt::format("--program-file '{}' has {} programs for matrix {}: pick one with --program \"...\" or "
                    "export all with --all-programs",
                    path, out.size(), engine::format_matrix_brackets(x)));
  return out;
}

void check_args(const ExportArgs& a) {
  if (a.format != "torch" && a.format != "msccl")
    throw Error(fmt::format("--format '{}': expected torch or msccl", a.format));
  if (a.format == "msccl" && a.all)
    throw Error("--format msccl writes one algorithm per file: pick the program with --program \"...\"");
  if (a.program.empty() && a.program_file.empty() && !a.all)
    throw Error("give --program \"...\", --program-file FILE (from synth --json) or --all-programs");
  if (!a.program.empty() && a.all) throw Error("--program and --all-programs exclude each other");
}

// The placement to export for: the one --matrix gives, else the one the program (or the file's
// programs) fits (tools::infer_matrix; the candidates are listed when several fit).
engine::ParallelismMatrix export_matrix(const ExportArgs& a, const Problem& p, const engine::SynthFile* file) {
  if (!a.program.empty())
    return infer_matrix(
        p, {"--program '" + a.program + "'", "is not a program of",
            [&](const engine::ParallelismMatrix& x) { return program_fits(p, x, a.program, a.search.kind()); }});
  if (file)
    return infer_matrix(
        p, {"--program-file '" + a.program_file + "'", "has no programs for", [&](const engine::ParallelismMatrix& x) {
              for (const auto& r : file->results)
                if (r.matrix == x && !r.programs.empty()) return true;
              return false;
            }});
  return infer_matrix(p,
                      {"--all-programs", "has no programs for", [](const engine::ParallelismMatrix&) { return true; }});
}

// The programs to write: from --program-file, the one --program names, or every synthesized one.
std::vector<Named> export_programs(const ExportArgs& a, const Problem& p, const engine::ParallelismMatrix& x,
                                   const engine::SynthFile* file) {
  const auto pl = p.placement(x);
  const auto h = engine::make_hierarchy(pl, p.system.level_names(), a.search.kind());
  if (file) return programs_from_file(*file, a.program_file, a.program, a.all, x, h);
  if (!a.all) return {{a.program, engine::resolve_program(h, a.program)}};
  std::vector<Named> progs;
  const auto r = engine::synthesize(pl, p.system.level_names(), a.search.kind(), a.search.options());
  for (const auto& pr : r.programs) progs.push_back({engine::program_name(r, pr), engine::lower(r, pr)});
  if (progs.empty())
    throw Error(fmt::format("matrix {} has no programs up to --max-size {} (hierarchy {}); see p2v synth",
                            engine::format_matrix_brackets(x), a.search.max_size, a.search.hierarchy));
  return progs;
}

int write_msccl(const ExportArgs& a, const Problem& p, const engine::Groups& reduction,
                const std::vector<Named>& progs) {
  if (progs.size() != 1)
    throw Error(fmt::format("--format msccl writes one algorithm per file; {} programs were selected", progs.size()));
  const int n = static_cast<int>(p.system.num_devices());
  // The state semantics first (a program that does not reach the goal is refused as for torch).
  rows_per_state(progs.front().steps, n, reduction, progs.front().name);
  bool refined = true;
  const std::string xml = msccl_xml(n, reduction, progs.front().steps, progs.front().name, &refined);
  write_file(a.output, xml);
  fmt::print(
      "wrote {}: MSCCL algorithm '{}' for one reduction group's communicator ({} ranks; {} group(s) of "
      "{} on {}), in-place allreduce, protocol Simple\n",
      a.output, progs.front().name, reduction.front().size(), reduction.size(), reduction.front().size(),
      p.system.name);
  if (!refined)
    fmt::print(
        "note: AllReduce steps keep the program's coarse chunks (one block per member would exceed MSCCL's 256 "
        "steps per thread block): correct, but not the ring's bandwidth-optimal cut\n");
  fmt::print("load: MSCCL_XML_FILES={} (MSCCL executor); validate: /usr/bin/python3 scripts/msccl-check.py {}\n",
             a.output, a.output);
  return 0;
}

int write_torch(const ExportArgs& a, const Problem& p, const engine::ParallelismMatrix& x,
                const engine::Groups& reduction, const std::vector<Named>& progs) {
  const int n = static_cast<int>(p.system.num_devices());
  nlohmann::json pj = nlohmann::json::array();
  for (const auto& pr : progs) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : pr.steps) steps.push_back({engine::to_string(s.collective), s.groups});
    pj.push_back({{"name", pr.name}, {"steps", steps}, {"rows", rows_per_state(pr.steps, n, reduction, pr.name)}});
  }
  std::string text = kTorchTemplate;
  auto fill = [&](const std::string& key, const std::string& val) {
    const auto pos = text.find(key);
    if (pos == std::string::npos) throw Error("export template: missing " + key);
    text.replace(pos, key.size(), val);
  };
  // JSON literals are valid Python here (lists, strings, ints; no true/false/null).
  fill("@WORLD@", std::to_string(n));
  fill("@SYSTEM@", nlohmann::json(p.system.name).dump());
  fill("@MATRIX@", nlohmann::json(engine::format_matrix_brackets(x)).dump());
  fill("@REDUCTION@", nlohmann::json(reduction).dump());
  fill("@PROGRAMS@", pj.dump());
  write_file(a.output, text);
  if (a.json) {
    nlohmann::json names = nlohmann::json::array();
    for (const auto& pr : progs) names.push_back(pr.name);
    fmt::print("{}\n", nlohmann::json{{"output", a.output},
                                      {"format", a.format},
                                      {"system", p.system.name},
                                      {"ranks", n},
                                      {"matrix", x},
                                      {"programs", names},
                                      {"check", fmt::format("/usr/bin/python3 {} --check --nproc {}", a.output, n)}}
                           .dump(2));
    return 0;
  }
  fmt::print("wrote {}: {} program(s) for {} ranks, matrix {}\n", a.output, progs.size(), n,
             engine::format_matrix_brackets(x));
  fmt::print(
      "note: on gloo, ReduceScatter runs as all_reduce + keep own block (gloo has no reduce_scatter in "
      "torch 1.13)\n");
  fmt::print(
      "check: /usr/bin/python3 {} --check --nproc {}   (or --nproc N, N dividing {}: N processes simulate "
      "{}/N ranks each)\n",
      a.output, n, n, n);
  return 0;
}

Registrar reg("export", [](CLI::App& sub) -> std::function<int()> {
  auto a = std::make_shared<ExportArgs>();
  sub.add_option("--format", a->format, "output format: torch (a Python module) or msccl (an MSCCL algorithm XML)")
      ->capture_default_str();
  add_problem_options(sub, a->problem);
  add_search_options(sub, a->search, /*with_hierarchy=*/true);
  sub.add_option("--program", a->program,
                 "the program, in p2v's notation (as synth/simulate print it); without --matrix, the placement it "
                 "fits");
  sub.add_option("--program-file", a->program_file, "take the program(s) from `p2v synth --json` output");
  sub.add_flag("--all-programs", a->all, "export every program of the placement (reduce_(t, program=i))");
  sub.add_option("-o,--output", a->output, "the file to write (.py for torch, .xml for msccl)")->required();
  sub.add_flag("--json", a->json, "machine-readable summary of what was written (output, ranks, matrix, programs)");
  return [a] {
    check_args(*a);
    const Problem p = load_problem(a->problem);
    std::optional<engine::SynthFile> file;
    if (!a->program_file.empty())
      file = engine::parse_synth_file(engine::read_text_file(a->program_file, "--program-file"),
                                      "--program-file '" + a->program_file + "'");
    const engine::SynthFile* f = file ? &*file : nullptr;
    const auto x = export_matrix(*a, p, f);
    const auto progs = export_programs(*a, p, x, f);
    const auto reduction = p.placement(x).reduction_groups();
    return a->format == "msccl" ? write_msccl(*a, p, reduction, progs) : write_torch(*a, p, x, reduction, progs);
  };
});

}  // namespace
}  // namespace p2v::tools
