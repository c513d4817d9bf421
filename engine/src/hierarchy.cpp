#include "p2v/engine/hierarchy.hpp"

#include <fmt/core.h>

#include <numeric>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

const char* to_string(HierarchyKind k) {
  switch (k) {
    case HierarchyKind::System:
      return "a";
    case HierarchyKind::ColumnBased:
      return "b";
    case HierarchyKind::RowBased:
      return "c";
    case HierarchyKind::ReductionAxes:
      return "d";
    case HierarchyKind::ReductionUncollapsed:
      return "d-uncollapsed";
  }
  return "?";
}

HierarchyKind parse_hierarchy_kind(const std::string& s) {
  if (s == "a" || s == "system") return HierarchyKind::System;
  if (s == "b" || s == "column") return HierarchyKind::ColumnBased;
  if (s == "c" || s == "row") return HierarchyKind::RowBased;
  if (s == "d" || s == "reduction") return HierarchyKind::ReductionAxes;
  if (s == "d-uncollapsed" || s == "du") return HierarchyKind::ReductionUncollapsed;
  throw Error(fmt::format("--hierarchy '{}': expected a, b, c, d or d-uncollapsed", s));
}

int SynthesisHierarchy::level_index(const std::string& name) const {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

namespace {

using LevelSpec = HierarchyLevel;

void prepend_root(SynthesisHierarchy& h) {
  if (!h.cards.empty() && h.cards[0] == 1) return;
  h.cards.insert(h.cards.begin(), 1);
  h.names.insert(h.names.begin(), "root");
  for (auto& c : h.coords) c.insert(c.begin(), 0);
}

}  // namespace

std::vector<HierarchyLevel> hierarchy_levels(const ParallelismMatrix& x, const std::vector<int>& reduce,
                                             const std::vector<std::string>& level_names, HierarchyKind kind) {
  const int m = static_cast<int>(x.size());
  const int L = m ? static_cast<int>(x[0].size()) : 0;
  if (static_cast<int>(level_names.size()) != L)
    throw Error(fmt::format("internal: {} level names for {} levels", level_names.size(), L));
  const bool reduction = is_reduction_kind(kind);
  if (reduction && reduce.empty()) throw Error("hierarchy (d) needs reduction axes (--reduce)");
  std::vector<LevelSpec> specs;
  auto part_name = [&](int i, int j) { return fmt::format("{}.{}", level_names[j], i); };
  switch (kind) {
    case HierarchyKind::System:
      for (int j = 0; j < L; ++j) {
        LevelSpec s{level_names[j], {}};
        for (int i = 0; i < m; ++i) s.parts.push_back({i, j});
        specs.push_back(s);
      }
      break;
    case HierarchyKind::ColumnBased:
      for (int j = 0; j < L; ++j)
        for (int i = 0; i < m; ++i) specs.push_back({part_name(i, j), {{i, j}}});
      break;
    case HierarchyKind::RowBased:
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < L; ++j) specs.push_back({part_name(i, j), {{i, j}}});
      break;
    case HierarchyKind::ReductionAxes:
      for (int j = 0; j < L; ++j) {
        LevelSpec s{level_names[j], {}};
        for (int i : reduce) s.parts.push_back({i, j});
        specs.push_back(s);
      }
      break;
    case HierarchyKind::ReductionUncollapsed:
      for (int i : reduce)
        for (int j = 0; j < L; ++j) specs.push_back({part_name(i, j), {{i, j}}});
      break;
  }
  return specs;
}

std::pair<std::vector<int>, std::vector<std::string>> hierarchy_shape(const ParallelismMatrix& x,
                                                                      const std::vector<int>& reduce,
                                                                      const std::vector<std::string>& level_names,
                                                                      HierarchyKind kind) {
  std::pair<std::vector<int>, std::vector<std::string>> out;
  for (const auto& s : hierarchy_levels(x, reduce, level_names, kind)) {
    int card = 1;
    for (auto [i, j] : s.parts) card *= x[i][j];
    out.first.push_back(card);
    out.second.push_back(s.name);
  }
  if (out.first.empty() || out.first[0] != 1) {
    out.first.insert(out.first.begin(), 1);
    out.second.insert(out.second.begin(), "root");
  }
  return out;
}

SynthesisHierarchy make_hierarchy(const Placement& p, const std::vector<std::string>& level_names, HierarchyKind kind) {
  const auto& x = p.matrix();
  const bool reduction = is_reduction_kind(kind);
  const std::vector<LevelSpec> specs = hierarchy_levels(x, p.reduce(), level_names, kind);
  SynthesisHierarchy h;
  h.kind = kind;
  for (const auto& s : specs) {
    int card = 1;
    for (auto [i, j] : s.parts) card *= x[i][j];
    h.cards.push_back(card);
    h.names.push_back(s.name);
  }
  if (reduction) {
    h.to_system = p.reduction_groups();
  } else {
    h.to_system.assign(1, std::vector<int>(p.num_devices()));
    std::iota(h.to_system[0].begin(), h.to_system[0].end(), 0);
  }
  for (int d : h.to_system[0]) {
    std::vector<int> c;
    for (const auto& s : specs) {
      int v = 0;
      for (auto [i, j] : s.parts) v = v * x[i][j] + p.digit(d, i, j);
      c.push_back(v);
    }
    h.coords.push_back(std::move(c));
  }
  prepend_root(h);
  return h;
}

SynthesisHierarchy make_plain_hierarchy(const std::vector<int>& cards, const std::vector<std::string>& names) {
  SynthesisHierarchy h;
  h.kind = HierarchyKind::ReductionAxes;
  h.cards = cards;
  if (names.empty()) {
    for (std::size_t i = 0; i < cards.size(); ++i) h.names.push_back(fmt::format("l{}", i));
  } else {
    if (names.size() != cards.size()) throw Error("make_plain_hierarchy: names and cardinalities differ in length");
    h.names = names;
  }
  long long k = 1;
  for (int c : cards) {
    if (c < 1) throw Error("hierarchy cardinalities must be positive");
    k *= c;
    if (k > (1 << 20)) throw Error("hierarchy too large");
  }
  h.to_system.assign(1, std::vector<int>(k));
  std::iota(h.to_system[0].begin(), h.to_system[0].end(), 0);
  for (long long l = 0; l < k; ++l) {
    std::vector<int> c(cards.size());
    long long rest = l;
    for (std::size_t i = cards.size(); i-- > 0;) {
      c[i] = static_cast<int>(rest % cards[i]);
      rest /= cards[i];
    }
    h.coords.push_back(std::move(c));
  }
  prepend_root(h);
  return h;
}

}  // namespace p2v::engine
