// docs/shape.md §3.6: --master-collectives all on the instances [n n n] and [n n n n] with equal
// cardinalities, computed with the type model of tests/shape/type_model.hpp (M3 of §3.5, and M4 with the
// 24 orders of four levels). The type model with n = 5 computes the same graph for every n >= 5 (§3.6,
// Lemma T), so "n = 2, 3, 4, 5" covers every n.
// CI: Theorem 4's finite part at depth 3 for every n, both forms (M3 never aborts from a state without
// P4; its graph is bijectively bisimilar to [2 2 2]'s with the same valid instructions, P4 and goal), and
// the depth-4 forms with inner trivial levels have the groupings of [n n n n] or [n n n n 1].
// On request (--no-skip): the same finite part at depth 4 (23 min for n = 2..5), with a trivial leaf,
// and M4 against the engine on [2 2 2 2] (Lemma M4's implementation check).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "model_product.hpp"
#include "p2v/engine/hierarchy.hpp"
#include "p2v/engine/instruction.hpp"
#include "p2v/engine/placement.hpp"
#include "p2v/engine/state.hpp"
#include "type_model.hpp"

using namespace p2v::engine;
using shape_types::TGraph;
using shape_types::TypeModel;

namespace {

// An instance [n ... n] (root first, levels of cardinality 1 allowed), its instructions under
// --master-collectives all, and each instruction's (collective, V, Master) with V over the
// non-trivial levels (bit l: the l-th non-trivial level, outer first). M_d's groups from (V, Master)
// and the coordinates alone — members agree outside V (Master: the one group of the devices that are 0
// outside V), in device order — must be the engine's.
struct InstD {
  SynthesisHierarchy h;
  std::vector<Instruction> ins;
  std::vector<shape_types::Ins> tins;
  std::vector<unsigned> V;
  std::vector<char> master;
  std::vector<int> lv;               // the non-trivial levels
  std::vector<std::vector<int>> co;  // device coordinates on them
  int d = 0, n = 0, k = 0;
};

// `sig` (empty: the level order) names the non-trivial levels in the order of their significance in the
// device numbering (sig[0] most significant); the coordinates co, the levels V and M_d's levels are renamed
// so that level i is sig[i], and the device number must then be the mixed radix of co (unless !numbered).
InstD make_inst(SynthesisHierarchy h, std::vector<int> sig = {}, bool numbered = true) {
  InstD I;
  I.h = std::move(h);
  I.ins = instructions(I.h, MasterCollectives::All);
  for (int l = 0; l < I.h.num_levels(); ++l)
    if (I.h.cards[l] >= 2) I.lv.push_back(l);
  I.d = static_cast<int>(I.lv.size());
  I.n = I.h.cards[I.lv[0]];
  for (int l : I.lv) REQUIRE(I.h.cards[l] == I.n);
  if (sig.empty())
    for (int i = 0; i < I.d; ++i) sig.push_back(i);
  I.k = I.h.num_local();
  for (int x = 0; x < I.k; ++x) {
    std::vector<int> c;
    for (int i : sig) c.push_back(I.h.coords[x][I.lv[i]]);
    int num = 0;
    for (int v : c) num = num * I.n + v;
    if (numbered) REQUIRE(num == x);
    I.co.push_back(c);
  }
  for (const auto& in : I.ins) {
    const auto [v, m] = shape_test::level_pattern(in, I.co);
    I.V.push_back(v);
    I.master.push_back(m);
    I.tins.push_back({in.collective, v, m});
  }
  return I;
}
InstD make_inst(const std::vector<int>& cards) { return make_inst(make_plain_hierarchy(cards)); }

// The engine row of tuple rho (digits per level) under order o (o[0] most significant).
int engine_row(const InstD& I, const std::vector<int>& rho, const std::vector<int>& o) {
  int r = 0;
  for (int l : o) r = r * I.n + rho[l];
  return r;
}

// (1) Lemma M_d's implementation check, through the type model: M_d and the engine take the same
// steps, and M_d's state (the union of its orbits) read through its label is the engine's state, on
// every state M_d reaches (it must not abort on them).
struct EngineCheck {
  int mismatches = 0, aborts = 0;
};
EngineCheck types_vs_engine(const InstD& I) {
  const TypeModel T(I.d, I.n, I.tins);
  const int k = I.k;
  std::vector<std::vector<int>> digits(k);  // tuple t's digits (t numbered like the devices)
  for (int t = 0; t < k; ++t) digits[t] = I.co[t];
  std::vector<std::pair<shape_types::TState, StateSet>> queue{{T.initial(), StateSet::initial(k)}};
  std::unordered_map<shape_types::TState, int, shape_types::TStateHash> seen{{queue[0].first, 0}};
  int checked = 0, mismatches = 0, aborts = 0, barriers = 0;
  std::vector<int> tt(I.d);
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const auto ts = queue[q].first;
    const StateSet es = queue[q].second;
    // The state read through the label is the engine's.
    const auto& o = T.orders[ts.label < 0 ? 0 : ts.label];
    for (int x = 0; x < k; ++x)
      for (int t = 0; t < k; ++t) {
        const int r = engine_row(I, digits[t], o);
        for (int j = 0; j < k; ++j) {
          for (int l = 0; l < I.d; ++l) tt[l] = T.ty(I.co[x][l], digits[t][l], I.co[j][l]);
          // ty() takes block ids; values are block ids up to relabelling, which index() normalizes.
          mismatches += T.sp.get(ts.s, tt) != es.get(x, r, j);
        }
      }
    if (T.p4(ts.s)) {  // dead (Lemma 6): M_d stops here
      ++barriers;
      continue;
    }
    auto c = T.cache(ts.s);
    for (std::size_t i = 0; i < I.ins.size(); ++i) {
      shape_types::TState m;
      shape_types::Out out = T.step(ts, c, static_cast<int>(i), m);
      if (out == shape_types::Out::Valid) out = T.finish(m);
      StateSet e;
      const bool ev = es.apply(I.ins[i].collective, I.ins[i].grouping.groups, e);
      if (out == shape_types::Out::Abort) {
        ++aborts;
        continue;
      }
      ++checked;
      if ((out == shape_types::Out::Valid) != ev) {
        ++mismatches;
        continue;
      }
      if (!ev) continue;
      if (seen.emplace(m, static_cast<int>(queue.size())).second) queue.emplace_back(std::move(m), std::move(e));
    }
  }
  MESSAGE(fmt::format("{}: {} states of M{} ({} with P4), {} steps compared with the engine, {} aborts, {} mismatches",
                      I.h.cards, queue.size(), I.d, barriers, checked, aborts, mismatches));
  return {mismatches, aborts};
}
void types_are_engine(const std::vector<int>& cards) {
  const std::string where = fmt::format("{}", cards);
  CAPTURE(where);
  const EngineCheck e = types_vs_engine(make_inst(cards));
  CHECK(e.mismatches == 0);
  CHECK(e.aborts == 0);
}

