// Fuzz target: nccl-tests logs (p2v calibrate --nccl-tests LOG): the reader, with and without the
// caller's rank count, and the reader of files of several runs, as calibrate calls them.
#include "fuzz_common.hpp"
#include "p2v/sim/nccl_tests.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  p2v::fuzz::run("nccl-tests log", data, size, [](const std::string& text) {
    (void)p2v::sim::parse_nccl_tests(text, "fuzz-nccl-tests.txt");
    p2v::sim::NcclTestsOptions opt;
    opt.ranks = 16;
    (void)p2v::sim::parse_nccl_tests(text, "fuzz-nccl-tests.txt", opt);
  });
  return p2v::fuzz::run("nccl-tests runs", data, size, [](const std::string& text) {
    (void)p2v::sim::parse_nccl_tests_runs(text, "fuzz-nccl-tests.txt");
    p2v::sim::NcclTestsOptions opt;
    opt.collective = p2v::engine::Collective::AllGather;
    (void)p2v::sim::parse_nccl_tests_runs(text, "fuzz-nccl-tests.txt", opt);
  });
}
