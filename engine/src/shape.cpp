#include "p2v/engine/shape.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <numeric>

#include "p2v/engine/error.hpp"
#include "p2v/engine/state.hpp"

namespace p2v::engine {

std::vector<std::string> Shape::names() const {
  std::vector<std::string> v;
  for (const auto& l : levels) v.push_back(l.name);
  return v;
}

std::vector<std::int64_t> Shape::cards() const {
  std::vector<std::int64_t> v;
  for (const auto& l : levels) v.push_back(l.card);
  return v;
}

std::vector<int> Shape::canonical_cards() const {
  std::vector<int> v;
  for (const auto& l : levels) v.push_back(l.card == 1 ? 1 : 2);
  return v;
}

std::int64_t Shape::num_devices() const {
  std::int64_t n = 1;
  for (int c : system_cards) n *= c;
  return n;
}

std::int64_t Shape::group_size() const {
  std::int64_t k = 1;
  for (const auto& l : levels) k *= l.card;
  return k;
}

std::int64_t Shape::num_reduction_groups() const { return num_devices() / group_size(); }

std::string Shape::signature() const {
  std::string s = to_string(kind);
  s += ':';
  for (const auto& l : levels) s += fmt::format(" {}:{}", l.name, l.card == 1 ? "1" : "*");
  return s;
}

Shape make_shape(const std::vector<int>& system_cards, const std::vector<std::string>& system_names,
                 const ParallelismMatrix& x, const std::vector<int>& reduce, HierarchyKind kind) {
  if (!is_reduction_kind(kind))
    throw Error(fmt::format("shapes are defined for hierarchy (d) only, not ({}): (a)-(c) cover every device",
                            to_string(kind)));
  Shape s;
  s.kind = kind;
  s.system_cards = system_cards;
  s.system_names = system_names;
  s.x = x;
  s.reduce = reduce;
  for (auto& hl : hierarchy_levels(x, reduce, system_names, kind)) {
    ShapeLevel l{std::move(hl.name), 1, std::move(hl.parts)};
    for (auto [i, j] : l.parts) l.card *= x[i][j];
    s.levels.push_back(std::move(l));
  }
  if (s.levels.empty() || s.levels[0].card != 1) s.levels.insert(s.levels.begin(), ShapeLevel{"root", 1, {}});
  return s;
}

SynthesisHierarchy canonical_hierarchy(const Shape& s) {
  const auto canon = s.canonical_cards();
  const auto wide = std::count(canon.begin(), canon.end(), 2);
  if (wide > kMaxShapeLevels)
    throw Error(fmt::format(
        "the (d) hierarchy [{}] has {} levels of cardinality >= 2; shape synthesis handles at most {} (its smallest "
        "instance has 2^{} devices); reduce over fewer axes or merge levels of the system",
        fmt::join(s.names(), " "), wide, kMaxShapeLevels, wide));
  return make_plain_hierarchy(canon, s.names());
}

ShapeInstance smallest_instance(const Shape& s) {
  ShapeInstance in;
  in.system.name = "smallest instance of " + s.signature();
  const auto canon = s.canonical_cards();
  int k = 1;
  for (std::size_t l = 0; l < canon.size(); ++l) {
    in.system.levels.push_back(Level{s.levels[l].name, canon[l], std::nullopt});
    k *= canon[l];
  }
  in.axes = {k};
  in.x = {canon};
  in.reduce = {0};
  return in;
}

SynthResult synthesize_shape(const Shape& s, const SynthOptions& opt) {
  SynthesisHierarchy h = canonical_hierarchy(s);
  std::vector<int> all(h.num_local());
  std::iota(all.begin(), all.end(), 0);
  return synthesize(h, {all}, opt);
}

namespace {

// docs/shape.md §3.3, "Programs that stay in G'_1": true iff every state of `prog` on hierarchy h (the
// shape's smallest instance) is row-uniform, has the agreement form (S), (U), (P), (M), (C) of §3.2 and
// holds Lemma 1's rows F(x_D) for the level set D tracked along the program (D := D u V after a
// ReduceScatter over V, D \ V after an AllGather), no Broadcast gives rows to an empty member that is
// non-zero on a level of D n V, and the program reaches the goal.
static_assert(kMaxG1ReplayDevices <= 64, "stays_in_g1 keeps rows and column sets in 64-bit masks");
bool stays_in_g1(const SynthesisHierarchy& h, const std::vector<Instruction>& ins, const Program& prog) {
  const int k = h.num_local(), n = h.num_levels();
  auto device_of = [&](const std::vector<int>& c) {
    int d = 0;
    for (int l = 0; l < n; ++l) d = d * h.cards[l] + c[l];
    return d;
  };
  auto cap = [&](std::vector<int> c) {  // the class representative: coordinates capped at 1
    for (auto& v : c) v = std::min(v, 1);
    return c;
  };
  // Row-uniform, agreement form, and rows F(x_D) of size k / 2^|D|, equal iff agreeing on D, else
  // disjoint. Rows and column sets as masks (k <= kMaxG1ReplayDevices <= 64).
  auto in_g1 = [&](const StateSet& st, unsigned D) {
    std::vector<std::uint64_t> rows(k, 0), cols(k, 0);
    for (int x = 0; x < k; ++x) {
      const auto rs = st.rows(x);
      if (rs.empty()) continue;
      for (int r : rs) rows[x] |= std::uint64_t{1} << r;
      for (int j : st.columns(x, rs[0])) cols[x] |= std::uint64_t{1} << j;
      for (int r : rs)
        for (int j = 0; j < k; ++j)
          if (st.get(x, r, j) != (((cols[x] >> j) & 1) != 0)) return false;  // not row-uniform
    }
    auto has = [](std::uint64_t m, int j) { return ((m >> j) & 1) != 0; };
    long size = k;
    for (int l = 0; l < n; ++l)
      if ((D >> l) & 1) size /= h.cards[l];
    for (int x = 0; x < k; ++x) {
      const auto& cx = h.coords[x];
      const int phi = device_of(cap(cx));
      if ((rows[x] == 0) != (rows[phi] == 0)) return false;  // (C), presence
      if (rows[x] == 0) continue;
      if (std::popcount(rows[x]) != size) return false;
      for (int y = 0; y < k; ++y) {
        if (rows[y] == 0) continue;
        bool agree = true;
        for (int l = 0; l < n; ++l) agree = agree && (!((D >> l) & 1) || h.coords[y][l] == cx[l]);
        if (agree ? rows[x] != rows[y] : (rows[x] & rows[y]) != 0) return false;  // Lemma 1's rows
      }
      // (S): membership of column j depends only on agree(x, j); B[p] is that value for pattern p.
      std::vector<int> B(std::size_t{1} << n, -1);
      for (int j = 0; j < k; ++j) {
        unsigned p = 0;
        for (int l = 0; l < n; ++l) p |= static_cast<unsigned>(h.coords[j][l] == cx[l]) << l;
        if (B[p] >= 0 && B[p] != static_cast<int>(has(cols[x], j))) return false;
        B[p] = has(cols[x], j);
      }
      for (unsigned p = 0; p < B.size(); ++p)  // (U)
        for (int l = 0; l < n; ++l)
          if (B[p] == 1 && !((p >> l) & 1) && B[p | (1u << l)] == 0) return false;
      // (C): phi(x) has the same column set up to agreement.
      const auto cphi = cap(cx);
      for (int j = 0; j < k; ++j) {
        auto cj = cphi;
        for (int l = 0; l < n; ++l) cj[l] = h.coords[j][l] == cx[l] ? cphi[l] : 1 - cphi[l];
        if (has(cols[x], j) != has(cols[phi], device_of(cj))) return false;
      }
      for (int l = 0; l < n; ++l) {  // (P) and (M)
        if (cx[l] == 0) continue;
        auto cy = cx;
        cy[l] = 0;
        const int y = device_of(cy);
        if (rows[y] == 0) return false;
        for (int j = 0; j < k; ++j) {
          if (!has(cols[x], j)) continue;
          auto cj = h.coords[j];
          cj[l] = cj[l] == cx[l] ? 0 : 1;
          if (!has(cols[y], device_of(cj))) return false;
        }
      }
    }
    return true;
  };
  StateSet st = StateSet::initial(k);
  unsigned D = 0;
  if (!in_g1(st, D)) return false;
  for (int i : prog) {
    const auto& in = ins[i];
    unsigned V = 0;  // the levels the groups vary
    for (const auto& g : in.grouping.groups)
      for (int x : g)
        for (int l = 0; l < n; ++l)
          if (h.coords[x][l] != h.coords[g[0]][l]) V |= 1u << l;
    if (in.collective == Collective::Broadcast)
      for (const auto& g : in.grouping.groups)
        for (int x : g)
          if (st.rows(x).empty())
            for (int l = 0; l < n; ++l)
              if (((D & V) >> l & 1) && h.coords[x][l] != 0) return false;
    StateSet next;
    if (!st.apply(in.collective, in.grouping.groups, next)) return false;
    st = std::move(next);
    if (in.collective == Collective::ReduceScatter) D |= V;
    if (in.collective == Collective::AllGather) D &= ~V;
    if (!in_g1(st, D)) return false;
  }
  Groups all(1);
  for (int x = 0; x < k; ++x) all[0].push_back(x);
  return st == StateSet::goal(k, all);
}

}  // namespace

ShapeBasis shape_theorem_basis(const Shape& s, const SynthResult& r, const Program& prog, MasterCollectives mc) {
  int depth = 0;
  for (const auto& l : s.levels) depth += l.card >= 2;
  auto is_master = [&](int in) { return r.instructions[in].grouping.form == FormKind::Master; };
  const bool master_step = std::any_of(prog.begin(), prog.end(), is_master);
  // docs/shape.md §3.3: a program whose Master steps are all AllReduce is a program of the default
  // setting (validity does not depend on the setting), so the default setting's proof covers it.
  const bool master_allreduce_only = std::all_of(prog.begin(), prog.end(), [&](int in) {
    return !is_master(in) || r.instructions[in].collective == Collective::AllReduce;
  });
  bool master_grouping = false;
  for (std::size_t in = 0; in < r.instructions.size(); ++in) master_grouping |= is_master(static_cast<int>(in));
  ShapeBasis b;
  const bool default_setting = mc == MasterCollectives::AllReduceOnly;
  const bool as_default = default_setting || master_allreduce_only;
  // docs/shape.md §3.3: with `all`, a program whose every state on the smallest instance stays in G'_1
  // is a program of every instance (Lemmas 3' and 2(b)'), at any depth; replayed up to kMaxG1ReplayDevices devices.
  // docs/shape.md §3.4: with `all`, both directions are proved for every shape of depth <= 2.
  // docs/shape.md §3.5 and §3.6: and, for the instances (not the shapes) of depth 3 or 4 whose cardinalities >= 2 are
  // all equal, for those instances.
  std::vector<std::int64_t> nontrivial;
  for (const auto& l : s.levels)
    if (l.card >= 2) nontrivial.push_back(l.card);
  // Theorem 4 (§3.5 at depth 3, §3.6 at depth 4) is about the instances whose cardinalities >= 2 are equal, not
  // about the shape: a shape of depth 3 also has unequal instances ([4 4 5]), where it stays checked. So the
  // shape-wide claims below ignore it (`all_proved`: depth <= 2 only), and `equal3` adds the claims
  // for this instance (and every other equal one), which are what decide the exact fallback.
  // §3.6: at depth 4 the finite part is computed for both forms, [n n n n] and [n n n n 1], every n; the forms
  // whose trivial levels are inner have the groupings of one of them.
  // §3.5 "Device numbering": the system numbers devices level-major, axis-minor; an uncollapsed (d) hierarchy's
  // levels are axis-major, so its devices can be numbered in another order of its levels. Theorem 4 covers every
  // order at depth 3 (M3^sigma); at depth 4 the level order and its reverse (§3.6 "Device numbering at depth 4":
  // renaming the levels maps the reverse onto the level order with instructions of [n n n n 1], and the two
  // smallest instances have the same programs), not the other 22 orders (M4^sigma is not computed).
  bool level_order = true, reverse_order = s.kind == HierarchyKind::ReductionUncollapsed;
  if (s.kind == HierarchyKind::ReductionUncollapsed) {
    std::pair<int, int> prev{-1, -1};  // (system level, axis) of the previous non-trivial level; none yet: -1
    for (const auto& l : s.levels) {
      if (l.card < 2) continue;
      const std::pair<int, int> at{l.parts.front().second, l.parts.front().first};
      level_order = level_order && prev < at;
      reverse_order = reverse_order && (prev.first < 0 || at < prev);
      prev = at;
    }
  }
  reverse_order = reverse_order && !level_order;
  const bool equal3 = !default_setting && depth > kMaxProvedAllDepth && depth <= kMaxProvedAllEqualDepth &&
                      (depth == 3 || level_order || reverse_order) &&
                      std::all_of(nontrivial.begin(), nontrivial.end(), [&](auto c) { return c == nontrivial[0]; });
  const bool all_proved = !default_setting && depth <= kMaxProvedAllDepth;
  const bool stays_g1 = !as_default && !all_proved && master_step && r.hierarchy.num_local() <= kMaxG1ReplayDevices &&
                        stays_in_g1(r.hierarchy, r.instructions, prog);
  const bool valid_shape = !master_step || (as_default && depth <= kMaxProvedMasterDepth) || stays_g1 || all_proved;
  const bool complete_shape = !master_grouping || (default_setting && depth <= kMaxProvedCompleteDepth) || all_proved;
  b.valid_everywhere_proved = valid_shape || equal3;
  b.complete_proved = complete_shape || equal3;
  // One claim's basis: proved without Master steps/groupings; else proved in the default setting (or,
  // for one program, with only Master AllReduce steps) up to a depth by section 3.2's `proof`; else
  // checked, not proved.
  // `by_default`: the claim is covered by the default setting's proof (the setting is the default, or
  // the program's Master steps are all AllReduce).
  auto basis = [&](const char* claim, bool master, bool proved, const char* no_master, const std::string& proof,
                   const char* unproved, int max_depth, bool by_default) {
    if (!master) return fmt::format("{}: proved ({})", claim, no_master);
    if (proved && default_setting)
      return fmt::format("{}: proved (section 3.2, {}; default Master setting, depth {} <= {})", claim, proof, depth,
                         max_depth);
    if (proved)
      return fmt::format(
          "{}: proved (section 3.3: its Master steps are all AllReduce, so it is a program of the "
          "default setting; section 3.2, {}, depth {} <= {})",
          claim, proof, depth, max_depth);
    return fmt::format("{}: {} ({})", claim, unproved,
                       by_default ? fmt::format("depth {} > {}", depth, max_depth) : "--master-collectives all");
  };
  const std::string all_text =
      fmt::format("proved (section 3.4: --master-collectives all at depth <= {}, the tuple model M; depth {})",
                  kMaxProvedAllDepth, depth);
  // At depth 3 the proof's finite part runs in CI for every cardinality (§3.6, on types); at depth 4 on request.
  const std::string equal_text =
      !equal3 ? std::string()
      : depth == 3
          ? fmt::format(
                "proved (section 3.5, Theorem 4: --master-collectives all at depth 3 on the instances whose three "
                "cardinalities >= 2 are equal, the tuple model M3, its finite part for every cardinality on types, "
                "section 3.6; this instance: {})",
                fmt::join(nontrivial, " "))
          : fmt::format(
                "proved (section 3.6, Theorem 4 at depth 4: --master-collectives all on the instances whose four "
                "cardinalities >= 2 are equal, the tuple model M4; this instance: {}{}; its finite part runs on "
                "request, not in CI)",
                fmt::join(nontrivial, " "),
                reverse_order ? ", devices numbered in reverse level order (Device numbering at depth 4)" : "");
  const std::string valid_all =
      all_proved && master_step ? "valid on every instance of the shape: " + all_text
      : stays_g1 ? "valid on every instance of the shape: proved (section 3.3, Lemmas 3' and 2(b)': every state of "
                   "this program on the smallest instance is in G' with Lemma 1's rows)"
                 : basis("valid on every instance of the shape", master_step, valid_shape,
                         "Theorem 1(b) without Master steps, section 3",
                         "programs of the smallest instance are programs of every instance",
                         "checked, not proved, section 3.2", kMaxProvedMasterDepth, as_default);
  const std::string valid =
      equal3 && !valid_shape ? "valid on this instance: " + equal_text + "; " + valid_all : valid_all;
  const std::string complete_all =
      all_proved && master_grouping
          ? "no other program on any instance: " + all_text
          : basis("no other program on any instance", master_grouping, complete_shape, "no Master grouping, section 3",
                  "Lemma 2(a) on every instance of depth <= " + std::to_string(kMaxProvedCompleteDepth),
                  default_setting ? "rests on section 3.2's Lemma 2(a), checked, not proved"
                                  : "checked, not proved, section 3.3",
                  kMaxProvedCompleteDepth, default_setting);
  const std::string complete = equal3 && !complete_shape
                                   ? "no other program on this instance: " + equal_text + "; " + complete_all
                                   : complete_all;
  b.text = "docs/shape.md: " + valid + "; " + complete;
  return b;
}

namespace {

// Place value of digit (axis i, level j) in the system device number (docs/model.md §1-§2).
std::int64_t weight(const Shape& s, int i, int j) {
  std::int64_t w = 1;
  for (std::size_t jj = j + 1; jj < s.system_cards.size(); ++jj) w *= s.system_cards[jj];
  for (std::size_t ii = i + 1; ii < s.x.size(); ++ii) w *= s.x[ii][j];
  return w;
}

int digit_of(const Shape& s, std::int64_t device, int i, int j) {
  const std::int64_t local = (device / weight(s, i, j));
  return static_cast<int>(local % s.x[i][j]);
}

}  // namespace

GroupPattern group_pattern(const Shape& s, int slice, FormKind form, int e) {
  const int n = s.num_levels() - 1;
  if (slice < 0 || slice >= n || (form != FormKind::Inside && (e < 0 || e >= slice)))
    throw Error(fmt::format("group_pattern: slice {} / ancestor {} out of range for {} levels", slice, e, n + 1));
  const int lo = form == FormKind::Inside ? slice + 1 : e + 1;
  const int hi = form == FormKind::Inside ? n : slice;
  GroupPattern g;
  g.master = form == FormKind::Master;
  for (int l = lo; l <= hi; ++l)
    for (auto [i, j] : s.levels[l].parts)
      if (s.x[i][j] > 1) g.vary.push_back({i, j, s.x[i][j]});
  std::sort(g.vary.begin(), g.vary.end(),
            [](const Digit& a, const Digit& b) { return a.level != b.level ? a.level < b.level : a.axis < b.axis; });
  for (const auto& d : g.vary) g.group_size *= d.factor;
  g.num_groups = g.master ? s.num_reduction_groups() : s.num_devices() / g.group_size;
  return g;
}

std::string describe(const GroupPattern& g, const Shape& s) {
  std::string v;
  for (const auto& d : g.vary) {
    if (!v.empty()) v += ", ";
    v += fmt::format("{}.{} x{}", s.system_names[d.level], d.axis, d.factor);
  }
  if (g.master) return fmt::format("{}: 1 group of {} per reduction group ({} groups)", v, g.group_size, g.num_groups);
  return fmt::format("{}: {} groups of {}", v, g.num_groups, g.group_size);
}

std::pair<std::int64_t, int> group_of(const GroupPattern& g, const Shape& s, std::int64_t device) {
  if (g.master) {
    for (int i : s.reduce)
      for (std::size_t j = 0; j < s.system_cards.size(); ++j) {
        if (s.x[i][j] == 1) continue;
        const bool varies = std::any_of(g.vary.begin(), g.vary.end(),
                                        [&](const Digit& d) { return d.axis == i && d.level == static_cast<int>(j); });
        if (!varies && digit_of(s, device, i, static_cast<int>(j)) != 0) return {-1, -1};
      }
  }
  std::int64_t color = device;
  int key = 0;
  for (const auto& d : g.vary) {
    const int v = digit_of(s, device, d.axis, d.level);
    color -= v * weight(s, d.axis, d.level);
    key = key * d.factor + v;
  }
  return {color, key};
}

std::int64_t member_of(const GroupPattern& g, const Shape& s, std::int64_t group, std::int64_t position) {
  std::int64_t d = group;
  for (auto it = g.vary.rbegin(); it != g.vary.rend(); ++it) {
    d += (position % it->factor) * weight(s, it->axis, it->level);
    position /= it->factor;
  }
  return d;
}

Groups lower_pattern(const GroupPattern& g, const Shape& s) {
  const std::int64_t n = s.num_devices();
  if (n > kMaxLoweredDevices)
    throw Error(
        fmt::format("explicit device lists are limited to {} devices and this system has {}; use the level "
                    "patterns (the default output) instead of --lowered, or a smaller system",
                    kMaxLoweredDevices, n));
  std::vector<std::pair<std::int64_t, int>> members;  // (group id, device)
  for (std::int64_t d = 0; d < n; ++d) {
    const auto [color, key] = group_of(g, s, d);
    if (color >= 0) members.push_back({color, static_cast<int>(d)});
  }
  std::sort(members.begin(), members.end());
  Groups out;
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i == 0 || members[i].first != members[i - 1].first) out.emplace_back();
    out.back().push_back(members[i].second);
  }
  return out;
}

std::vector<GroupPattern> program_patterns(const Shape& s, const SynthResult& r, const Program& prog) {
  std::vector<GroupPattern> v;
  for (int i : prog) {
    const auto& gr = r.instructions[i].grouping;
    v.push_back(group_pattern(s, gr.slice, gr.form, gr.e));
  }
  return v;
}

LoweredProgram lower_shape_program(const Shape& s, const SynthResult& r, const Program& prog) {
  LoweredProgram lp;
  const auto pats = program_patterns(s, r, prog);
  for (std::size_t k = 0; k < prog.size(); ++k)
    lp.push_back({r.instructions[prog[k]].collective, lower_pattern(pats[k], s)});
  return lp;
}

}  // namespace p2v::engine