// (2) The finite part on cardinality n (the type model with n = 5 stands for every n >= 5).
struct Finite {
  std::size_t states = 0, p4 = 0, labelled = 0, pairs = 0;
};
Finite bisimilar_to_smallest(const std::vector<int>& cards, const std::vector<int>& smallest) {
  const std::string where = fmt::format("{}", cards);
  CAPTURE(where);
  const InstD I = make_inst(cards), I2 = make_inst(smallest);
  shape_test::require_same_instructions(I, I2);
  const auto t0 = std::chrono::steady_clock::now();
  const TypeModel T(I.d, I.n, I.tins), T2(I2.d, I2.n, I2.tins);
  // The smallest instance's graph, computed once per form.
  static std::map<std::vector<int>, TGraph> smallest_graphs;
  auto it = smallest_graphs.find(smallest);
  if (it == smallest_graphs.end())
    it = smallest_graphs.emplace(smallest, shape_types::explore(T2, true, I.d >= 4)).first;
  const TGraph& G2 = it->second;
  const TGraph G = I.n == 2 ? G2 : shape_types::explore(T, true, I.d >= 4);
  REQUIRE(G2.goal >= 0);
  CHECK(G.aborts == 0);
  REQUIRE(G.goal >= 0);
  const auto walk = shape_test::product_walk(G, G2, I.ins.size(), [&](int x, int y) { return G.p4[x] != G2.p4[y]; });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE(fmt::format("{} (types, n = {}{}): {} states of M{} ({} with a label, {} with P4), {} pairs, {:.1f} s", cards,
                      I.n, I.n == 5 ? ", every n >= 5" : "", G.states.size(), I.d, G.labelled(), G.with_p4(),
                      walk.pairs, s));
  CHECK(walk.mismatches == 0);
  CHECK(walk.pairs == G2.states.size());
  CHECK(G.states.size() == G2.states.size());
  return {G.states.size(), G.with_p4(), G.labelled(), walk.pairs};
}

}  // namespace

