// p2v reshard: memory-bounded, cost-optimal redistribution programs (SPEC §10).
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>
#include <fstream>

#include "command.hpp"
#ifdef HAVE_P2V_CHECKER
#include "p2v/checker/checker.hpp"
#endif
#include "p2v/engine/error.hpp"
#include "p2v/engine/reshard.hpp"
#include "p2v/engine/sim_report.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::tools {
namespace {

namespace rs = engine::reshard;

struct ReshardArgs {
  std::string mesh, from, to, system, dtype = "f32", cost = "paper", memory = "auto", certify;
  bool run = false, json = false;
};

std::string groups_summary(const rs::PlannedStep& s) {
  switch (s.step.op) {
    case rs::Op::DynSlice: return "local";
    case rs::Op::AllPermute: return fmt::format("{} devices move", s.num_groups);
    default: return fmt::format("{} x {}", s.num_groups, s.group_size);
  }
}

void print_program(const char* title, const rs::Plan& p, const rs::Program& prog) {
  const bool topo = p.cost_kind == rs::CostKind::Topology;
  fmt::print("{}: cost {} elements/device, peak {} elements ({} bytes){}\n", title, prog.cost, prog.peak,
             prog.peak * p.dtype_bytes, topo ? fmt::format(", time {:.3f} us", prog.time_s * 1e6) : "");
  fmt::print("  {:>2}  {:<30} {:<28} {:<16} {:>10} {:>12}{}\n", "#", "step", "local type after", "groups", "cost",
             "bytes", topo ? "  time (level)" : "");
  int i = 0;
  for (const auto& s : prog.steps) {
    fmt::print("  {:>2}  {:<30} {:<28} {:<16} {:>10} {:>12}{}\n", i++, rs::step_to_string(s.step, p.mesh),
               rs::to_string(s.after, p.mesh), groups_summary(s), s.cost, s.bytes,
               topo ? fmt::format("  {:.3f} us ({})", s.time_s * 1e6, s.level.empty() ? "-" : s.level) : "");
  }
  if (prog.steps.empty()) fmt::print("      (no step: the layouts are equal)\n");
}

#ifdef HAVE_P2V_CHECKER
// Writes the certificate (the plan with every step's groups, slices and permutation) into `dir`
// and has the independent checker replay it; returns the file name. Throws p2v::Error when the
// checker rejects it.
std::string certify(const rs::Plan& p, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string text = rs::to_json(p, /*full=*/true);
  std::string name = rs::to_string(p.from, p.mesh) + "-" + rs::to_string(p.to, p.mesh);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  const std::string file = dir + "/reshard-" + name.substr(0, 120) + ".json";
  std::ofstream(file) << text << "\n";
  const auto v = checker::check_reshard_certificate(text);
  if (!v.ok) throw Error(fmt::format("the independent checker rejected {}: {}", file, v.reason));
  return file;
}
#endif

Registrar reg(
    "reshard", "Synthesize a memory-bounded, cost-optimal redistribution of an array between two layouts", 35,
    [](CLI::App& sub) -> std::function<int()> {
      auto a = std::make_shared<ReshardArgs>();
      sub.add_option("--mesh", a->mesh, "device mesh, e.g. x=4,y=4 (devices in mixed radix, first axis most significant)")
          ->required();
      sub.add_option("--from", a->from, "source type, e.g. \"[32{x,y}512,128]\" (axes minor first)")->required();
      sub.add_option("--to", a->to, "target type, e.g. \"[128{x}512,32{y}128]\"")->required();
      sub.add_option("--system", a->system, "system file or inline hierarchy with as many devices as the mesh");
      sub.add_option("--dtype", a->dtype, "element type: f64 f32 f16 bf16 i64 i32 u32 i16 i8 u8")->capture_default_str();
      sub.add_option("--cost", a->cost, "paper (SPEC §10, elements) or topology (per-level latency/bandwidth of --system)")
          ->capture_default_str();
      sub.add_option("--memory", a->memory, "memory limit per device: auto (the bound) or BYTES (e.g. 64MiB)")
          ->capture_default_str();
      sub.add_option("--certify", a->certify, "write a certificate into DIR after Z3 and cvc5 check every step");
      sub.add_flag("--run", a->run, "run the program on MPI (under mpirun) and check every element");
      sub.add_flag("--json", a->json, "machine-readable output");
      return [a] {
        rs::Request r;
        r.mesh = a->mesh;
        r.from = a->from;
        r.to = a->to;
        r.dtype = a->dtype;
        if (a->cost == "paper") r.cost = rs::CostKind::Paper;
        else if (a->cost == "topology") r.cost = rs::CostKind::Topology;
        else throw Error(fmt::format("--cost: expected paper or topology, got '{}'", a->cost));
        if (!a->system.empty()) r.system = engine::parse_system_arg(a->system);
        if (a->memory != "auto") {
          double b = 0;
          try {
            b = engine::sim::parse_bytes(a->memory);
          } catch (const Error&) {
            throw Error(fmt::format("--memory '{}': expected auto or a byte count such as 1048576, 64MiB or 1GB", a->memory));
          }
          r.memory_bytes = static_cast<std::int64_t>(std::floor(b));
        }
#ifndef HAVE_P2V_CHECKER
        if (!a->certify.empty()) throw Error("--certify needs p2v-smt with the independent checker (not built)");
#endif
        if (a->run) throw Error("--run: running reshard programs is not available in this build");
        const auto t0 = std::chrono::steady_clock::now();
        const rs::Plan p = rs::plan(r);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::string cert_note;
#ifdef HAVE_P2V_CHECKER
        if (!a->certify.empty()) cert_note = certify(p, a->certify);
#endif
        if (a->json) {
          auto j = nlohmann::json::parse(rs::to_json(p));
          if (!cert_note.empty()) j["certificate"] = cert_note;
          j["synthesis_ms"] = ms;
          fmt::print("{}\n", j.dump(2));
          return 0;
        }
        fmt::print("mesh {} ({} devices), {} -> {}, {}\n", a->mesh, p.mesh.num_devices(), rs::to_string(p.from, p.mesh),
                   rs::to_string(p.to, p.mesh), a->dtype);
        fmt::print("bound {} elements/device (max of the two local sizes), limit {}; {} states, {:.2f} ms\n", p.bound,
                   p.limit, p.states, ms);
        print_program("p2v", p, p.program);
        print_program("baseline (allgather then dynslice)", p, p.baseline);
        if (!cert_note.empty()) fmt::print("certificate {} accepted by the independent checker\n", cert_note);
        return 0;
      };
    });

}  // namespace
}  // namespace p2v::tools
