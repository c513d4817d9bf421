// Redistribution synthesis (docs/model.md §10, docs/reshard.md): types, offset tables, every rule's side
// conditions, the test vectors 10.1-10.6, random problems in the paper's style (bound, baseline,
// brute-force optimum, data replayed element by element on every device) and the CLI.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <queue>
#include <random>
#include <set>
#include <string>

#include "brute_force.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/reshard/certificate.hpp"
#include "p2v/reshard/plan.hpp"
#include "p2v/sim/cost.hpp"
#include "p2v/sim/p2p_cost.hpp"

namespace {
// Relative comparison: doctest::Approx's default scale makes its tolerance an absolute 1.2e-5 near
// zero, which any two times in seconds at the microsecond scale pass.
doctest::Approx rel_approx(double v) { return v == 0 ? doctest::Approx(v) : doctest::Approx(v).scale(0); }
}  // namespace

namespace rs = p2v::reshard;
using p2v::Error;

namespace {

rs::Plan plan(const std::string& mesh, const std::string& from, const std::string& to,
              std::optional<std::int64_t> memory = {}) {
  return rs::plan(rs::Request{mesh, from, to, {}, "f32", rs::CostKind::Paper, memory, {}});
}

std::vector<std::string> ops(const rs::Program& p) {
  std::vector<std::string> o;
  for (const auto& s : p.steps) o.push_back(rs::to_string(s.step.op));
  return o;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- an element-level replay, independent of the lowering's own checks ----
// Every device holds the global linear indices of its tile (row-major over the local type);
// each step moves them with the program's groups / sources / slices; the end must equal τ2.
using Buf = std::vector<std::int64_t>;

Buf tile(const rs::Type& t, const std::vector<std::int64_t>& off) {
  const auto c = t.localtype();
  std::int64_t total = t.localsize();
  Buf b(static_cast<std::size_t>(total));
  for (std::int64_t e = 0; e < total; ++e) {
    std::int64_t rem = e, g = 0;
    std::vector<std::int64_t> idx(c.size());
    for (std::size_t i = c.size(); i-- > 0;) {
      idx[i] = rem % c[i];
      rem /= c[i];
    }
    for (std::size_t i = 0; i < c.size(); ++i) g = g * t.dims[i].global + off[i] + idx[i];
    b[static_cast<std::size_t>(e)] = g;
  }
  return b;
}

// Splits a row-major buffer of shape c along dimension i into k chunks, and joins back.
std::vector<Buf> split(const Buf& b, const std::vector<std::int64_t>& c, std::size_t i, std::int64_t k) {
  std::int64_t outer = 1, inner = 1;
  for (std::size_t a = 0; a < i; ++a) outer *= c[a];
  for (std::size_t a = i + 1; a < c.size(); ++a) inner *= c[a];
  const std::int64_t part = c[i] / k;
  std::vector<Buf> out(static_cast<std::size_t>(k));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t r = 0; r < k; ++r)
      for (std::int64_t x = 0; x < part * inner; ++x)
        out[static_cast<std::size_t>(r)].push_back(b[static_cast<std::size_t>((o * c[i] + r * part) * inner + x)]);
  return out;
}
Buf join(const std::vector<Buf>& parts, const std::vector<std::int64_t>& c_part, std::size_t i) {
  std::int64_t outer = 1, inner = 1;
  for (std::size_t a = 0; a < i; ++a) outer *= c_part[a];
  for (std::size_t a = i + 1; a < c_part.size(); ++a) inner *= c_part[a];
  Buf out;
  for (std::int64_t o = 0; o < outer; ++o)
    for (const auto& p : parts)
      for (std::int64_t x = 0; x < c_part[i] * inner; ++x)
        out.push_back(p[static_cast<std::size_t>(o * c_part[i] * inner + x)]);
  return out;
}

// Returns "" when every device ends with τ2's tile, else the first wrong device.
std::string replay(const rs::Plan& p, const rs::Program& prog) {
  const auto n = p.mesh.num_devices();
  std::vector<Buf> buf;
  for (std::int64_t d = 0; d < n; ++d) buf.push_back(tile(p.from, rs::offsets(p.from, p.mesh, d)));
  for (const auto& s : prog.steps) {
    const auto cb = s.before.localtype();
    const auto i = static_cast<std::size_t>(s.step.dim);
    std::vector<Buf> next = buf;
    if (s.step.op == rs::Op::AllGather) {
      for (const auto& g : s.lowered.groups) {
        std::vector<Buf> parts;
        for (auto d : g) parts.push_back(buf[d]);
        const Buf all = join(parts, cb, i);
        for (auto d : g) next[d] = all;
      }
    } else if (s.step.op == rs::Op::AllToAll) {
      const auto j = static_cast<std::size_t>(s.step.dim2);
      const auto k = static_cast<std::int64_t>(s.lowered.groups.empty() ? 1 : s.lowered.groups[0].size());
      auto cp = cb;
      cp[j] /= k;
      for (const auto& g : s.lowered.groups)
        for (std::size_t r = 0; r < g.size(); ++r) {
          std::vector<Buf> parts;
          for (auto src : g) parts.push_back(split(buf[src], cb, j, k)[r]);
          next[g[r]] = join(parts, cp, i);
        }
    } else if (s.step.op == rs::Op::DynSlice) {
      const auto k = cb[i] / s.after.dims[i].local;
      for (std::int64_t d = 0; d < n; ++d) next[d] = split(buf[d], cb, i, k)[s.lowered.slice[d]];
    } else {
      std::set<std::int64_t> seen(s.lowered.sources.begin(), s.lowered.sources.end());
      if (static_cast<std::int64_t>(seen.size()) != n) return "allpermute is not a bijection";
      for (std::int64_t d = 0; d < n; ++d) next[d] = buf[s.lowered.sources[d]];
    }
    buf = std::move(next);
  }
  for (std::int64_t d = 0; d < n; ++d)
    if (buf[d] != tile(p.to, rs::offsets(p.to, p.mesh, d)))
      return "device " + std::to_string(d) + " holds the wrong tile";
  return "";
}

// ---- brute force over local types (the paper's graph), independent of the search ----
std::int64_t brute_force(const rs::Plan& p) {
  std::multiset<int> mesh_primes;
  for (const auto& a : p.mesh.primes) mesh_primes.insert(a.size);
  auto factor = [](std::int64_t v) {
    std::multiset<int> f;
    for (int q = 2; v > 1; ++q)
      while (v % q == 0) f.insert(q), v /= q;
    return f;
  };
  // Products of all sub-multisets of m (with multiplicity), excluding 1.
  auto divisors = [](const std::multiset<int>& m) {
    std::set<std::int64_t> out{1};
    for (int q : m) {
      std::set<std::int64_t> more = out;
      for (auto v : out) more.insert(v * q);
      out = more;
    }
    out.erase(1);
    return out;
  };
  using LT = std::vector<std::int64_t>;
  std::map<LT, std::int64_t> dist;
  std::priority_queue<std::pair<std::int64_t, LT>, std::vector<std::pair<std::int64_t, LT>>, std::greater<>> pq;
  const LT start = p.from.localtype(), goal = p.to.localtype();
  dist[start] = 0;
  pq.push({0, start});
  while (!pq.empty()) {
    auto [du, c] = pq.top();
    pq.pop();
    if (du > dist[c]) continue;
    if (c == goal) return du;
    std::multiset<int> used;
    std::vector<std::multiset<int>> dimf;
    for (std::size_t i = 0; i < c.size(); ++i) {
      dimf.push_back(factor(p.from.dims[i].global / c[i]));
      used.insert(dimf.back().begin(), dimf.back().end());
    }
    std::multiset<int> free = mesh_primes;
    for (int q : used) free.erase(free.find(q));
    auto size = [](const LT& v) {
      std::int64_t s = 1;
      for (auto x : v) s *= x;
      return s;
    };
    auto push = [&](const LT& r, std::int64_t w) {
      if (size(r) > p.limit) return;
      auto it = dist.find(r);
      if (it == dist.end() || du + w < it->second) {
        dist[r] = du + w;
        pq.push({du + w, r});
      }
    };
    for (std::size_t i = 0; i < c.size(); ++i) {
      for (auto f : divisors(dimf[i])) {
        LT r = c;
        r[i] *= f;
        push(r, size(r));  // allgather
        for (std::size_t j = 0; j < c.size(); ++j)
          if (j != i && c[j] % f == 0) {
            LT q = c;
            q[i] *= f;
            q[j] /= f;
            push(q, size(c));  // alltoall
          }
      }
      for (auto f : divisors(free))
        if (c[i] % f == 0) {
          LT r = c;
          r[i] /= f;
          push(r, 0);  // dynslice
        }
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("mesh: parse, prime split, device numbering") {
  const auto m = rs::parse_mesh("x=4,y=6");
  REQUIRE(m.primes.size() == 4);
  CHECK(m.primes[0].name == "x[0]");
  CHECK(m.primes[1].stride == 2);
  CHECK(m.primes[2].size == 2);
  CHECK(m.primes[3].size == 3);
  CHECK(m.num_devices() == 24);
  for (std::int64_t d = 0; d < 24; ++d) CHECK(m.device(m.point(d)) == d);
  // first axis most significant: device 6 is (x=1, y=0)
  CHECK(m.point(6) == std::vector<int>{1, 0, 0, 0});
  CHECK(rs::parse_mesh("{x:4, y:4}").num_devices() == 16);
  CHECK(error_of([] { rs::parse_mesh("x=4,x=2"); }).find("listed twice") != std::string::npos);
  CHECK(error_of([] { rs::parse_mesh("x=0"); }).find("at least 1") != std::string::npos);
  CHECK(error_of([] { rs::parse_mesh("x"); }).find("name=size") != std::string::npos);
}

TEST_CASE("types: parse, print, validation errors name dimension and axis") {
  const auto m = rs::parse_mesh("x=4,y=4");
  const auto t = rs::parse_type("[32{x,y}512,128]", m);
  CHECK(t.dims[0].axes == std::vector<int>{0, 1, 2, 3});
  CHECK(t.localsize() == 32 * 128);
  CHECK(rs::to_string(t, m) == "[32{x,y}512,128]");
  CHECK(error_of([&] { rs::parse_type("[32{z}128]", m); }).find("unknown axis 'z'") != std::string::npos);
  CHECK(error_of([&] { rs::parse_type("[8{x}32,8{x}32]", m); }).find("axis x is used twice") != std::string::npos);
  const auto e = error_of([&] { rs::parse_type("[8{x}64]", m); });
  CHECK(e.find("not well-formed") != std::string::npos);
  CHECK(e.find("dimension 0") != std::string::npos);
  CHECK(error_of([&] { rs::parse_type("32{x}128", m); }).find("write it as") != std::string::npos);
  CHECK(error_of([&] { rs::parse_type("[32{x128]", m); }).find("unbalanced braces") != std::string::npos);
}

TEST_CASE("10.1 offset table") {
  const auto m = rs::parse_mesh("x=2,y=2");
  const auto t = rs::parse_type("[8{x,y}32]", m);
  // devices: (x,y) = (0,0)->0, (0,1)->1, (1,0)->2, (1,1)->3 (first axis most significant)
  CHECK(rs::offsets(t, m, 0)[0] == 0);   // (0,0)
  CHECK(rs::offsets(t, m, 2)[0] == 8);   // (1,0)
  CHECK(rs::offsets(t, m, 1)[0] == 16);  // (0,1)
  CHECK(rs::offsets(t, m, 3)[0] == 24);  // (1,1)
}

TEST_CASE("rules: results and every side condition") {
  const auto m = rs::parse_mesh("x=2,y=2,z=3");
  const auto t = rs::parse_type("[4{x,y}16,6{z}18]", m);
  auto step = [](rs::Op op, int i, int j, std::vector<int> axes) {
    rs::Step s;
    s.op = op;
    s.dim = i;
    s.dim2 = j;
    s.axes = std::move(axes);
    return s;
  };
  // allgather removes the minor-most axis
  CHECK(rs::to_string(rs::apply(t, step(rs::Op::AllGather, 0, -1, {0}), m), m) == "[8{y}16,6{z}18]");
  CHECK(rs::to_string(rs::apply(t, step(rs::Op::AllGather, 0, -1, {0, 1}), m), m) == "[16,6{z}18]");
  CHECK(error_of([&] {
          rs::apply(t, step(rs::Op::AllGather, 0, -1, {1}), m);
        }).find("axis y is not the first minor-most axis of dimension 0") != std::string::npos);
  CHECK(error_of([&] { rs::apply(t, step(rs::Op::AllGather, 2, -1, {0}), m); }).find("dimension 2 does not exist") !=
        std::string::npos);
  // dynslice: unused axis, divisibility
  const auto u = rs::parse_type("[16,18]", m);
  CHECK(rs::to_string(rs::apply(u, step(rs::Op::DynSlice, 1, -1, {2}), m), m) == "[16,6{z}18]");
  CHECK(error_of([&] {
          rs::apply(t, step(rs::Op::DynSlice, 1, -1, {0}), m);
        }).find("axis x is already used by dimension 0") != std::string::npos);
  CHECK(error_of([&] {
          rs::apply(u, step(rs::Op::DynSlice, 0, -1, {2}), m);
        }).find("local size 16 of dimension 0 is not divisible by |z| = 3") != std::string::npos);
  // alltoall: minor-most axis of i, divisibility of j, distinct dimensions
  CHECK(rs::to_string(rs::apply(t, step(rs::Op::AllToAll, 0, 1, {0}), m), m) == "[8{y}16,3{x,z}18]");
  CHECK(error_of([&] {
          rs::apply(t, step(rs::Op::AllToAll, 1, 0, {2}), m);
        }).find("local size 4 of dimension 0 is not divisible by |z| = 3") != std::string::npos);
  CHECK(error_of([&] { rs::apply(t, step(rs::Op::AllToAll, 0, 0, {0}), m); }).find("must differ") != std::string::npos);
  CHECK(error_of([&] { rs::apply(t, step(rs::Op::AllToAll, 0, 1, {1}), m); }).find("not the first minor-most") !=
        std::string::npos);
  // allpermute: equal local types
  rs::Step p;
  p.op = rs::Op::AllPermute;
  p.target = rs::parse_type("[4{y,x}16,6{z}18]", m);
  CHECK(rs::to_string(rs::apply(t, p, m), m) == "[4{y,x}16,6{z}18]");
  p.target = rs::parse_type("[8{y}16,6{z}18]", m);
  CHECK(error_of([&] { rs::apply(t, p, m); }).find("local types differ") != std::string::npos);
}

TEST_CASE("relabelling keeps every device's tile") {
  const auto m = rs::parse_mesh("x=3,y=5");
  const auto t = rs::parse_type("[1{y,x}15]", m);
  std::vector<std::int64_t> sigma;
  const auto r = rs::relabel(t, 0, {0, 1}, m, sigma);  // x minor-most
  for (std::int64_t d = 0; d < 15; ++d) CHECK(rs::offsets(r, m, sigma[d]) == rs::offsets(t, m, d));
}

TEST_CASE("10.2 alltoall with 32 devices; naive peaks at 65,536") {
  const auto p = plan("devs=32", "[32,64{devs}2048]", "[1{devs}32,2048]");
  REQUIRE(p.program.steps.size() == 1);
  CHECK(p.program.steps[0].step.op == rs::Op::AllToAll);
  CHECK(p.program.steps[0].step.dim == 1);
  CHECK(p.program.steps[0].step.dim2 == 0);
  CHECK(p.program.cost == 2048);
  CHECK(p.baseline.peak == 65536);
  CHECK(replay(p, p.program).empty());
  CHECK(replay(p, p.baseline).empty());
}

TEST_CASE("10.3 allpermute and allgather on {x:4,y:4}") {
  const auto a = plan("x=4,y=4", "[32{x}128]", "[32{y}128]");
  REQUIRE(ops(a.program) == std::vector<std::string>{"allpermute"});
  CHECK(a.program.cost == 32);
  CHECK(replay(a, a.program).empty());
  // docs/model.md §10 lists cost 65,536 for this one; with its own model (allgather = localsize of the output)
  // one allgather(0) of x to [128{y}512,128] costs 128·128 = 16,384. 65,536 is the cost of
  // gathering both axes (to [512,128]), checked below.
  const auto b = plan("x=4,y=4", "[32{x,y}512,128]", "[128{y}512,128]");
  REQUIRE(ops(b.program) == std::vector<std::string>{"allgather"});
  CHECK(b.program.steps[0].step.dim == 0);
  CHECK(b.program.cost == 16384);
  CHECK(replay(b, b.program).empty());
  const auto c = plan("x=4,y=4", "[32{x,y}512,128]", "[512,128]");
  REQUIRE(ops(c.program) == std::vector<std::string>{"allgather"});
  CHECK(c.program.cost == 65536);
}

TEST_CASE("10.4 one alltoall, no permute") {
  const auto p = plan("a=8", "[1{a}8,8]", "[8,1{a}8]");
  REQUIRE(ops(p.program) == std::vector<std::string>{"alltoall"});
  CHECK(p.program.steps[0].step.dim == 0);
  CHECK(p.program.steps[0].step.dim2 == 1);
  CHECK(p.program.cost == 8);
  CHECK(replay(p, p.program).empty());
}

TEST_CASE("10.5 dynslice on the axes the target uses, no permute") {
  const auto p = plan("x=4,y=4", "[16]", "[4{x}16]");
  REQUIRE(ops(p.program) == std::vector<std::string>{"dynslice"});
  CHECK(rs::step_to_string(p.program.steps[0].step, p.mesh) == "dynslice(0){x}");
  CHECK(p.program.cost == 0);
  CHECK(replay(p, p.program).empty());
}

TEST_CASE("10.6 errors: global shapes differ, not well-formed, memory below the bound") {
  CHECK(error_of([] { plan("devs=32", "[512,32{devs}1024]", "[1024,32{devs}1024]"); }).find("global shapes differ") !=
        std::string::npos);
  // docs/model.md §10's `[8{devs}256,1024]` is well-formed (8·32 = 256); a type whose n is not c·|devs|:
  CHECK(error_of([] { plan("devs=32", "[8{devs}1024,1024]", "[1024,1024]"); }).find("not well-formed") !=
        std::string::npos);
  CHECK(error_of([] { plan("devs=32", "[8{devs}256,1024]", "[256,32{devs}1024]"); }).empty());
  CHECK(error_of([] { plan("x=4", "[8{x}32]", "[32]", 64); }).find("below the bound") != std::string::npos);
  CHECK(error_of([] { plan("x=4", "[8{x}32]", "[32,1]"); }).find("global shapes differ") != std::string::npos);
}

TEST_CASE("non-minor-most axes via relabelling: [5{x}15] ~> [3{y}15] on {x:3,y:5}") {
  // A final permute (after relabelling) costs more than permuting the small tiles of an
  // over-partitioned layout in the middle: dynslice, allpermute (1), allgather (3).
  const auto p = plan("x=3,y=5", "[5{x}15]", "[3{y}15]");
  CHECK(p.program.peak <= p.bound);
  CHECK(p.program.cost == 4);
  CHECK(ops(p.program) == std::vector<std::string>{"dynslice", "allpermute", "allgather"});
  CHECK(rs::testing::brute_force_optimum(p.mesh, p.from, p.to, p.limit) == 4);
  CHECK(replay(p, p.program).empty());
}

TEST_CASE("--memory above the bound lets gather-then-slice in") {
  const auto tight = plan("x=2,y=2", "[2{x,y}8,8]", "[8,2{y,x}8]");
  const auto loose = plan("x=2,y=2", "[2{x,y}8,8]", "[8,2{y,x}8]", 64 * 4);
  CHECK(tight.program.peak <= tight.bound);
  CHECK(loose.program.cost <= tight.program.cost);
  CHECK(replay(loose, loose.program).empty());
}

TEST_CASE("random problems: within the bound, never costlier than the baseline, the exact optimum, data") {
  // The exact optimum over programs ending on τ2 itself (brute force over every type, relabellings
  // and any number of allpermutes anywhere); the paper's graph over local types is a lower bound.
  int compared = 0;
  for (int kind = 0; kind < rs::kRandomMeshKinds; ++kind) {
    std::mt19937_64 rng(42 + static_cast<unsigned>(kind));
    for (int k = 0; k < 120; ++k) {
      const auto q = rs::random_problem(rng, kind, kind == 0 ? 4 : 3, 1);
      CAPTURE(q.mesh);
      CAPTURE(q.from);
      CAPTURE(q.to);
      const auto p = plan(q.mesh, q.from, q.to);
      CHECK(p.program.peak <= p.bound);
      CHECK(p.program.cost <= p.baseline.cost);
      const auto lower_bound = brute_force(p);
      CHECK(lower_bound >= 0);
      CHECK(p.program.cost >= lower_bound);
      const auto best = rs::testing::brute_force_optimum(p.mesh, p.from, p.to, p.limit);
      if (best >= 0) {
        ++compared;
        CHECK(p.program.cost == best);
      }
      int permutes = 0;
      for (const auto& s : p.program.steps) permutes += s.step.op == rs::Op::AllPermute;
      CHECK(permutes <= 1);
      CHECK(replay(p, p.program).empty());
      CHECK(replay(p, p.baseline).empty());
    }
  }
  CHECK(compared >= 400);  // most problems are small enough to brute-force
}

TEST_CASE("the allpermute where tiles are small: two problems where a final permute costs more") {
  // Before the exact search p2v placed its one allpermute last (32 and 48); the optimum permutes first.
  auto p = plan("x=4,y=6", "[4{y,x}96]", "[16{y}96]");
  CHECK(p.program.cost == 20);
  CHECK(ops(p.program) == std::vector<std::string>{"allpermute", "allgather"});
  CHECK(rs::testing::brute_force_optimum(p.mesh, p.from, p.to, p.limit) == 20);
  CHECK(replay(p, p.program).empty());
  p = plan("a=2,b=2,c=2", "[3{b}6,2{a,c}8]", "[6,4{a}8]");
  CHECK(p.program.cost == 36);
  CHECK(rs::testing::brute_force_optimum(p.mesh, p.from, p.to, p.limit) == 36);
  CHECK(replay(p, p.program).empty());
}

TEST_CASE("mutated lowering is caught by the replay") {
  auto p = plan("x=4,y=4", "[32{x,y}512,128]", "[128{x}512,32{y}128]");
  REQUIRE(replay(p, p.program).empty());
  auto bad = p.program;
  for (auto& s : bad.steps)
    if (!s.lowered.groups.empty()) {
      std::swap(s.lowered.groups[0][0], s.lowered.groups[0][1]);  // wrong group order
      break;
    }
  CHECK_FALSE(replay(p, bad).empty());
}

// ---- the command line ----
namespace {
struct Out {
  int code;
  std::string out, err;
};
Out run_p2v(const std::string& args) {
  const std::string base = "/tmp/p2v_reshard_test_" + std::to_string(::getpid());
  const int st = std::system((std::string(P2V_BIN) + " " + args + " >" + base + ".out 2>" + base + ".err").c_str());
  auto slurp = [](const std::string& f) {
    std::ifstream in(f);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  Out o{WIFEXITED(st) ? WEXITSTATUS(st) : -1, slurp(base + ".out"), slurp(base + ".err")};
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return o;
}
}  // namespace

TEST_CASE("cli: p2v reshard --json and errors") {
  const auto o = run_p2v("reshard --mesh x=4,y=4 --from '[32{x,y}512,128]' --to '[128{x}512,32{y}128]' --json");
  REQUIRE(o.code == 0);
  const auto j = nlohmann::json::parse(o.out);
  CHECK(j["bound"] == 4096);
  CHECK(j["peak"].get<int>() <= 4096);
  CHECK(j["cost"] == 8192);
  CHECK(j["baseline"]["cost"] == 65536);
  CHECK(j["baseline"]["peak"] == 65536);
  for (const auto& s : j["steps"]) {
    const auto op = s["op"].get<std::string>();
    CHECK((op == "allgather" || op == "alltoall" || op == "dynslice" || op == "allpermute"));
  }
  const auto t = run_p2v("reshard --mesh x=4,y=4 --from '[32{x,y}512,128]' --to '[128{x}512,32{y}128]'");
  CHECK(t.code == 0);
  CHECK(t.out.find("alltoall(0,1)") != std::string::npos);
  CHECK(t.out.find("baseline") != std::string::npos);
  for (const char* bad :
       {"--mesh devs=32 --from '[512,32{devs}1024]' --to '[1024,32{devs}1024]'",
        "--mesh devs=32 --from '[8{devs}1024,1024]' --to '[1024,1024]'", "--mesh x=4 --from '[8{z}32]' --to '[32]'",
        "--mesh x=4,y=2 --from '[8{x,x}64]' --to '[64]'", "--mesh x=3 --from '[32]' --to '[10{x}32]'",
        "--mesh x=4 --from '[8{x}32]' --to '[32]' --memory 64",
        "--mesh x=4 --from '[8{x}32]' --to '[32]' --cost topology"}) {
    const auto e = run_p2v(std::string("reshard ") + bad);
    CAPTURE(bad);
    CHECK(e.code == 2);
    CHECK(e.err.rfind("p2v: error: ", 0) == 0);
  }
}

TEST_CASE("cli: --cost topology prices steps on the system's levels") {
  const auto o = run_p2v("reshard --mesh x=2,y=16 --from '[32{y}512,64{x}128]' --to '[512,4{x,y}128]' --system " +
                         std::string(P2V_SOURCE_DIR) + "/examples/systems/a100-2node.json --cost topology --json");
  REQUIRE(o.code == 0);
  const auto j = nlohmann::json::parse(o.out);
  CHECK(j["time_s"].get<double>() > 0);
  CHECK(j["baseline"]["time_s"].get<double>() >= j["time_s"].get<double>());
}

TEST_CASE("cli: --certify writes a certificate that p2v check accepts (when p2v-smt is built)") {
  const std::string smt = std::string(P2V_BIN) + "-smt";
  if (!std::ifstream(smt)) return;
  const std::string dir = "/tmp/p2v_reshard_cert_" + std::to_string(::getpid());
  const auto o = run_p2v("reshard --mesh x=3,y=5 --from '[5{x}15,30]' --to '[3{y}15,10{x}30]' --certify " + dir);
  CHECK(o.code == 0);
  CHECK(o.out.find("proved by z3 and cvc5") != std::string::npos);
  const auto c = run_p2v("check " + dir + "/*.json");
  CHECK(c.code == 0);
  CHECK(c.out.find("1 of 1 certificates accepted") != std::string::npos);
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("certificate format: one writer, a strict reader, its version") {
  const auto p = plan("x=4,y=6", "[4{y,x}96]", "[16{y}96]");
  const auto text = rs::certificate_text(p, std::nullopt);
  const auto c = rs::read_certificate(text, "cert.json");
  CHECK(c.version == rs::kCertificateVersion);
  CHECK(c.from == "[4{y,x}96]");
  CHECK(c.program.cost == 20);
  REQUIRE(c.program.steps.size() == 2);
  CHECK(c.program.steps[0].op == "allpermute");
  CHECK(c.program.steps[0].sources.size() == 24);
  CHECK(c.program.steps[1].groups.size() == 6);
  CHECK_FALSE(c.smt.has_value());
  auto j = nlohmann::json::parse(text);
  j["extra"] = 1;
  CHECK(error_of([&] { rs::read_certificate(j.dump(), "cert.json"); }).find("extra: unknown field") !=
        std::string::npos);
  j = nlohmann::json::parse(text);
  j["format"] = "p2v-reshard-certificate/2";
  CHECK(error_of([&] { rs::read_certificate(j.dump(), "cert.json"); }).find("not a version this p2v reads") !=
        std::string::npos);
  j = nlohmann::json::parse(text);
  j["steps"][1]["groups"] = "all";
  CHECK(error_of([&] { rs::read_certificate(j.dump(), "cert.json"); }).find("steps[1].groups") != std::string::npos);
}

TEST_CASE("JAX PartitionSpec and the bracket form without local sizes") {
  const auto m = rs::parse_mesh("x=4,y=4");
  // JAX lists a dimension's axes major first, p2v minor first.
  CHECK(rs::from_partition_spec("P(('x','y'),None)", {1024, 1024}, m) == "[64{y,x}1024,1024]");
  CHECK(rs::from_partition_spec("PartitionSpec('x', 'y')", {512, 128}, m) == "[128{x}512,32{y}128]");
  CHECK(rs::from_partition_spec("P(\"y\")", {512, 128}, m) == "[128{y}512,128]");
  CHECK(rs::from_partition_spec("P()", {512, 128}, m) == "[512,128]");
  CHECK(rs::from_partition_spec("P(None, ('y',))", {512, 128}, m) == "[512,32{y}128]");
  CHECK(error_of([&] { rs::from_partition_spec("P('z')", {16}, m); }).find("unknown mesh axis 'z'") !=
        std::string::npos);
  CHECK(error_of([&] { rs::from_partition_spec("P('x')", {6}, m); }).find("not divisible") != std::string::npos);
  CHECK(error_of([&] { rs::from_partition_spec("P('x','y')", {16}, m); }).find("2 entries") != std::string::npos);
  // The device order: JAX's Mesh(devices.reshape(4, 4), ('x', 'y')) is p2v's x=4,y=4 (first axis
  // most significant): device 4·x + y. Under P('x') device 5 (x=1, y=1) holds rows 4..7 of 16.
  CHECK(rs::offsets(rs::parse_type(rs::from_partition_spec("P('x')", {16}, m), m), m, 5)[0] == 4);
  // Local sizes may be omitted in the bracket form.
  CHECK(rs::parse_type("[{x,y}1024,1024]", m) == rs::parse_type("[64{x,y}1024,1024]", m));
  CHECK(error_of([&] { rs::parse_type("[{x,y}1000]", m); }).find("not divisible by 16") != std::string::npos);
}

TEST_CASE("cli: --shape with --from-spec / --to-spec, and the staged peak") {
  const auto o = run_p2v(
      "reshard --mesh x=4,y=4 --shape 512,128 --from-spec \"P(('y','x'),None)\" --to-spec \"P('x','y')\" --json");
  REQUIRE(o.code == 0);
  const auto j = nlohmann::json::parse(o.out);
  CHECK(j["from"] == "[32{x,y}512,128]");
  CHECK(j["to"] == "[128{x}512,32{y}128]");
  CHECK(j["peak_staged"].get<std::int64_t>() >= j["peak"].get<std::int64_t>());
  CHECK(j["bound_staged"] == 3 * j["bound"].get<std::int64_t>());
  const auto e = run_p2v("reshard --mesh x=4,y=4 --from-spec \"P('x')\" --to \"[16]\"");
  CHECK(e.code == 2);
  CHECK(e.err.find("p2v: error: --from-spec/--to-spec need --shape") != std::string::npos);
}

namespace {
// 2 nodes of 4 devices: a switch inside a node (270 GB/s, 1 us), one NIC per node (8 GB/s, 5 us).
p2v::engine::System two_nodes() {
  p2v::engine::System s;
  s.name = "two-nodes";
  s.levels = {{"node", 2, p2v::engine::Interconnect{p2v::engine::LinkKind::Nic, 8, 5, 0}},
              {"gpu", 4, p2v::engine::Interconnect{p2v::engine::LinkKind::Switch, 270, 1, 0}}};
  return s;
}
}  // namespace

TEST_CASE("sim prices point-to-point patterns with link sharing") {
  const p2v::sim::Simulator sim(two_nodes());
  const double B = 1 << 20, launch = sim.nccl().effective_launch_us() * 1e-6;
  const auto& topo = sim.topology();
  // A swap inside a node: one switch link per direction, 270 GB/s.
  auto c = p2v::sim::permute_cost(sim, {1, 0, 2, 3, 4, 5, 6, 7}, B);
  CHECK(c.sends == 2);
  CHECK(c.bandwidth_s == rel_approx(B / 270e9));
  CHECK(c.latency_s == rel_approx(topo.route_latency(0, 1) + launch));
  CHECK(c.bottleneck_class == "gpu");
  // Every device swaps with its peer in the other node: the 4 devices of a node share its NIC.
  c = p2v::sim::permute_cost(sim, {4, 5, 6, 7, 0, 1, 2, 3}, B);
  CHECK(c.sends == 8);
  CHECK(c.bandwidth_s == rel_approx(4 * B / 8e9));
  CHECK(c.bottleneck_class == "node");
  CHECK(c.latency_s > topo.route_latency(0, 1) + launch);  // crosses the network
  // All-to-all over all 8: each device sends B/8 to 7 peers, 4 of them in the other node, so a
  // node's uplink carries 4 devices x 4 peers x B/8 = 2B.
  c = p2v::sim::alltoall_cost(sim, {{0, 1, 2, 3, 4, 5, 6, 7}}, B);
  CHECK(c.sends == 56);
  CHECK(c.bandwidth_s == rel_approx(2 * B / 8e9));
  // Two all-to-alls inside the nodes share no link with each other: per device 3 x B/4 out.
  c = p2v::sim::alltoall_cost(sim, {{0, 1, 2, 3}, {4, 5, 6, 7}}, B);
  CHECK(c.bandwidth_s == rel_approx(3 * B / 4 / 270e9));
  CHECK(c.time_s == rel_approx(c.latency_s + c.bandwidth_s));
  // Nothing moves: free.
  CHECK(p2v::sim::permute_cost(sim, {0, 1, 2, 3, 4, 5, 6, 7}, B).time_s == 0.0);
  CHECK_THROWS_AS(p2v::sim::permute_cost(sim, {9, 1}, B), Error);
}

TEST_CASE("--cost topology: every step's time is sim's price of that collective on its groups") {
  // Allgather: sim's collective (what `p2v simulate` charges); alltoall and allpermute: sim's
  // point-to-point prices, on the lowered (physical) groups and permutation.
  const auto sys = two_nodes();
  const p2v::sim::Simulator sim(sys);
  std::mt19937_64 rng(7);
  int seen[4] = {0, 0, 0, 0};
  for (int k = 0; k < 60; ++k) {
    const auto q = rs::random_problem(rng, 0, 4, 1);
    CAPTURE(q.from);
    CAPTURE(q.to);
    const auto p = rs::plan(rs::Request{q.mesh, q.from, q.to, sys, "f32", rs::CostKind::Topology, {}, {}});
    for (const auto* prog : {&p.program, &p.baseline}) {
      double total = 0;
      for (const auto& s : prog->steps) {
        double want = 0;
        std::string level;
        if (s.step.op == rs::Op::AllGather) {
          p2v::engine::LoweredStep st{p2v::engine::Collective::AllGather, {}};
          for (const auto& g : s.lowered.groups) st.groups.emplace_back(g.begin(), g.end());
          const auto c = sim.collective(st, static_cast<double>(s.after.localsize() * 4), p2v::sim::Algorithm::Auto);
          want = c.time_s;
          level = sim.topology().edges()[static_cast<std::size_t>(c.bottleneck_edge)].cls;
        } else if (s.step.op == rs::Op::AllToAll) {
          const auto c = p2v::sim::alltoall_cost(sim, s.lowered.groups, static_cast<double>(s.before.localsize() * 4));
          want = c.time_s;
          level = c.bottleneck_class;
        } else if (s.step.op == rs::Op::AllPermute) {
          const auto c = p2v::sim::permute_cost(sim, s.lowered.sources, static_cast<double>(s.before.localsize() * 4));
          want = c.time_s;
          level = c.bottleneck_class;
        }
        ++seen[static_cast<int>(s.step.op)];
        CHECK(s.time_s == rel_approx(want).epsilon(1e-12));
        CHECK(s.level == level);
        CHECK((s.step.op == rs::Op::DynSlice) == (s.time_s == 0.0));
        total += s.time_s;
      }
      CHECK(prog->time_s == rel_approx(total));
    }
    // The baseline is a program without relabelling (priced exactly in the search): never faster
    // when it fits the memory limit.
    if (p.baseline.peak <= p.limit) CHECK(p.program.time_s <= p.baseline.time_s * (1 + 1e-9));
  }
  for (int op = 0; op < 4; ++op) CHECK(seen[op] > 0);  // every kind of step was priced
}

TEST_CASE("--bytes: dimension 0 scaled to the array's size, rounded to what both splits need") {
  const auto m = rs::parse_mesh("x=4,y=6");
  auto from = rs::parse_type("[4{y,x}96,8]", m), to = rs::parse_type("[16{y}96,8]", m);
  // Dimension 0 must be a multiple of lcm(24, 6) = 24; one index of it is 8 f32 = 32 bytes.
  rs::scale_leading(from, to, m, 1 << 20, 4);
  CHECK(from.dims[0].global == 32760);  // floor(2^20 / 32 / 24) x 24
  CHECK(from.dims[0].local == 32760 / 24);
  CHECK(to.dims[0].global == 32760);
  CHECK(to.dims[0].local == 32760 / 6);
  CHECK(from.dims[1].global == 8);
  CHECK(rs::array_bytes(from, 4) == 32760.0 * 32);
  CHECK(error_of([&] { rs::scale_leading(from, to, m, 700, 4); })
            .find("below the smallest array of this layout, 768 "
                  "bytes") != std::string::npos);
  // Through plan(): the same program at any size under the paper model (costs scale alike).
  rs::Request r{"x=4,y=6", "[4{y,x}96]", "[16{y}96]", {}, "f32", rs::CostKind::Paper, {}, 96.0 * 4 * 1000};
  const auto p = rs::plan(r);
  CHECK(p.from.dims[0].global == 96 * 1000);
  CHECK(p.program.cost == 20 * 1000);
}

TEST_CASE("cli: --bytes sweeps and --backend errors exit 2 with what is wrong") {
  const std::string ab = "reshard --mesh x=4,y=4 --from '[32{x,y}512,128]' --to '[128{x}512,32{y}128]' ";
  const auto o = run_p2v(ab + "--bytes 1M,16M --json");
  REQUIRE(o.code == 0);
  const auto j = nlohmann::json::parse(o.out);
  REQUIRE(j["sizes"].size() == 2);
  CHECK(j["sizes"][0]["bytes"] == 1 << 20);  // 2048 x 128 f32: a multiple of 16 rows fits exactly
  CHECK(j["sizes"][1]["cost"] == 16 * j["sizes"][0]["cost"].get<std::int64_t>());
  CHECK(j["crossover"].size() == 1);  // the paper model scales every cost alike
  for (const auto& [args, what] : std::vector<std::pair<std::string, std::string>>{
           {"--bytes 1K,1M --run", "--run and --certify take one size"},
           {"--bytes 100", "below the smallest array of this layout"},
           {"--bytes 1M -b 1K", "give --bytes or -b/-e/-f/-i, not both"},
           {"--backend threads", "--backend goes with --run"},
           {"--run --backend gpu", "--backend 'gpu': use mpi, nccl or threads"}}) {
    const auto e = run_p2v(ab + args);
    CAPTURE(args);
    CHECK(e.code == 2);
    CHECK(e.err.rfind("p2v: error: ", 0) == 0);
    CHECK(e.err.find(what) != std::string::npos);
  }
}