TEST_CASE("depth 4, equal cardinalities: M4 (type model) is the engine's semantics on [2 2 2 2] (on request)" *
          doctest::skip()) {
  types_are_engine({1, 2, 2, 2, 2});
}

TEST_CASE("depth 4, equal cardinalities: M4 is the engine's semantics, with a trivial leaf (on request)" *
          doctest::skip()) {
  types_are_engine({1, 2, 2, 2, 2, 1});
}

// §3.5's Theorem 4, finite part for every n at once: n = 2, 3, 4 and n >= 5 (type model with n = 5).
TEST_CASE("depth 3, equal cardinalities: the finite part for every n, on types") {
  for (int leaf = 0; leaf < 2; ++leaf)
    for (int n = 2; n <= 5; ++n) {
      std::vector<int> cards{1, n, n, n}, small{1, 2, 2, 2};
      if (leaf) {
        cards.push_back(1);
        small.push_back(1);
      }
      const Finite f = bisimilar_to_smallest(cards, small);
      CHECK(f.states == (leaf ? 2787u : 842u));
      CHECK(f.p4 == (leaf ? 248u : 55u));
      CHECK(f.labelled == (leaf ? 2240u : 693u));
    }
}

// (P2V_DEPTH4_N=4,5 restricts n, to split the run over processes.)
std::vector<int> depth4_ns() {
  std::vector<int> ns;
  const char* e = std::getenv("P2V_DEPTH4_N");
  for (const char* p = e ? e : "2,3,4,5"; *p; ++p)
    if (*p >= '2' && *p <= '5') ns.push_back(*p - '0');
  return ns;
}
TEST_CASE("depth 4, equal cardinalities: the finite part for every n, on types (on request)" * doctest::skip()) {
  for (int n : depth4_ns()) bisimilar_to_smallest({1, n, n, n, n}, {1, 2, 2, 2, 2});
}

TEST_CASE("depth 4, equal cardinalities, trivial leaf: the finite part for every n, on types (on request)" *
          doctest::skip()) {
  for (int n : depth4_ns()) bisimilar_to_smallest({1, n, n, n, n, 1}, {1, 2, 2, 2, 2, 1});
}

// Levels of cardinality 1 other than the leaf change no grouping (§3.2, "two forms"): on each form of
// depth 4 with trivial levels elsewhere the instructions' (collective, V, Master) triples are distinct
// and the same set as on [n n n n] (inner trivial levels) or [n n n n 1] (a trivial leaf too), so M4's
// graph there is the same graph with the instructions renamed.
TEST_CASE("depth 4, equal cardinalities: the trivial-level forms have the groupings of [n n n n] or [n n n n 1]") {
  auto triples = [](const InstD& I) { return shape_test::instruction_triples(I); };
  for (int n = 2; n <= 3; ++n) {
    const auto plain = triples(make_inst({1, n, n, n, n})), leaf = triples(make_inst({1, n, n, n, n, 1}));
    CHECK(plain != leaf);
    for (int at = 1; at <= 4; ++at) {  // one trivial level before the at-th non-trivial one
      std::vector<int> cards{1, n, n, n, n};
      cards.insert(cards.begin() + at, 1);
      CHECK(triples(make_inst(cards)) == plain);
      cards.push_back(1);
      CHECK(triples(make_inst(cards)) == leaf);
    }
    CHECK(triples(make_inst({1, n, n, n, n, 1, 1})) == leaf);
  }
}

