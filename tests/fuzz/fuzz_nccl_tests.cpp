// Fuzz target: nccl-tests logs (p2v calibrate --nccl-tests LOG): the reader, with and without the
// caller's rank count, the reader of files of several runs, as calibrate calls them, the GPU names its
// Rank lines print against a preset's device (calibrate's note), and NCCL's list syntax of the
// environment values a log prints.
#include "fuzz_common.hpp"
#include "p2v/sim/levels.hpp"
#include "p2v/sim/nccl_tests.hpp"
#include "p2v/sim/preset_devices.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  p2v::fuzz::run("nccl-tests log", data, size, [](const std::string& text) {
    const auto log = p2v::sim::parse_nccl_tests(text, "fuzz-nccl-tests.txt");
    (void)p2v::sim::gpu_mismatch_note(log.origin, log.devices,
                                      p2v::sim::preset_device(p2v::sim::find_preset("dgx-h100")).device);
    p2v::sim::NcclTestsOptions opt;
    opt.ranks = 16;
    (void)p2v::sim::parse_nccl_tests(text, "fuzz-nccl-tests.txt", opt);
  });
  p2v::fuzz::run("nccl-tests runs", data, size, [](const std::string& text) {
    (void)p2v::sim::parse_nccl_tests_runs(text, "fuzz-nccl-tests.txt");
    p2v::sim::NcclTestsOptions opt;
    opt.collective = p2v::engine::Collective::AllGather;
    (void)p2v::sim::parse_nccl_tests_runs(text, "fuzz-nccl-tests.txt", opt);
  });
  // NCCL's list syntax (NCCL_PROTO, NCCL_ALGO), as calibrate reads the values a log prints: the whole
  // input as one value, before and after v2.24's per-function form.
  // Each version and collective on its own, so an input NCCL rejects at one still reaches the others.
  int r = 0;
  // The whole input as one GPU name (any bytes a Rank line could print).
  r |= p2v::fuzz::run("GPU name", data, size, [](const std::string& text) { (void)p2v::sim::gpu_model(text); });
  for (const int v : {21805, 22402, 23007})
    for (const auto c : {p2v::engine::Collective::AllReduce, p2v::engine::Collective::AllGather})
      r |= p2v::fuzz::run("NCCL environment list", data, size, [&](const std::string& text) {
        const std::vector<std::string> names = {"ring", "tree", "collnetdirect", "nvls", "nvlstree", "pat"};
        std::vector<std::string> notes;
        (void)p2v::sim::nccl_env_list(text, c, v, names, "fuzz:1", notes);
      });
  return r;
}
