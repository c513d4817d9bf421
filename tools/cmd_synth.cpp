// p2v synth: every valid reduction program up to a size bound, per placement (SPEC §3-§6).
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "command.hpp"
#include "common.hpp"
#include "solver_flags.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/synth.hpp"
#include <map>
#include <memory>
#include <optional>
#ifdef HAVE_P2V_ENCODINGS
#include "p2v/encodings/certificate.hpp"
#endif

namespace p2v::tools {
namespace {

struct SynthArgs {
  ProblemArgs problem;
  SearchArgs search;
  bool json = false, lowered = false, concrete = false;
  int show = -1;
  std::string certify, solver = "both";
  bool proofs = false;
  double timeout_s = 300;
  SolverFlags solver_flags;
};

// The text of a result's program list, shared by every placement of the same shape: notation,
// size, and steps as indices into the result's "instructions".
struct ProgramTexts {
  std::vector<std::string> notation;
  std::string json;
};

// One matrix's synthesis: on the shape (hierarchy (d), any size) or on the concrete devices.
struct MatrixResult {
  const engine::SynthResult* r = nullptr;
  std::optional<engine::Shape> shape;           // set on the shape path
  std::vector<int> hierarchy;                   // real cardinalities
  std::shared_ptr<engine::SynthResult> owned;   // concrete path
  const ProgramTexts* texts = nullptr;
  std::shared_ptr<ProgramTexts> owned_texts;
  double ms = 0;
};

// One instruction of a result: collective, slice, form and its groups — a level pattern on the
// shape path (explicit lists only with --lowered), the lowered lists on the concrete path.
nlohmann::json instruction_json(const engine::SynthResult& r, const MatrixResult& m, int instr, bool lowered) {
  const auto& in = r.instructions[instr];
  nlohmann::json sj{{"name", engine::instruction_name(r.hierarchy, in)},
                    {"collective", engine::to_string(in.collective)},
                    {"slice", r.hierarchy.names[in.grouping.slice]},
                    {"form", engine::form_name(r.hierarchy, in.grouping)}};
  if (m.shape) {
    const auto g = engine::group_pattern(*m.shape, in.grouping.slice, in.grouping.form, in.grouping.e);
    nlohmann::json vary = nlohmann::json::array();
    for (const auto& d : g.vary)
      vary.push_back({{"level", m.shape->system_names[d.level]}, {"axis", d.axis}, {"factor", d.factor}});
    sj["vary"] = std::move(vary);
    sj["master"] = g.master;
    sj["group_size"] = g.group_size;
    sj["num_groups"] = g.num_groups;
    sj["pattern"] = engine::describe(g, *m.shape);
    if (lowered) sj["groups"] = engine::lower_pattern(g, *m.shape);
  } else {
    sj["groups"] = engine::lower_groups(r.hierarchy, in.grouping.groups);
  }
  return sj;
}

ProgramTexts program_texts(const engine::SynthResult& r, bool json) {
  // Instruction names once; a program's notation is their concatenation (no quotes or
  // backslashes in it, so its JSON string is the notation in quotes).
  std::vector<std::string> names;
  for (const auto& in : r.instructions) names.push_back(engine::instruction_name(r.hierarchy, in));
  ProgramTexts t;
  t.notation.reserve(r.programs.size());
  if (json) t.json = "[";
  std::string steps;
  for (std::size_t i = 0; i < r.programs.size(); ++i) {
    const auto& prog = r.programs[i];
    std::string n;
    steps.clear();
    for (std::size_t k = 0; k < prog.size(); ++k) {
      if (k) {
        n += " ; ";
        steps += ", ";
      }
      n += names[static_cast<std::size_t>(prog[k])];
      steps += std::to_string(prog[k]);
    }
    if (json) {
      t.json += i ? ",\n    {\"notation\": \"" : "\n    {\"notation\": \"";
      t.json += n;
      t.json += "\", \"size\": " + std::to_string(prog.size()) + ", \"steps\": [" + steps + "]}";
    }
    t.notation.push_back(std::move(n));
  }
  if (json) t.json += "]";
  return t;
}

Registrar reg(
    "synth", "Synthesize every valid reduction program up to a size bound, for each placement", 30,
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<SynthArgs>();
      add_problem_options(sub, a->problem);
      add_search_options(sub, a->search, /*with_hierarchy=*/true);
      sub.add_flag("--json", a->json, "machine-readable output");
      sub.add_flag("--lowered", a->lowered,
                   fmt::format("also list every step's explicit device groups (JSON \"groups\"; systems of at most {} "
                               "devices); by default steps are level patterns",
                               engine::kMaxLoweredDevices));
      sub.add_flag("--concrete", a->concrete,
                   fmt::format("synthesize on the system's devices instead of the shape (hierarchy (d); at most {} "
                               "devices per reduction group): the reference the shape is tested against",
                               engine::kMaxStateDevices));
      sub.add_option("--show", a->show, "print at most this many programs per matrix in the table (default all)");
      sub.add_option("--certify", a->certify,
                     "write one JSON certificate per program into DIR, after the solvers (--solver) reproduce "
                     "the enumerator's set and prove minimality and completeness");
      sub.add_option("--solver", a->solver, "with --certify: z3, cvc5 or both")->capture_default_str();
      sub.add_flag("--proofs", a->proofs, "with --certify: store cvc5's proofs of the unsat answers beside them");
      sub.add_option("--timeout", a->timeout_s, "with --certify: per solver check, seconds")->capture_default_str();
      add_solver_flags(sub, a->solver_flags, "with --certify: ");
      return [a] {
        Problem p = load_problem(a->problem);
        engine::SynthOptions opt = a->search.options();
        const auto kind = a->search.kind();
        const std::vector<std::string> names = p.system.level_names();
        const bool shape_path = engine::is_reduction_kind(kind) && !a->concrete;
        if (a->proofs && a->certify.empty()) throw Error("--proofs needs --certify DIR");
        if (a->solver_flags.given() && a->certify.empty()) throw Error("--z3-logic and --cvc5-option need --certify DIR");
        if (a->lowered && p.system.num_devices() > engine::kMaxLoweredDevices)
          throw Error(fmt::format("--lowered lists explicit device groups for systems of at most {} devices; this one "
                                  "has {}: drop --lowered (steps are printed as level patterns) or use a smaller system",
                                  engine::kMaxLoweredDevices, p.system.num_devices()));
#ifndef HAVE_P2V_ENCODINGS
        if (!a->certify.empty()) throw Error("--certify needs the SMT encodings (p2v was built without Z3/cvc5)");
#endif
        std::size_t certificates = 0;
        const bool progress = !a->json && p.matrices.size() > 1 && isatty(2);
        static char outbuf[1 << 16];
        std::setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
        if (a->json) {
          // Streamed: one result at a time (a system's placements can have millions of programs).
          const nlohmann::json head{{"format", "p2v-synth/2"},
                                    {"system", nlohmann::json::parse(engine::system_to_json(p.system))},
                                    {"axes", p.axes},
                                    {"reduce", p.reduce},
                                    {"hierarchy_kind", engine::to_string(kind)},
                                    {"max_size", opt.max_size},
                                    {"master_collectives", a->search.master}};
          const std::string h = head.dump(1);
          fmt::print("{},\n \"results\": [", h.substr(0, h.size() - 2));
        }
        std::size_t total = 0;
        // Placements of the same shape have the same programs: synthesize each shape once.
        std::map<std::string, std::pair<engine::SynthResult, ProgramTexts>> by_shape;
        const auto sys_cards = p.system.cardinalities();
#ifdef HAVE_P2V_ENCODINGS
        std::map<std::string, std::vector<encodings::EnumerationResult>> shape_runs;
#endif
        for (std::size_t mi = 0; mi < p.matrices.size(); ++mi) {
          const auto& x = p.matrices[mi];
          if (progress) fmt::print(stderr, "[{}/{}] {}\r", mi + 1, p.matrices.size(), engine::format_matrix(x));
          MatrixResult m;
          const auto t0 = std::chrono::steady_clock::now();
          if (shape_path) {
            m.shape = engine::make_shape(sys_cards, names, x, p.reduce, kind);
            for (auto c : m.shape->cards()) m.hierarchy.push_back(static_cast<int>(c));
            auto [it, fresh] = by_shape.try_emplace(m.shape->signature());
            if (fresh) {
              it->second.first = engine::synthesize_shape(*m.shape, opt);
              it->second.second = program_texts(it->second.first, a->json);
            }
            m.r = &it->second.first;
            m.texts = &it->second.second;
          } else {
            engine::check_concrete_size(kind, x, p.reduce);
            m.owned = std::make_shared<engine::SynthResult>(engine::synthesize(p.placement(x), names, kind, opt));
            m.r = m.owned.get();
            m.hierarchy = m.r->hierarchy.cards;
            m.owned_texts = std::make_shared<ProgramTexts>(program_texts(*m.r, a->json));
            m.texts = m.owned_texts.get();
          }
          m.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          const engine::SynthResult& r = *m.r;
          total += r.programs.size();
          std::vector<std::string> cert_files;
#ifdef HAVE_P2V_ENCODINGS
          if (!a->certify.empty()) {
            encodings::CertifyOptions co;
            co.dir = a->certify;
            co.solvers = encodings::smt::parse_solver_list(a->solver);
            co.search.proofs = a->proofs;
            co.search.timeout_ms = static_cast<unsigned>(a->timeout_s * 1000);
            co.search.bury_solver = true;  // a command-line run: the process exits soon after
            apply_solver_flags(a->solver_flags, co.search);
            if (m.shape) {
              // The solvers run once per shape, on its smallest instance.
              const auto sig = m.shape->signature();
              const auto it = shape_runs.find(sig);
              auto res = encodings::certify_shape_programs(p.system, *m.shape, r, opt, co,
                                                           it == shape_runs.end() ? nullptr : &it->second);
              if (it == shape_runs.end()) shape_runs.emplace(sig, res.runs);
              cert_files = std::move(res.files);
            } else {
              cert_files = encodings::certify_programs(p.system, p.placement(x), r, opt, co).files;
            }
            certificates += cert_files.size();
          }
#endif
          if (a->json) {
            nlohmann::json res{{"matrix", x}, {"hierarchy", m.hierarchy}, {"hierarchy_names", r.hierarchy.names}};
            if (m.shape) res["shape"] = m.shape->signature();
            res["search_nodes"] = r.nodes;
            res["search_applied"] = r.applied;
            if (!a->certify.empty()) res["certificates"] = cert_files;
            nlohmann::json ins = nlohmann::json::array();
            for (std::size_t i = 0; i < r.instructions.size(); ++i)
              ins.push_back(instruction_json(r, m, static_cast<int>(i), a->lowered));
            res["instructions"] = std::move(ins);
            const std::string rt = res.dump();
            fmt::print("{}\n  {},\n   \"programs\": {}}}", mi ? "," : "", rt.substr(0, rt.size() - 1), m.texts->json);
            continue;
          }
          fmt::print("matrix {}  hierarchy ({}) [{}] = [{}]: {} programs ({:.2f} ms{})\n",
                     engine::format_matrix_brackets(x), engine::to_string(kind), fmt::join(r.hierarchy.names, " "),
                     fmt::join(m.hierarchy, " "), r.programs.size(), m.ms, m.shape ? ", on the shape" : "");
          std::size_t shown = 0;
          for (const auto& prog : r.programs) {
            if (a->show >= 0 && shown >= static_cast<std::size_t>(a->show)) {
              fmt::print("  ... {} more (use --show or --json)\n", r.programs.size() - shown);
              break;
            }
            fmt::print("  {:>4}  [{}] {}\n", shown, prog.size(), m.texts->notation[shown]);
            ++shown;
            if (a->lowered)
              for (const auto& st : m.shape ? engine::lower_shape_program(*m.shape, r, prog) : engine::lower(r, prog))
                fmt::print("          {} {}\n", engine::to_string(st.collective), fmt::join(st.groups, " "));
          }
        }
        if (progress) fmt::print(stderr, "\n");
        if (a->json) fmt::print("]\n}}\n");
        else fmt::print("total: {} programs over {} matrices\n", total, p.matrices.size());
        if (!a->certify.empty() && !a->json)
          fmt::print("{} certificates written to {} (check them with: p2v check {}/*.json)\n", certificates, a->certify,
                     a->certify);
        return 0;
      };
    });

}  // namespace
}  // namespace p2v::tools