// Review (docs/shape.md §3.5, "Device numbering"): the instances of Theorem 4 number their devices in
// mixed radix over the levels in level order, but an uncollapsed (d) hierarchy numbers them in the system's
// order (level-major, axis-minor; engine/src/hierarchy.cpp), which can put the levels in another order of
// significance `sig` (sig[0] most significant). Groups, roots and the Master group do not depend on it;
// ReduceScatter's member index does: member x gets block idx(x_V) with V's digits in sig order. M3 for such
// an instance (M3^sig) is M3 with `need` putting V's levels in sig order instead of level order; renaming
// level sig[i] to i turns it into M3 with the instructions' level sets renamed (every other rule of M3 is
// symmetric in the levels, and with no label any base order is sound, every level being unconstrained).
// So the type model with renamed level sets is M3^sig's graph for every n (Lemma T). Asserted for every
// order of the three levels, both forms, n = 2, 3, 4 and n >= 5 (n = 5): it never aborts from a state
// without P4, and its product with M3 on the smallest instance *in level order* (the shape's smallest
// instance) has the same valid instructions, P4 and goal on every pair.
TEST_CASE("depth 3, equal cardinalities: devices numbered in any order of the levels (uncollapsed (d)), on types") {
  for (int leaf = 0; leaf < 2; ++leaf) {
    std::vector<int> small{1, 2, 2, 2};
    if (leaf) small.push_back(1);
    const InstD I2 = make_inst(small);
    const TypeModel T2(I2.d, I2.n, I2.tins);
    const TGraph G2 = shape_types::explore(T2);
    REQUIRE(G2.aborts == 0);
    REQUIRE(G2.goal >= 0);
    int runs = 0;
    for (int n = 2; n <= 5; ++n) {
      std::vector<int> cards{1, n, n, n};
      if (leaf) cards.push_back(1);
      const InstD I = make_inst(cards);
      shape_test::require_same_instructions(I, I2);
      std::vector<int> sig{0, 1, 2};
      while (std::next_permutation(sig.begin(), sig.end())) {  // the level order itself: the CI test above
        std::vector<int> pos(3);
        for (int i = 0; i < 3; ++i) pos[sig[i]] = i;
        std::vector<shape_types::Ins> renamed;
        for (const auto& in : I.tins) {
          unsigned v = 0;
          for (int l = 0; l < 3; ++l)
            if ((in.V >> l) & 1u) v |= 1u << pos[l];
          renamed.push_back({in.col, v, in.master});
        }
        const TypeModel T(I.d, I.n, renamed);
        const TGraph G = shape_types::explore(T);
        const std::string where = fmt::format("{} sig {}", cards, sig);
        CAPTURE(where);
        CHECK(G.aborts == 0);
        REQUIRE(G.goal >= 0);
        const auto walk =
            shape_test::product_walk(G, G2, I.ins.size(), [&](int x, int y) { return G.p4[x] != G2.p4[y]; });
        CHECK(walk.mismatches == 0);
        ++runs;
      }
    }
    CHECK(runs == 20);
  }
}

