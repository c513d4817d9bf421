// p2v synth: every valid reduction program up to a size bound, per placement (SPEC §3-§6).
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "command.hpp"
#include "common.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/synth.hpp"
#ifdef HAVE_P2V_ENCODINGS
#include "p2v/encodings/certificate.hpp"
#endif

namespace p2v::tools {
namespace {

struct SynthArgs {
  ProblemArgs problem;
  SearchArgs search;
  bool json = false;
  int show = -1;
  std::string certify, solver = "both";
  bool proofs = false;
  double timeout_s = 300;
};

Registrar reg(
    "synth", "Synthesize every valid reduction program up to a size bound, for each placement", 30,
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<SynthArgs>();
      add_problem_options(sub, a->problem);
      add_search_options(sub, a->search, /*with_hierarchy=*/true);
      sub.add_flag("--json", a->json, "machine-readable output");
      sub.add_option("--show", a->show, "print at most this many programs per matrix in the table (default all)");
      sub.add_option("--certify", a->certify,
                     "write one JSON certificate per program into DIR, after the solvers (--solver) reproduce "
                     "the enumerator's set and prove minimality and completeness");
      sub.add_option("--solver", a->solver, "with --certify: z3, cvc5 or both")->capture_default_str();
      sub.add_flag("--proofs", a->proofs, "with --certify: store cvc5's proofs of the unsat answers beside them");
      sub.add_option("--timeout", a->timeout_s, "with --certify: per solver check, seconds")->capture_default_str();
      return [a] {
        Problem p = load_problem(a->problem);
        engine::SynthOptions opt = a->search.options();
        const auto kind = a->search.kind();
        const std::vector<std::string> names = p.system.level_names();
        if (a->proofs && a->certify.empty()) throw Error("--proofs needs --certify DIR");
#ifndef HAVE_P2V_ENCODINGS
        if (!a->certify.empty()) throw Error("--certify needs the SMT encodings (p2v was built without Z3/cvc5)");
#endif
        std::size_t certificates = 0;
        const bool progress = !a->json && p.matrices.size() > 1 && isatty(2);
        nlohmann::json out;
        out["system"] = nlohmann::json::parse(engine::system_to_json(p.system));
        out["axes"] = p.axes;
        out["reduce"] = p.reduce;
        out["hierarchy_kind"] = engine::to_string(kind);
        out["max_size"] = opt.max_size;
        out["master_collectives"] = a->search.master;
        out["results"] = nlohmann::json::array();
        std::size_t total = 0;
        for (std::size_t mi = 0; mi < p.matrices.size(); ++mi) {
          const auto& x = p.matrices[mi];
          if (progress) fmt::print(stderr, "[{}/{}] {}\r", mi + 1, p.matrices.size(), engine::format_matrix(x));
          const auto t0 = std::chrono::steady_clock::now();
          auto r = engine::synthesize(p.placement(x), names, kind, opt);
          const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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
            cert_files = encodings::certify_programs(p.system, p.placement(x), r, opt, co).files;
            certificates += cert_files.size();
          }
#endif
          if (a->json) {
            nlohmann::json res;
            res["matrix"] = x;
            res["hierarchy"] = r.hierarchy.cards;
            res["hierarchy_names"] = r.hierarchy.names;
            res["programs"] = nlohmann::json::array();
            for (const auto& prog : r.programs) {
              nlohmann::json pj;
              pj["notation"] = engine::program_name(r, prog);
              pj["size"] = prog.size();
              pj["steps"] = nlohmann::json::array();
              for (int i : prog) {
                const auto& in = r.instructions[i];
                pj["steps"].push_back({{"collective", engine::to_string(in.collective)},
                                       {"slice", r.hierarchy.names[in.grouping.slice]},
                                       {"form", engine::form_name(r.hierarchy, in.grouping)},
                                       {"groups", engine::lower_groups(r.hierarchy, in.grouping.groups)}});
              }
              res["programs"].push_back(std::move(pj));
            }
            if (!a->certify.empty()) res["certificates"] = cert_files;
            res["search_nodes"] = r.nodes;
            res["search_applied"] = r.applied;
            out["results"].push_back(std::move(res));
            continue;
          }
          fmt::print("matrix {}  hierarchy ({}) [{}] = [{}]: {} programs ({:.2f} ms)\n",
                     engine::format_matrix_brackets(x), engine::to_string(kind), fmt::join(r.hierarchy.names, " "),
                     fmt::join(r.hierarchy.cards, " "), r.programs.size(), ms);
          std::size_t shown = 0;
          for (const auto& prog : r.programs) {
            if (a->show >= 0 && shown >= static_cast<std::size_t>(a->show)) {
              fmt::print("  ... {} more (use --show or --json)\n", r.programs.size() - shown);
              break;
            }
            fmt::print("  {:>4}  [{}] {}\n", shown++, prog.size(), engine::program_name(r, prog));
          }
        }
        if (progress) fmt::print(stderr, "\n");
        if (a->json) fmt::print("{}\n", out.dump(2));
        else fmt::print("total: {} programs over {} matrices\n", total, p.matrices.size());
        if (!a->certify.empty() && !a->json)
          fmt::print("{} certificates written to {} (check them with: p2v check {}/*.json)\n", certificates, a->certify,
                     a->certify);
        return 0;
      };
    });

}  // namespace
}  // namespace p2v::tools
