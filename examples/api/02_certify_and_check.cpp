// 02: certify the programs of a 131,072-GPU placement with Z3 and cvc5, then check the
// certificates with the independent checker.
//
// The solvers run once, on the shape's smallest instance: they must find exactly the enumerator's
// programs (no more, none missing) and prove that nothing shorter exists. Each certificate names
// the real placement, the program and every step's level pattern; the checker (the trusted core,
// which shares no code with the synthesizer) re-derives all of it and replays the program.
//
//   build/examples/api/02_certify_and_check [DIR]
#include <fmt/core.h>

#include <filesystem>

#include "p2v/checker/checker.hpp"
#include "p2v/encodings/certificate.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/shape.hpp"
#include "p2v/engine/synth.hpp"
#include "p2v/engine/system.hpp"

using namespace p2v;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "p2v_api_02").string();
  const engine::System sys = engine::parse_system_arg("node=16384,gpu=8");
  const std::vector<int> axes{static_cast<int>(sys.num_devices())}, reduce{0};
  const auto x = engine::enumerate_matrices(sys.cardinalities(), axes).front();
  const auto shape =
      engine::make_shape(sys.cardinalities(), sys.level_names(), x, reduce, engine::HierarchyKind::ReductionAxes);
  engine::SynthOptions opt;
  opt.max_size = 3;
  const auto r = engine::synthesize_shape(shape, opt);

  encodings::CertifyOptions co;
  co.dir = dir;  // both solvers by default
  const auto certified = encodings::certify_shape_programs(sys, shape, r, opt, co);
  fmt::print("{} programs, {} certificates in {}\n", r.programs.size(), certified.files.size(), dir);

  int rejected = 0;
  for (const auto& f : certified.files) {
    const auto v = checker::check_certificate_file(f);
    if (!v.ok) {
      fmt::print(stderr, "REJECTED {}: {}\n", f, v.reason);
      ++rejected;
    }
  }
  fmt::print("checker: {} accepted, {} rejected\n", certified.files.size() - rejected, rejected);
  return rejected == 0 && !certified.files.empty() ? 0 : 1;
}