// Review, the implementation check of M3^sig (above) against the engine on real uncollapsed (d) hierarchies
// (engine::make_hierarchy, devices in system order) whose significance order is not the level order: the
// type model with the level sets renamed by sig, expanded and read through its label, is the engine's state
// on every state it reaches, with the same steps and no abort; M3 without the renaming is not (the numbering
// changes ReduceScatter's blocks, so the unrenamed model misreads the states).
void sig_is_engine(int n) {
  const std::vector<std::string> names{"p", "q", "r"};
  struct Case {
    std::vector<int> axes;
    ParallelismMatrix x;
  };
  for (const Case& c : std::vector<Case>{{{n * n, n}, {{1, n, n}, {n, 1, 1}}},  // levels q.0 r.0 p.1: sig (2, 0, 1)
                                         {{n, n, n}, {{1, 1, n}, {1, n, 1}, {n, 1, 1}}}}) {  // reversed
    std::vector<int> reduce(c.x.size());
    for (std::size_t i = 0; i < reduce.size(); ++i) reduce[i] = static_cast<int>(i);
    const Placement pl({n, n, n}, c.axes, c.x, reduce);
    const SynthesisHierarchy h = make_hierarchy(pl, names, HierarchyKind::ReductionUncollapsed);
    // The significance order of the non-trivial levels in the engine's local (system) numbering.
    std::vector<int> lv;
    for (int l = 0; l < h.num_levels(); ++l)
      if (h.cards[l] >= 2) lv.push_back(l);
    REQUIRE(lv.size() == 3);
    std::vector<int> sig{0, 1, 2}, found;
    do {
      bool ok = true;
      for (int d = 0; d < h.num_local() && ok; ++d) {
        int num = 0;
        for (int i : sig) num = num * n + h.coords[d][lv[i]];
        ok = num == d;
      }
      if (ok) found = sig;
    } while (std::next_permutation(sig.begin(), sig.end()));
    const std::string where =
        fmt::format("{} on [{} {} {}]: (d) {}, sig {}", format_matrix(c.x), n, n, n, h.cards, found);
    CAPTURE(where);
    REQUIRE(found.size() == 3);
    CHECK(found != std::vector<int>{0, 1, 2});
    const EngineCheck renamed = types_vs_engine(make_inst(h, found));
    CHECK(renamed.mismatches == 0);
    CHECK(renamed.aborts == 0);
    const EngineCheck plain = types_vs_engine(make_inst(h, {}, false));
    CHECK(plain.mismatches > 0);
  }
}
TEST_CASE(
    "depth 3, equal cardinalities: M3^sig is the engine's semantics on uncollapsed (d) numbered out of level order") {
  sig_is_engine(2);
}
// On request (-tc="*M3^sig*n = 3*" --no-skip; about 40 s).
TEST_CASE("depth 3, equal cardinalities: M3^sig is the engine's semantics, n = 3 (on request)" * doctest::skip()) {
  sig_is_engine(3);
}

// Review (docs/shape.md §3.6, Lemma T(iv)): the type computation depends on n only through which partitions
// of at most 5 items are realizable and through class sizes compared with 1 and n, so for n >= 5 it is the
// same computation. Asserted on the program that does it: at depth 3, both forms, the type model with n = 6
// and n = 7 computes exactly n = 5's graph (the same states as type sets, labels, P4 flags, successors and
// aborts, in the same order).
TEST_CASE("depth 3, equal cardinalities: the type model computes one graph for every n >= 5 (Lemma T(iv))") {
  for (int leaf = 0; leaf < 2; ++leaf) {
    auto graph = [&](int n) {
      std::vector<int> cards{1, n, n, n};
      if (leaf) cards.push_back(1);
      const InstD I = make_inst(cards);
      return shape_types::explore(TypeModel(I.d, I.n, I.tins));
    };
    const TGraph G5 = graph(5);
    for (int n = 6; n <= 7; ++n) {
      CAPTURE(n);
      const TGraph G = graph(n);
      CHECK(G.states == G5.states);
      CHECK(G.succ == G5.succ);
      CHECK(G.p4 == G5.p4);
      CHECK(G.aborts == G5.aborts);
      CHECK(G.goal == G5.goal);
    }
    CHECK(G5.states.size() == (leaf ? 2787u : 842u));
  }
}

// docs/shape.md §3.6 "Device numbering at depth 4": what the 22 orders other than the level order and its
// reverse still need, M4^sig's finite part (on request; not yet run to the end for any order). For each order
// sig (P2V_NUMBERING_SIGS=1023,0213; default the 22), form (P2V_NUMBERING_FORMS=0 / 1) and n (P2V_DEPTH4_N): the
// type model with the level sets renamed (M4^sig, as at depth 3 above) never aborts from a state without P4, and
// its goal-reaching sequences are those of M4 on the smallest instance in level order (the product of the two
// graphs has no pair whose liveness differs and no step valid on one side only into a live state; the strict
// walk's count — P4 or validity differing anywhere — is printed too).
namespace {
std::vector<char> live_states(const TGraph& G) {
  std::vector<char> live(G.states.size(), 0);
  if (G.goal >= 0) live[static_cast<std::size_t>(G.goal)] = 1;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < G.states.size(); ++i)
      if (!live[i])
        for (int j : G.succ[i])
          if (j >= 0 && live[static_cast<std::size_t>(j)]) {
            live[i] = 1;
            changed = true;
            break;
          }
  }
  return live;
}
}  // namespace

