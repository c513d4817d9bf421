# Compile flags of a fuzz build (-DP2V_FUZZ=ON, scripts/fuzz.sh): every library the fuzz targets
# link is built with AddressSanitizer and UndefinedBehaviorSanitizer (UB aborts instead of
# printing and going on) and, when the compiler has libFuzzer (clang), with its coverage
# instrumentation. Without libFuzzer the targets link the fallback driver (fuzz_driver.cpp).
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer")
check_cxx_source_compiles(
  "#include <cstdint>
   #include <cstddef>
   extern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }"
  P2V_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
set(P2V_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_compile_options(${P2V_SANITIZERS} -O1 -g)
add_link_options(-fsanitize=address,undefined)
if(P2V_HAVE_LIBFUZZER)
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "p2v fuzz: libFuzzer + ASan + UBSan")
else()
  message(STATUS "p2v fuzz: no libFuzzer in this compiler: fallback mutation driver + ASan + UBSan")
endif()
