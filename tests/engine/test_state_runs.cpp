// White-box test of the engine's private rule kernels: the search's rules on run-length-encoded
// states (state_runs.hpp) against the reference rules on plain bitsets (state_kernel.hpp), on
// random groups of random states with many runs, over one to three words per row mask.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "state_kernel.hpp"
#include "state_runs.hpp"

using namespace p2v::engine;

namespace {

using Raw = std::vector<std::uint64_t>;

struct Gen {
  std::mt19937_64 rng{12345};
  int k, w;
  std::size_t stride;
  Gen(int k_) : k(k_), w((k_ + 63) / 64), stride(static_cast<std::size_t>(w) * (k_ + 1)) {}
  int pick(int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }
  bool held(const Raw& s, int r) const { return s[r >> 6] >> (r & 63) & 1; }
  void hold(Raw& s, int r) const { s[r >> 6] |= std::uint64_t{1} << (r & 63); }
  std::uint64_t* cols(Raw& s, int r) const { return s.data() + w + static_cast<std::size_t>(r) * w; }
  // A random row mask: a few random ranges of rows.
  Raw mask() {
    Raw s(stride, 0);
    for (int n = 1 + pick(3); n > 0; --n) {
      const int a = pick(k), b = a + pick(k - a);
      for (int r = a; r <= b; ++r) hold(s, r);
    }
    return s;
  }
  // Column sets constant over random stretches of rows (so records have several runs), drawn
  // from `allowed` (a column set) when given.
  void fill_columns(Raw& s, const Raw* allowed_state = nullptr) {
    std::vector<std::uint64_t> c(w);
    int left = 0;
    for (int r = 0; r < k; ++r) {
      if (!held(s, r)) continue;
      if (left-- <= 0) {
        left = pick(20);
        for (auto& x : c) x = rng() & rng();
        if (k % 64) c[w - 1] &= (std::uint64_t{1} << (k % 64)) - 1;
      }
      std::uint64_t* o = cols(s, r);
      for (int i = 0; i < w; ++i) o[i] = allowed_state ? c[i] & allowed_state[0][w + r * w + i] : c[i];
    }
  }
};

Raw decode(const std::vector<std::uint64_t>& rec, const Gen& G) {
  Raw s(G.stride, 0);
  for (int i = 0; i < G.w; ++i) s[i] = rec[i];
  const std::uint64_t n = rec[G.w];
  for (std::uint64_t j = 0; j < n; ++j) {
    const std::uint64_t* run = rec.data() + G.w + 1 + j * (G.w + 1);
    for (int r = static_cast<int>(run[0] >> 32); r <= static_cast<int>(run[0] & 0xffffffffu); ++r)
      if (G.held(s, r))
        for (int i = 0; i < G.w; ++i) s[G.w + static_cast<std::size_t>(r) * G.w + i] = run[1 + i];
  }
  return s;
}

std::vector<std::uint64_t> encode(const Raw& s, const Gen& G) {
  runs::Builder b;
  b.begin(G.w, s.data());
  for (int r = 0; r < G.k; ++r)
    if (G.held(s, r)) b.rows(r, r, s.data() + G.w + static_cast<std::size_t>(r) * G.w);
  return b.words();
}

// Members for collective c: built so that the precondition holds about half the time.
std::vector<Raw> members(Collective c, int g, Gen& G) {
  std::vector<Raw> m;
  switch (c) {
    case Collective::AllReduce:
    case Collective::ReduceScatter:
    case Collective::Reduce: {
      // One row mask; columns split among the members (disjoint), unless we let them overlap.
      Raw base = G.mask();
      if (c == Collective::ReduceScatter && G.pick(2)) {  // make the row count divisible by g
        int n = 0;
        for (int r = 0; r < G.k; ++r) n += G.held(base, r);
        for (int r = G.k - 1; r >= 0 && n % g; --r)
          if (G.held(base, r)) base[r >> 6] &= ~(std::uint64_t{1} << (r & 63)), --n;
      }
      G.fill_columns(base);
      const bool overlap = G.pick(4) == 0;
      for (int a = 0; a < g; ++a) {
        Raw s(G.stride, 0);
        for (int i = 0; i < G.w; ++i) s[i] = base[i];
        m.push_back(s);
      }
      for (int r = 0; r < G.k; ++r) {
        if (!G.held(base, r)) continue;
        const int stretch = r / 7;  // members' ownership changes every few rows: several runs
        for (int col = 0; col < G.k; ++col) {
          if (!(G.cols(base, r)[col >> 6] >> (col & 63) & 1)) continue;
          const int a = (col + stretch) % g;
          G.cols(m[a], r)[col >> 6] |= std::uint64_t{1} << (col & 63);
          if (overlap && col % 11 == 0) G.cols(m[(a + 1) % g], r)[col >> 6] |= std::uint64_t{1} << (col & 63);
        }
      }
      break;
    }
    case Collective::AllGather: {
      // Disjoint rows, equally many (unless we spoil it), interleaved in stretches.
      const int per = 1 + G.pick(G.k / g);
      for (int a = 0; a < g; ++a) m.emplace_back(G.stride, 0);
      int r = 0;
      for (int n = 0; n < per; ++n)
        for (int a = 0; a < g; ++a) {
          r += G.pick(2);
          if (r < G.k) G.hold(m[a], r++);
        }
      if (G.pick(4) == 0) G.hold(m[0], G.k - 1);  // maybe a shared or an extra row
      for (auto& s : m) G.fill_columns(s);
      break;
    }
    case Collective::Broadcast: {
      Raw root = G.mask();
      G.fill_columns(root);
      m.push_back(root);
      for (int a = 1; a < g; ++a) {
        const int kind = G.pick(5);
        if (kind == 4) {
          // One column set over all its rows, inside the root's on the first: a run of the member
          // that spans several of the root's runs.
          Raw s = root;
          const int first = runs::next_held(root.data(), G.w, 0);
          std::vector<std::uint64_t> c(G.cols(root, first), G.cols(root, first) + G.w);
          for (auto& x : c) x &= G.rng();
          for (int r = 0; r < G.k; ++r)
            if (G.held(s, r)) std::copy(c.begin(), c.end(), G.cols(s, r));
          m.push_back(s);
        } else if (kind == 0) {
          m.push_back(root);  // equal to the root
        } else if (kind == 1) {
          m.emplace_back(G.stride, 0);  // empty
        } else {
          Raw s = root;  // inside the root, or (kind 3, sometimes) not
          G.fill_columns(s, kind == 2 ? &root : nullptr);
          m.push_back(s);
        }
      }
      break;
    }
  }
  return m;
}

}  // namespace