TEST_CASE("depth 4, equal cardinalities: devices numbered in another order, M4^sig's finite part (on request)" *
          doctest::skip()) {
  std::vector<std::vector<int>> sigs;
  if (const char* e = std::getenv("P2V_NUMBERING_SIGS")) {
    std::vector<int> s;
    for (const char* p = e;; ++p) {
      if (*p >= '0' && *p <= '3') s.push_back(*p - '0');
      if (*p == ',' || *p == 0) {
        if (s.size() == 4) sigs.push_back(s);
        s.clear();
      }
      if (*p == 0) break;
    }
  } else {
    std::vector<int> sig{0, 1, 2, 3};
    while (std::next_permutation(sig.begin(), sig.end()))
      if (sig != std::vector<int>{3, 2, 1, 0}) sigs.push_back(sig);
  }
  std::vector<int> forms{0, 1};
  if (const char* e = std::getenv("P2V_NUMBERING_FORMS")) forms = {*e == '1' ? 1 : 0};
  for (int leaf : forms) {
    std::vector<int> small{1, 2, 2, 2, 2};
    if (leaf) small.push_back(1);
    const InstD I2 = make_inst(small);
    const TypeModel T2(I2.d, I2.n, I2.tins);
    const TGraph G2 = shape_types::explore(T2, true, true);
    const std::vector<char> live2 = live_states(G2);
    REQUIRE(G2.goal >= 0);
    for (int n : depth4_ns()) {
      std::vector<int> cards(5, n);
      cards[0] = 1;
      if (leaf) cards.push_back(1);
      const InstD I = make_inst(cards);
      shape_test::require_same_instructions(I, I2);
      for (const auto& sig : sigs) {
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<int> pos(4);
        for (int i = 0; i < 4; ++i) pos[static_cast<std::size_t>(sig[static_cast<std::size_t>(i)])] = i;
        std::vector<shape_types::Ins> renamed;
        for (const auto& in : I.tins) {
          unsigned v = 0;
          for (int l = 0; l < 4; ++l)
            if ((in.V >> l) & 1u) v |= 1u << pos[static_cast<std::size_t>(l)];
          renamed.push_back({in.col, v, in.master});
        }
        const TypeModel T(I.d, I.n, renamed);
        const TGraph G = shape_types::explore(T, true, true);
        const std::string where = fmt::format("{} sig {}", cards, sig);
        CAPTURE(where);
        CHECK(G.aborts_without_p4 == 0);
        REQUIRE(G.goal >= 0);
        const std::vector<char> live = live_states(G);
        const auto strict =
            shape_test::product_walk(G, G2, I.ins.size(), [&](int x, int y) { return G.p4[x] != G2.p4[y]; });
        int program_mismatches = 0;
        {
          std::vector<std::pair<int, int>> queue{{0, 0}};
          std::map<std::pair<int, int>, int> seen{{{0, 0}, 0}};
          for (std::size_t q = 0; q < queue.size(); ++q) {
            const auto [x, y] = queue[q];
            program_mismatches += live[static_cast<std::size_t>(x)] != live2[static_cast<std::size_t>(y)];
            for (std::size_t t = 0; t < I.ins.size(); ++t) {
              const int nx = G.succ[static_cast<std::size_t>(x)][t], ny = G2.succ[static_cast<std::size_t>(y)][t];
              if ((nx >= 0) != (ny >= 0) &&
                  ((nx >= 0 && live[static_cast<std::size_t>(nx)]) || (ny >= 0 && live2[static_cast<std::size_t>(ny)])))
                ++program_mismatches;
              if (nx >= 0 && ny >= 0 && seen.emplace(std::pair{nx, ny}, static_cast<int>(queue.size())).second)
                queue.emplace_back(nx, ny);
            }
          }
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        MESSAGE(
            fmt::format("{}: M4^sig {} states ({} with P4), {} aborts without P4; strict walk {} pairs, {} "
                        "mismatches; {} program mismatches; {:.0f} s",
                        where, G.states.size(), G.with_p4(), G.aborts_without_p4, strict.pairs, strict.mismatches,
                        program_mismatches, s));
        CHECK(program_mismatches == 0);
      }
    }
  }
}
