// Fuzz target: nccl-tests logs (p2v calibrate --nccl-tests LOG): the reader, with and without the
// caller's rank count, as calibrate calls it.
#include "fuzz_common.hpp"
#include "p2v/sim/nccl_tests.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return p2v::fuzz::run("nccl-tests log", data, size, [](const std::string& text) {
    (void)p2v::sim::parse_nccl_tests(text, "fuzz-nccl-tests.txt");
    p2v::sim::NcclTestsOptions opt;
    opt.ranks = 16;
    (void)p2v::sim::parse_nccl_tests(text, "fuzz-nccl-tests.txt", opt);
  });
}