TEST_CASE("run-length rules equal the reference kernel on random groups (1-3 words per mask)") {
  int valid = 0, invalid = 0;
  for (int k : {40, 70, 130, 192}) {
    Gen G(k);
    const kernel::Layout L{k, G.w, G.stride};
    runs::Rules rules(k, G.w);
    for (Collective c : {Collective::AllReduce, Collective::ReduceScatter, Collective::Reduce, Collective::AllGather,
                         Collective::Broadcast})
      for (int trial = 0; trial < 150; ++trial) {
        const int g = 2 + G.pick(5);
        const auto m = members(c, g, G);
        std::vector<const std::uint64_t*> P;
        std::vector<std::vector<std::uint64_t>> recs;
        std::vector<const std::uint64_t*> R;
        std::vector<std::uint32_t> ids;
        for (int a = 0; a < g; ++a) {
          P.push_back(m[a].data());
          recs.push_back(encode(m[a], G));
          REQUIRE(decode(recs[a], G) == m[a]);
          std::uint32_t id = static_cast<std::uint32_t>(a);  // equal states share an id
          for (int b = 0; b < a; ++b)
            if (m[b] == m[a]) id = ids[b];
          ids.push_back(id);
        }
        for (const auto& r : recs) R.push_back(r.data());
        std::vector<int> devs(g);
        const bool want = kernel::group_check(c, P.data(), devs.data(), g, L, nullptr);
        const bool got = rules.apply(c, ids.data(), R.data(), g);
        CAPTURE(k);
        CAPTURE(to_string(c));
        CAPTURE(trial);
        REQUIRE(got == want);
        if (!want) {
          ++invalid;
          continue;
        }
        ++valid;
        std::vector<Raw> out(g, Raw(G.stride, 0));
        std::vector<std::uint64_t*> O;
        for (auto& o : out) O.push_back(o.data());
        kernel::group_apply(c, P.data(), O.data(), g, L);
        for (int a = 0; a < g; ++a) {
          const Raw mine = c == Collective::Broadcast ? m[0] : decode(rules.out(runs::Rules::out_index(c, a)), G);
          CAPTURE(a);
          REQUIRE(mine == out[a]);
        }
      }
  }
  MESSAGE(valid, " valid and ", invalid, " invalid groups compared");
  CHECK(valid > 500);
  CHECK(invalid > 500);
}
