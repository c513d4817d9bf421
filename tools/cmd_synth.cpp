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

namespace p2v::tools {
namespace {

struct SynthArgs {
  ProblemArgs problem;
  std::string hierarchy = "d";
  int max_size = 5;
  std::string master = "allreduce";
  bool no_collapse = false;
  bool json = false;
  int show = -1;
};

Registrar reg(
    "synth", "Synthesize every valid reduction program up to a size bound, for each placement", 30,
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<SynthArgs>();
      add_problem_options(sub, a->problem);
      sub.add_option("--hierarchy", a->hierarchy, "synthesis hierarchy: a, b, c, d or d-uncollapsed")
          ->capture_default_str();
      sub.add_option("--max-size", a->max_size, "largest program size (number of instructions), 1..10")
          ->capture_default_str();
      sub.add_option("--master-collectives", a->master,
                     "collectives a Master step may carry: allreduce (the paper's reading) or all")
          ->capture_default_str();
      sub.add_flag("--no-collapse", a->no_collapse, "use the uncollapsed reduction-axes hierarchy (d)");
      sub.add_flag("--json", a->json, "machine-readable output");
      sub.add_option("--show", a->show, "print at most this many programs per matrix in the table (default all)");
      return [a] {
        Problem p = load_problem(a->problem);
        engine::SynthOptions opt;
        opt.max_size = a->max_size;
        if (a->master == "allreduce") opt.master = engine::MasterCollectives::AllReduceOnly;
        else if (a->master == "all") opt.master = engine::MasterCollectives::All;
        else throw Error(fmt::format("--master-collectives '{}': expected allreduce or all", a->master));
        auto kind = engine::parse_hierarchy_kind(a->hierarchy);
        if (a->no_collapse) {
          if (kind != engine::HierarchyKind::ReductionAxes)
            throw Error("--no-collapse applies to hierarchy (d) only");
          kind = engine::HierarchyKind::ReductionUncollapsed;
        }
        std::vector<std::string> names;
        for (const auto& l : p.system.levels) names.push_back(l.name);
        const bool progress = !a->json && p.matrices.size() > 1 && isatty(2);
        nlohmann::json out;
        out["system"] = nlohmann::json::parse(engine::system_to_json(p.system));
        out["axes"] = p.axes;
        out["reduce"] = p.reduce;
        out["hierarchy_kind"] = engine::to_string(kind);
        out["max_size"] = opt.max_size;
        out["master_collectives"] = a->master;
        out["results"] = nlohmann::json::array();
        std::size_t total = 0;
        for (std::size_t mi = 0; mi < p.matrices.size(); ++mi) {
          const auto& x = p.matrices[mi];
          if (progress) fmt::print(stderr, "[{}/{}] {}\r", mi + 1, p.matrices.size(), engine::format_matrix(x));
          const auto t0 = std::chrono::steady_clock::now();
          auto r = engine::synthesize(p.placement(x), names, kind, opt);
          const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          total += r.programs.size();
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
        return 0;
      };
    });

}  // namespace
}  // namespace p2v::tools
