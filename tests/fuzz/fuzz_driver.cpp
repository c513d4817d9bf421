// The fallback driver: runs a fuzz target (LLVMFuzzerTestOneInput) as a plain mutation loop when
// libFuzzer is not available (e.g. GCC builds). It understands the libFuzzer options
// scripts/fuzz.sh uses:
//
//   fuzz_X [-runs=N] [-max_total_time=SECONDS] [-seed=S] [-max_len=L] [-timeout=SECONDS] [-dict=FILE]
//          [-artifact_prefix=P] CORPUS_DIR|FILE...
//
// Every seed is run once, then N mutants (-runs=-1: until -max_total_time) (1 to 4 of: bit flip, byte set to a JSON/CSV
// character, range deleted, range duplicated, dictionary token inserted or put in place of a number, splice with
// another seed). A crash or a timeout writes the input to <artifact_prefix>crash-fallback (or timeout-fallback) and
// exits non-zero, as libFuzzer does.
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::string g_input;   // the input being run (written out by the signal handlers)
std::string g_prefix;  // artifact prefix
std::string g_crash_path, g_timeout_path;

void dump_input(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  std::size_t off = 0;
  while (off < g_input.size()) {
    const ssize_t n = ::write(fd, g_input.data() + off, g_input.size() - off);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

extern "C" void on_crash(int sig) {
  dump_input(g_crash_path);
  const char msg[] = "p2v fuzz (fallback driver): crash; input written to the artifact file\n";
  (void)!::write(2, msg, sizeof msg - 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

extern "C" void on_timeout(int) {
  dump_input(g_timeout_path);
  const char msg[] = "p2v fuzz (fallback driver): timeout; input written to the artifact file\n";
  (void)!::write(2, msg, sizeof msg - 1);
  ::_exit(70);
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// libFuzzer dictionary lines: name="value" or "value", with \\, \" and \xHH escapes.
std::vector<std::string> read_dict(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto a = line.find('"'), b = line.rfind('"');
    if (a == std::string::npos || b <= a) continue;
    std::string v;
    for (std::size_t i = a + 1; i < b; ++i) {
      if (line[i] == '\\' && i + 1 < b) {
        if (line[i + 1] == 'x' && i + 3 < b) {
          v += static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16));
          i += 3;
        } else {
          v += line[++i];
        }
      } else {
        v += line[i];
      }
    }
    out.push_back(v);
  }
  return out;
}

struct Mutator {
  std::mt19937_64 rng;
  const std::vector<std::string>& seeds;
  const std::vector<std::string>& dict;
  std::size_t max_len;

  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); }

  void once(std::string& s) {
    static const char kChars[] = "{}[],:\"-+.0123456789eE \n\\xtfnul|#=;";
    switch (below(7)) {
      case 0:
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1u << below(8));
        break;
      case 1:
        if (!s.empty()) s[below(s.size())] = kChars[below(sizeof kChars - 1)];
        break;
      case 2:
        if (!s.empty()) {
          const std::size_t at = below(s.size());
          s.erase(at, 1 + below(std::min<std::size_t>(16, s.size() - at)));
        }
        break;
      case 3:
        if (!s.empty()) {
          const std::size_t at = below(s.size()), n = 1 + below(std::min<std::size_t>(64, s.size() - at));
          s.insert(below(s.size() + 1), s.substr(at, n));
        }
        break;
      case 4:
        if (!dict.empty()) s.insert(below(s.size() + 1), dict[below(dict.size())]);
        break;
      case 5: {  // a dictionary token in place of a number
        if (dict.empty() || s.empty()) break;
        std::size_t at = below(s.size());
        while (at < s.size() && !std::isdigit(static_cast<unsigned char>(s[at]))) ++at;
        std::size_t end = at;
        while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.' || s[end] == 'e'))
          ++end;
        if (at < s.size()) s.replace(at, end - at, dict[below(dict.size())]);
        break;
      }
      default: {  // splice: this input's head, another seed's tail
        if (seeds.empty()) break;
        const std::string& o = seeds[below(seeds.size())];
        s = s.substr(0, below(s.size() + 1)) + o.substr(below(o.size() + 1));
        break;
      }
    }
    if (s.size() > max_len) s.resize(max_len);
  }
};

}  // namespace

int main(int argc, char** argv) {
  long long runs = 10000;
  std::uint64_t seed = 1;
  std::size_t max_len = 0;
  unsigned timeout = 20;
  long long max_total_time = 0;
  std::string dict_path;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const char* k) -> const char* {
      const std::size_t n = std::strlen(k);
      return a.compare(0, n, k) == 0 ? a.c_str() + n : nullptr;
    };
    if (const char* v = val("-runs="))
      runs = std::atoll(v);
    else if (const char* v = val("-seed="))
      seed = std::strtoull(v, nullptr, 10);
    else if (const char* v = val("-max_len="))
      max_len = std::strtoull(v, nullptr, 10);
    else if (const char* v = val("-timeout="))
      timeout = static_cast<unsigned>(std::atoi(v));
    else if (const char* v = val("-dict="))
      dict_path = v;
    else if (const char* v = val("-artifact_prefix="))
      g_prefix = v;
    else if (!a.empty() && a[0] == '-')
      std::fprintf(stderr, "fallback driver: ignoring option %s\n", a.c_str());
    else
      inputs.push_back(a);
  }
  g_crash_path = g_prefix + "crash-fallback";
  g_timeout_path = g_prefix + "timeout-fallback";
  std::vector<std::string> seeds;
  for (const auto& in : inputs) {
    if (std::filesystem::is_directory(in)) {
      for (const auto& e : std::filesystem::directory_iterator(in))
        if (e.is_regular_file()) seeds.push_back(read_file(e.path()));
    } else {
      seeds.push_back(read_file(in));
    }
  }
  if (max_len == 0) {
    max_len = 4096;
    for (const auto& s : seeds) max_len = std::max(max_len, s.size());
  }
  const std::vector<std::string> dict = dict_path.empty() ? std::vector<std::string>{} : read_dict(dict_path);
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_crash);
  std::signal(SIGALRM, on_timeout);
  auto one = [&](const std::string& s) {
    g_input = s;
    ::alarm(timeout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(g_input.data()), g_input.size());
    ::alarm(0);
  };
  for (const auto& s : seeds) one(s);
  Mutator m{std::mt19937_64(seed), seeds, dict, max_len};
  const auto start = std::chrono::steady_clock::now();
  const auto out_of_time = [&] {
    return max_total_time > 0 && std::chrono::steady_clock::now() - start > std::chrono::seconds(max_total_time);
  };
  long long r = 0;
  for (; (runs < 0 || r < runs) && !out_of_time() && !(runs < 0 && max_total_time <= 0); ++r) {
    std::string s = seeds.empty() ? std::string() : seeds[m.below(seeds.size())];
    for (std::size_t k = 1 + m.below(4); k > 0; --k) m.once(s);
    one(s);
  }
  std::fprintf(stderr, "fallback driver: %zu seeds and %lld mutants run, no crash\n", seeds.size(), r);
  return 0;
}
