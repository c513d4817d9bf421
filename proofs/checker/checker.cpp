// The independent certificate checker. Readable in one sitting; shares no code with the engine's
// synthesizer or state code, nor with the SMT encodings. Everything it trusts is in this file
// and SPEC.md: device digits (§2), synthesis hierarchies (§3), states and Hoare rules (§4),
// groups of the DSL (§5), lowering (§6).
#include "p2v/checker/checker.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace p2v::checker {
namespace {

using nlohmann::json;
using Group = std::vector<int>;
using Groups = std::vector<Group>;

struct Reject : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] void reject(const std::string& why) { throw Reject(why); }

constexpr long long kMaxDevices = 1 << 16;  // system devices the checker accepts
constexpr int kMaxLocal = 256;              // devices whose states are replayed
constexpr int kMaxSteps = 64;

// ---- small JSON readers that reject anything unexpected ----
const json& field(const json& j, const char* name) {
  if (!j.is_object() || !j.contains(name)) reject(std::string("missing field '") + name + "'");
  return j.at(name);
}
long long as_int(const json& j, long long lo, long long hi, const std::string& what) {
  if (!j.is_number_integer()) reject(what + ": not an integer");
  const long long v = j.get<long long>();
  if (v < lo || v > hi) reject(what + ": " + std::to_string(v) + " out of range");
  return v;
}
std::vector<int> int_list(const json& j, long long lo, long long hi, const std::string& what) {
  if (!j.is_array()) reject(what + ": not an array");
  if (j.size() > static_cast<std::size_t>(kMaxDevices)) reject(what + ": too long");
  std::vector<int> v;
  for (std::size_t i = 0; i < j.size(); ++i)
    v.push_back(static_cast<int>(as_int(j[i], lo, hi, what + "[" + std::to_string(i) + "]")));
  return v;
}
Groups groups_of(const json& j, int n, const std::string& what) {
  if (!j.is_array()) reject(what + ": not an array");
  Groups g;
  for (std::size_t i = 0; i < j.size(); ++i) g.push_back(int_list(j[i], 0, n - 1, what));
  return g;
}
std::string str(const json& j, const std::string& what) {
  if (!j.is_string()) reject(what + ": not a string");
  return j.get<std::string>();
}
std::string show(const Group& g) {
  std::string s = "{";
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(g[i]);
  }
  s += '}';
  return s;
}

// ---- the placement: digits of devices (SPEC §2) ----
struct Placement {
  std::vector<int> levels, axes, reduce;
  std::vector<std::vector<int>> x;  // x[axis][level]
  int devices = 1;
  // digit of device d on axis i at level j
  int digit(int d, int i, int j) const {
    int rest = d, idx = 0;
    for (int l = static_cast<int>(levels.size()) - 1; l >= 0; --l) {
      if (l == j) idx = rest % levels[l];
      rest /= levels[l];
    }
    for (int a = static_cast<int>(axes.size()) - 1; a >= 0; --a) {  // axis 0 most significant
      if (a == i) return idx % x[a][j];
      idx /= x[a][j];
    }
    return 0;
  }
  bool reduced(int axis) const { return std::find(reduce.begin(), reduce.end(), axis) != reduce.end(); }
};

Placement read_placement(const json& c) {
  Placement p;
  p.levels = int_list(field(c, "levels"), 1, kMaxDevices, "levels");
  p.axes = int_list(field(c, "axes"), 1, kMaxDevices, "axes");
  if (p.levels.empty() || p.axes.empty()) reject("levels/axes: empty");
  const json& xm = field(c, "matrix");
  if (!xm.is_array() || xm.size() != p.axes.size()) reject("matrix: one row per axis expected");
  for (std::size_t i = 0; i < xm.size(); ++i) {
    p.x.push_back(int_list(xm[i], 1, kMaxDevices, "matrix row " + std::to_string(i)));
    if (p.x.back().size() != p.levels.size()) reject("matrix: one column per level expected");
  }
  for (std::size_t j = 0; j < p.levels.size(); ++j) {
    long long prod = 1;
    for (std::size_t i = 0; i < p.axes.size(); ++i) prod = std::min<long long>(prod * p.x[i][j], kMaxDevices + 1);
    if (prod != p.levels[j])
      reject("matrix: column " + std::to_string(j) + " does not multiply to the level cardinality");
  }
  for (std::size_t i = 0; i < p.axes.size(); ++i) {
    long long prod = 1;
    for (std::size_t j = 0; j < p.levels.size(); ++j) prod = std::min<long long>(prod * p.x[i][j], kMaxDevices + 1);
    if (prod != p.axes[i]) reject("matrix: row " + std::to_string(i) + " does not multiply to the axis size");
  }
  long long n = 1;
  for (int l : p.levels) {
    n *= l;
    if (n > kMaxDevices) reject("levels: too many devices for the checker");
  }
  p.devices = static_cast<int>(n);
  p.reduce = int_list(field(c, "reduce"), 0, static_cast<long long>(p.axes.size()) - 1, "reduce");
  if (p.reduce.empty() || !std::is_sorted(p.reduce.begin(), p.reduce.end()) ||
      std::adjacent_find(p.reduce.begin(), p.reduce.end()) != p.reduce.end())
    reject("reduce: must be non-empty, ascending, without duplicates");
  // The embedded system (if any) must have these levels.
  if (c.contains("system")) {
    const json& lv = field(field(c, "system"), "levels");
    if (!lv.is_array() || lv.size() != p.levels.size()) reject("system: levels differ from 'levels'");
    for (std::size_t j = 0; j < lv.size(); ++j)
      if (as_int(field(lv[j], "cardinality"), 1, kMaxDevices, "system level") != p.levels[j])
        reject("system: level " + std::to_string(j) + " cardinality differs from 'levels'");
  }
  return p;
}

// ---- the synthesis hierarchy (SPEC §3) and its copies ----
struct Hierarchy {
  std::vector<int> cards;
  std::vector<std::vector<int>> coords;  // coords[local][level]
  std::vector<Group> copies;             // copies[c][local] = system device
  Groups goal;                           // local goal groups
};

// The (axis, system level) digits of each level of hierarchy `kind` (SPEC §3), root not included.
std::vector<std::vector<std::pair<int, int>>> level_parts(int m, int L, const std::vector<int>& reduce,
                                                          const std::string& kind) {
  std::vector<std::vector<std::pair<int, int>>> parts;
  if (kind == "a") {
    for (int j = 0; j < L; ++j) {
      parts.emplace_back();
      for (int i = 0; i < m; ++i) parts.back().push_back({i, j});
    }
  } else if (kind == "b") {
    for (int j = 0; j < L; ++j)
      for (int i = 0; i < m; ++i) parts.push_back({{i, j}});
  } else if (kind == "c") {
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < L; ++j) parts.push_back({{i, j}});
  } else if (kind == "d") {
    for (int j = 0; j < L; ++j) {
      parts.emplace_back();
      for (int i : reduce) parts.back().push_back({i, j});
    }
  } else if (kind == "d-uncollapsed") {
    for (int i : reduce)
      for (int j = 0; j < L; ++j) parts.push_back({{i, j}});
  } else {
    reject("hierarchy kind '" + kind + "' unknown");
  }
  return parts;
}

Hierarchy derive_hierarchy(const Placement& p, const std::string& kind) {
  const int m = static_cast<int>(p.axes.size()), L = static_cast<int>(p.levels.size());
  const bool red = kind == "d" || kind == "d-uncollapsed";
  const auto parts = level_parts(m, L, p.reduce, kind);
  Hierarchy h;
  for (const auto& ps : parts) {
    int c = 1;
    for (auto [i, j] : ps) c *= p.x[i][j];
    h.cards.push_back(c);
  }
  const bool root = h.cards.empty() || h.cards[0] != 1;
  if (root) h.cards.insert(h.cards.begin(), 1);
  // Reduction groups: devices equal on every digit of a non-reduction axis.
  std::map<std::vector<int>, Group> by_key;
  for (int d = 0; d < p.devices; ++d) {
    std::vector<int> key;
    for (int i = 0; i < m; ++i)
      if (!p.reduced(i))
        for (int j = 0; j < L; ++j) key.push_back(p.digit(d, i, j));
    by_key[key].push_back(d);
  }
  Groups reduction;
  for (auto& [key, g] : by_key) reduction.push_back(g);
  std::sort(reduction.begin(), reduction.end());
  if (red) {
    h.copies = reduction;
  } else {
    h.copies.emplace_back();
    for (int d = 0; d < p.devices; ++d) h.copies[0].push_back(d);
  }
  const int k = static_cast<int>(h.copies[0].size());
  if (k > kMaxLocal) reject("hierarchy: " + std::to_string(k) + " local devices is more than the checker replays");
  for (int d : h.copies[0]) {
    std::vector<int> c;
    if (root) c.push_back(0);
    for (const auto& ps : parts) {
      int v = 0;
      for (auto [i, j] : ps) v = v * p.x[i][j] + p.digit(d, i, j);
      c.push_back(v);
    }
    h.coords.push_back(c);
  }
  if (red) {
    h.goal.emplace_back();
    for (int l = 0; l < k; ++l) h.goal[0].push_back(l);
  } else {
    h.goal = reduction;
  }
  return h;
}

// ---- the groups of a DSL instruction (SPEC §5) ----
Groups form_groups(const Hierarchy& h, int slice, const std::string& form, int e) {
  const int n = static_cast<int>(h.cards.size());
  std::map<std::vector<int>, Group> by_key;
  for (int l = 0; l < static_cast<int>(h.coords.size()); ++l) {
    const auto& c = h.coords[l];
    std::vector<int> key;
    if (form == "Inside") {
      key.assign(c.begin(), c.begin() + slice + 1);
    } else {
      key.assign(c.begin(), c.begin() + e + 1);
      key.insert(key.end(), c.begin() + slice + 1, c.begin() + n);
      if (form == "Master" && std::any_of(key.begin(), key.end(), [](int v) { return v != 0; })) continue;
    }
    by_key[key].push_back(l);
  }
  Groups g;
  for (auto& [key, v] : by_key) g.push_back(v);
  std::sort(g.begin(), g.end());
  return g;
}

// ---- states and the Hoare rules (SPEC §4) ----
using Row = std::vector<bool>;   // column set
using Dev = std::vector<Row>;    // rows
using State = std::vector<Dev>;  // devices

bool empty(const Row& r) { return std::find(r.begin(), r.end(), true) == r.end(); }
std::vector<int> rows_of(const Dev& d) {
  std::vector<int> v;
  for (std::size_t r = 0; r < d.size(); ++r)
    if (!empty(d[r])) v.push_back(static_cast<int>(r));
  return v;
}
bool disjoint(const Row& a, const Row& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] && b[i]) return false;
  return true;
}
Row unite(Row a, const Row& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = a[i] || b[i];
  return a;
}

// Applies collective `c` to group g of state s (in place); returns "" or why the precondition fails.
std::string apply(const std::string& c, const Group& g, State& s) {
  const int k = static_cast<int>(s.size());
  const auto rows0 = rows_of(s[g[0]]);
  auto reduce_pre = [&]() -> std::string {
    if (rows0.empty()) return "the root holds no rows";
    for (int d : g)
      if (rows_of(s[d]) != rows0) return "members hold different rows";
    for (int r = 0; r < k; ++r)
      for (std::size_t a = 0; a < g.size(); ++a)
        for (std::size_t b = a + 1; b < g.size(); ++b)
          if (!disjoint(s[g[a]][r], s[g[b]][r])) return "row " + std::to_string(r) + " is summed twice";
    return "";
  };
  auto sum = [&] {
    Dev S(k, Row(k, false));
    for (int d : g)
      for (int r = 0; r < k; ++r) S[r] = unite(S[r], s[d][r]);
    return S;
  };
  if (c == "AllReduce" || c == "Reduce" || c == "ReduceScatter") {
    if (auto why = reduce_pre(); !why.empty()) return why;
    const Dev S = sum();
    if (c == "AllReduce") {
      for (int d : g) s[d] = S;
    } else if (c == "Reduce") {
      for (int d : g) s[d] = Dev(k, Row(k, false));
      s[g[0]] = S;
    } else {
      if (rows0.size() % g.size() != 0) return "rows not divisible by the group size";
      const std::size_t b = rows0.size() / g.size();
      for (std::size_t i = 0; i < g.size(); ++i) {
        Dev mine(k, Row(k, false));
        for (std::size_t q = i * b; q < (i + 1) * b; ++q) mine[rows0[q]] = S[rows0[q]];
        s[g[i]] = mine;
      }
    }
    return "";
  }
  if (c == "AllGather") {
    std::vector<bool> seen(k, false);
    for (int d : g) {
      const auto rs = rows_of(s[d]);
      if (rs.empty() || rs.size() != rows0.size()) return "members hold different numbers of rows (or none)";
      for (int r : rs) {
        if (seen[r]) return "row " + std::to_string(r) + " held twice";
        seen[r] = true;
      }
    }
    const Dev S = sum();
    for (int d : g) s[d] = S;
    return "";
  }
  if (c == "Broadcast") {
    bool strict = false;
    for (int d : g)
      for (int r = 0; r < k; ++r)
        for (int j = 0; j < k; ++j) {
          if (s[d][r][j] && !s[g[0]][r][j]) return "a member holds data the root does not";
          if (s[d][r][j] != s[g[0]][r][j]) strict = true;
        }
    if (!strict) return "every member already equals the root";
    for (int d : g) s[d] = s[g[0]];
    return "";
  }
  reject("unknown collective '" + c + "'");
}

// ---- recorded states: "rows:cols;rows:cols", ranges "0-3,5" ----
std::vector<int> parse_ranges(const std::string& t, int k) {
  std::vector<int> v;
  std::stringstream ss(t);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto dash = item.find('-');
    auto num = [&](const std::string& x) {
      if (x.empty() || x.size() > 6 || x.find_first_not_of("0123456789") != std::string::npos)
        reject("state text: bad number '" + x + "'");
      const int n = std::stoi(x);
      if (n >= k) reject("state text: index " + x + " out of range");
      return n;
    };
    const int a = num(item.substr(0, dash)), b = dash == std::string::npos ? a : num(item.substr(dash + 1));
    if (b < a) reject("state text: empty range '" + item + "'");
    for (int i = a; i <= b; ++i) v.push_back(i);
  }
  if (v.empty()) reject("state text: empty set");
  return v;
}
Dev parse_device(const std::string& t, int k) {
  Dev d(k, Row(k, false));
  if (t.empty()) return d;
  std::stringstream ss(t);
  std::string part;
  while (std::getline(ss, part, ';')) {
    const auto colon = part.find(':');
    if (colon == std::string::npos) reject("state text: missing ':' in '" + part + "'");
    for (int r : parse_ranges(part.substr(0, colon), k)) {
      if (!empty(d[r])) reject("state text: row " + std::to_string(r) + " given twice");
      for (int j : parse_ranges(part.substr(colon + 1), k)) d[r][j] = true;
    }
  }
  return d;
}
std::string describe(const Dev& d) {
  std::string s;
  for (std::size_t r = 0; r < d.size(); ++r) {
    if (empty(d[r])) continue;
    if (!s.empty()) s += ' ';
    s += std::to_string(r);
    s += ":{";
    bool first = true;
    for (std::size_t j = 0; j < d[r].size(); ++j)
      if (d[r][j]) {
        if (!first) s += ',';
        s += std::to_string(j);
        first = false;
      }
    s += '}';
  }
  return s.empty() ? "(empty)" : s;
}

std::string check(const json& c) {
  if (!c.is_object()) reject("not a JSON object");
  if (str(field(c, "format"), "format") != "p2v-certificate/1") reject("format: not p2v-certificate/1");
  const Placement p = read_placement(c);
  const json& hj = field(c, "hierarchy");
  const Hierarchy h = derive_hierarchy(p, str(field(hj, "kind"), "hierarchy.kind"));
  if (int_list(field(hj, "cards"), 0, kMaxDevices, "hierarchy.cards") != h.cards)
    reject("hierarchy: recorded cardinalities do not follow from the matrix and reduction axes");
  const int k = static_cast<int>(h.coords.size()), n = static_cast<int>(h.cards.size());
  if (c.contains("goal_groups") && groups_of(c.at("goal_groups"), k, "goal_groups") != h.goal)
    reject("goal: recorded goal groups differ from the reduction groups of the placement");
  const std::string mc = str(field(c, "master_collectives"), "master_collectives");
  if (mc != "allreduce" && mc != "all") reject("master_collectives: expected allreduce or all");

  const json& steps = field(field(c, "program"), "steps");
  if (!steps.is_array() || steps.empty() || steps.size() > kMaxSteps) reject("program.steps: 1..64 steps expected");
  if (as_int(field(field(c, "program"), "size"), 1, kMaxSteps, "program.size") != static_cast<long long>(steps.size()))
    reject("program.size differs from the number of steps");
  const json& lowered = field(c, "lowered");
  const json& states = field(c, "states");
  if (!lowered.is_array() || lowered.size() != steps.size()) reject("lowered: one entry per step expected");
  if (!states.is_array() || states.size() != steps.size() + 1)
    reject("states: one entry per step plus the initial state expected");

  // Goal state.
  State goal(k, Dev(k, Row(k, false)));
  for (const auto& g : h.goal)
    for (int d : g)
      for (int r = 0; r < k; ++r)
        for (int j : g) goal[d][r][j] = true;
  // Initial state.
  State s(k, Dev(k, Row(k, false)));
  for (int d = 0; d < k; ++d)
    for (int r = 0; r < k; ++r) s[d][r][d] = true;

  auto compare = [&](std::size_t t) {
    const json& st = states[t];
    if (!st.is_array() || st.size() != static_cast<std::size_t>(k))
      reject("states[" + std::to_string(t) + "]: one entry per device expected");
    for (int d = 0; d < k; ++d) {
      const Dev rec = parse_device(str(st[d], "states"), k);
      if (rec != s[d])
        reject("state after step " + std::to_string(t) + ", device " + std::to_string(d) + ": recorded " +
               describe(rec) + ", replayed " + describe(s[d]));
    }
  };
  compare(0);
  std::string summary;
  for (std::size_t t = 0; t < steps.size(); ++t) {
    const std::string at = "step " + std::to_string(t + 1);
    const json& sj = steps[t];
    const std::string col = str(field(sj, "collective"), at + ".collective");
    const std::string form = str(field(sj, "form"), at + ".form");
    const int slice = static_cast<int>(as_int(field(sj, "slice"), 0, n - 2, at + ".slice"));
    int e = -1;
    if (form == "Parallel" || form == "Master")
      e = static_cast<int>(as_int(field(sj, "e"), 0, slice - 1, at + ".e"));
    else if (form != "Inside")
      reject(at + ": unknown form '" + form + "'");
    if (form == "Master" && mc == "allreduce" && col != "AllReduce") reject(at + ": Master carries AllReduce only");
    const Groups g = form_groups(h, slice, form, e);
    if (groups_of(field(sj, "groups"), k, at + ".groups") != g)
      reject(at + ": recorded groups are not the groups of (slice " + std::to_string(slice) + ", " + form + ")");
    if (std::all_of(g.begin(), g.end(), [](const Group& x) { return x.size() < 2; }))
      reject(at + ": all groups are singletons (not an instruction)");
    // Lowered groups: the local groups in every copy, as system devices.
    Groups low;
    for (const auto& copy : h.copies)
      for (const auto& grp : g) {
        Group sys;
        for (int l : grp) sys.push_back(copy[l]);
        std::sort(sys.begin(), sys.end());
        low.push_back(sys);
      }
    std::sort(low.begin(), low.end());
    if (str(field(lowered[t], "collective"), "lowered.collective") != col ||
        groups_of(field(lowered[t], "groups"), p.devices, "lowered.groups") != low)
      reject(at + ": lowered groups or collective do not match the step");
    if (s == goal) reject(at + ": the program continues past the goal");
    for (const auto& grp : g)
      if (auto why = apply(col, grp, s); !why.empty())
        reject(at + " (" + col + " on " + show(grp) + "): precondition fails: " + why);
    compare(t + 1);
    if (t) summary += " ; ";
    summary += col;
    summary += "@(level " + std::to_string(slice) + "," + form;
    if (e >= 0) summary += "(level " + std::to_string(e) + ")";
    summary += ')';
  }
  if (s != goal) reject("the final state is not the goal");
  return summary;
}

// ---- certificates at any size (docs/shape.md): the real placement is only read, never replayed;
// its shape is re-derived here, the smallest instance is checked in full by check(), and every
// step's level pattern is re-derived from the real matrix. ----
constexpr long long kMaxShapeDevices = 1 << 20;

std::string check_shape(const json& c) {
  // The real placement: sizes only (no per-device work).
  const json& sys = field(c, "system");
  const json& lv = field(sys, "levels");
  if (!lv.is_array() || lv.empty()) reject("system.levels: non-empty array expected");
  std::vector<int> levels;
  std::vector<std::string> level_names;
  for (std::size_t j = 0; j < lv.size(); ++j) {
    levels.push_back(static_cast<int>(as_int(field(lv[j], "cardinality"), 1, kMaxShapeDevices, "system level")));
    level_names.push_back(str(field(lv[j], "name"), "system level name"));
  }
  const std::vector<int> axes = int_list(field(c, "axes"), 1, kMaxShapeDevices, "axes");
  const json& xm = field(c, "matrix");
  const int m = static_cast<int>(axes.size()), L = static_cast<int>(levels.size());
  if (!xm.is_array() || xm.size() != axes.size()) reject("matrix: one row per axis expected");
  std::vector<std::vector<int>> x;
  for (int i = 0; i < m; ++i) {
    x.push_back(int_list(xm[i], 1, kMaxShapeDevices, "matrix row " + std::to_string(i)));
    if (static_cast<int>(x.back().size()) != L) reject("matrix: one column per level expected");
  }
  long long devices = 1;
  for (int j = 0; j < L; ++j) {
    long long prod = 1;
    for (int i = 0; i < m; ++i) prod = std::min<long long>(prod * x[i][j], kMaxShapeDevices + 1);
    if (prod != levels[j])
      reject("matrix: column " + std::to_string(j) + " does not multiply to the level cardinality");
    devices *= levels[j];
    if (devices > kMaxShapeDevices) reject("system: more than 2^20 devices");
  }
  for (int i = 0; i < m; ++i) {
    long long prod = 1;
    for (int j = 0; j < L; ++j) prod = std::min<long long>(prod * x[i][j], kMaxShapeDevices + 1);
    if (prod != axes[i]) reject("matrix: row " + std::to_string(i) + " does not multiply to the axis size");
  }
  const std::vector<int> reduce = int_list(field(c, "reduce"), 0, m - 1, "reduce");
  if (reduce.empty() || !std::is_sorted(reduce.begin(), reduce.end()) ||
      std::adjacent_find(reduce.begin(), reduce.end()) != reduce.end())
    reject("reduce: must be non-empty, ascending, without duplicates");
  const std::string kind = str(field(c, "hierarchy_kind"), "hierarchy_kind");
  if (kind != "d" && kind != "d-uncollapsed") reject("hierarchy_kind: shape certificates are for (d) only");

  // The shape (SPEC §3 (d), docs/shape.md §2): names and cardinalities of the (d) levels.
  auto parts = level_parts(m, L, reduce, kind);
  std::vector<std::string> names;
  std::vector<long long> cards;
  for (std::size_t l = 0; l < parts.size(); ++l) {
    long long card = 1;
    for (auto [i, j] : parts[l]) card *= x[i][j];
    cards.push_back(card);
    names.push_back(kind == "d" ? level_names[parts[l][0].second]
                                : level_names[parts[l][0].second] + "." + std::to_string(parts[l][0].first));
  }
  if (cards.empty() || cards[0] != 1) {
    cards.insert(cards.begin(), 1);
    names.insert(names.begin(), "root");
    parts.insert(parts.begin(), std::vector<std::pair<int, int>>{});
  }
  const json& rl = field(field(c, "shape"), "levels");
  if (!rl.is_array() || rl.size() != names.size()) reject("shape.levels: do not follow from the placement");
  for (std::size_t l = 0; l < names.size(); ++l)
    if (str(field(rl[l], "name"), "shape level") != names[l] ||
        as_int(field(rl[l], "cardinality"), 1, kMaxShapeDevices, "shape level") != cards[l])
      reject("shape.levels[" + std::to_string(l) + "]: does not follow from the placement (expected " + names[l] +
             " of cardinality " + std::to_string(cards[l]) + ")");
  long long k = 1;
  for (long long v : cards) k *= v;

  // The smallest instance: the shape's levels with every cardinality >= 2 replaced by 2.
  const json& inst = field(c, "instance");
  std::vector<int> canon;
  int kc = 1;
  for (long long v : cards) {
    canon.push_back(v == 1 ? 1 : 2);
    kc *= canon.back();
  }
  if (int_list(field(inst, "levels"), 1, kMaxDevices, "instance.levels") != canon ||
      int_list(field(inst, "axes"), 1, kMaxDevices, "instance.axes") != std::vector<int>{kc} ||
      int_list(field(inst, "reduce"), 0, 0, "instance.reduce") != std::vector<int>{0} ||
      str(field(field(inst, "hierarchy"), "kind"), "instance.hierarchy.kind") != "d")
    reject("instance: not the smallest instance of the shape");
  const json& il = field(field(inst, "system"), "levels");
  for (std::size_t l = 0; l < names.size(); ++l)
    if (!il.is_array() || il.size() != names.size() || str(field(il[l], "name"), "instance level") != names[l])
      reject("instance: its levels are not named as the shape's");
  check(inst);  // the full replay of the smallest instance (states, goal, groups)

  // The program and each step's level pattern on the real placement.
  const json& isteps = field(field(inst, "program"), "steps");
  if (str(field(c, "program"), "program") != str(field(field(inst, "program"), "notation"), "instance notation"))
    reject("program: differs from the instance's program");
  const json& steps = field(c, "steps");
  if (!steps.is_array() || steps.size() != isteps.size()) reject("steps: one entry per step of the instance expected");
  const int n = static_cast<int>(names.size()) - 1;
  for (std::size_t t = 0; t < steps.size(); ++t) {
    const std::string at = "steps[" + std::to_string(t) + "]";
    const json& sj = steps[t];
    const json& ij = isteps[t];
    if (str(field(sj, "collective"), at) != str(field(ij, "collective"), at))
      reject(at + ": collective differs from the instance's");
    const int slice = static_cast<int>(as_int(field(ij, "slice"), 0, n - 1, at + ".slice"));
    const std::string form = str(field(ij, "form"), at + ".form");
    const int e = static_cast<int>(as_int(field(ij, "e"), -1, slice - 1, at + ".e"));
    if (str(field(sj, "slice"), at) != names[slice]) reject(at + ": slice differs from the instance's");
    const std::string fname = form == "Inside" ? "Inside" : form + "(" + names[e < 0 ? 0 : e] + ")";
    if (str(field(sj, "form"), at) != fname) reject(at + ": form differs from the instance's");
    // Members differ exactly in the digits of the varying levels (SPEC §5), in device order.
    const int lo = form == "Inside" ? slice + 1 : e + 1, hi = form == "Inside" ? n : slice;
    std::vector<std::pair<int, int>> vary;  // (level, axis)
    long long size = 1;
    for (int l = lo; l <= hi; ++l)
      for (auto [i, j] : parts[l])
        if (x[i][j] > 1) {
          vary.push_back({j, i});
          size *= x[i][j];
        }
    std::sort(vary.begin(), vary.end());
    const json& rv = field(sj, "vary");
    if (!rv.is_array() || rv.size() != vary.size()) reject(at + ".vary: does not follow from the placement");
    for (std::size_t v = 0; v < vary.size(); ++v)
      if (as_int(field(rv[v], "level"), 0, L - 1, at) != vary[v].first ||
          as_int(field(rv[v], "axis"), 0, m - 1, at) != vary[v].second ||
          as_int(field(rv[v], "factor"), 1, kMaxShapeDevices, at) != x[vary[v].second][vary[v].first])
        reject(at + ".vary[" + std::to_string(v) + "]: does not follow from the placement");
    const bool master = form == "Master";
    if (!field(sj, "master").is_boolean() || field(sj, "master").get<bool>() != master)
      reject(at + ".master: does not follow from the form");
    if (as_int(field(sj, "group_size"), 1, kMaxShapeDevices, at) != size)
      reject(at + ".group_size: expected " + std::to_string(size));
    const long long groups = master ? devices / k : devices / size;
    if (as_int(field(sj, "num_groups"), 1, kMaxShapeDevices, at) != groups)
      reject(at + ".num_groups: expected " + std::to_string(groups));
  }
  return "shape " + str(field(field(c, "shape"), "signature"), "shape.signature") + " on " + std::to_string(devices) +
         " devices: " + str(field(c, "program"), "program") +
         " (smallest instance replayed; relies on docs/shape.md sections 3-4)";
}

}  // namespace

Verdict check_certificate(const std::string& text) {
  Verdict v;
  try {
    const json c = json::parse(text);
    if (c.is_object() && c.contains("format") && c["format"] == "p2v-reshard-certificate/1")
      return check_reshard_certificate(text);
    const bool shape = c.is_object() && c.contains("format") && c["format"] == "p2v-shape-certificate/1";
    v.summary = shape ? check_shape(c) : check(c);
    const json& fc = shape ? c.at("instance") : c;
    // A certificate is the solvers' word as well as the replay: without a solver's acceptance of the
    // program and a completeness answer it certifies nothing a solver proved, and is refused.
    const std::string where = shape ? "instance.facts" : "facts";
    if (!fc.contains("facts") || !fc["facts"].is_object())
      throw Reject(where + ": missing (no solver facts: not a certificate)");
    const json& f = fc["facts"];
    if (!f.contains("found_by") || !f["found_by"].is_array() || f["found_by"].empty())
      throw Reject(where + ".found_by: no solver accepted this program");
    for (const auto& e : f["found_by"])
      if (!e.is_object() || !e.contains("result") || e["result"] != "sat")
        throw Reject(where + ".found_by: every entry must be a solver's \"sat\" for this program");
    if (!f.contains("complete") || !f["complete"].is_array() || f["complete"].empty())
      throw Reject(where + ".complete: no completeness answer");
    for (const auto& e : f["complete"])
      if (!e.is_object() || !e.contains("result") || e["result"] != "unsat")
        throw Reject(where + ".complete: every entry must be \"unsat\" (no program besides the listed ones)");
    const int solvers = static_cast<int>(f["found_by"].size());
    // Enumeration facts say a solver found the program; closure and confirm facts say it accepted
    // the program's steps (the solver did not search for it).
    bool found = false;
    for (const auto& e : f["found_by"])
      if (!e.contains("method") || e["method"] == "enumerate") found = true;
    v.summary += std::string("  [") + (found ? "found" : "accepted") + " by " + std::to_string(solvers) + " solver(s)";
    if (f.contains("minimal") && f["minimal"].is_boolean() && f["minimal"].get<bool>()) v.summary += ", minimal";
    v.summary += "; solver facts recorded, not re-proved]";
    v.ok = true;
  } catch (const Reject& e) {
    v.reason = e.what();
  } catch (const json::exception& e) {
    v.reason = std::string("malformed JSON: ") + e.what();
  } catch (const std::exception& e) {
    v.reason = std::string("malformed certificate: ") + e.what();
  }
  return v;
}

Verdict check_certificate_file(const std::string& path) {
  // Read with the same 256 MiB limit as p2v's other readers (a wrong path such as /dev/zero is
  // refused instead of filling the memory).
  constexpr std::size_t kMaxBytes = std::size_t{256} << 20;
  std::ifstream f(path, std::ios::binary);
  if (!f) return {false, "cannot read " + path, ""};
  std::string text;
  char buf[1 << 16];
  while (f.read(buf, sizeof buf) || f.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(f.gcount()));
    if (text.size() > kMaxBytes) return {false, path + ": larger than 256 MiB, the limit for input files", ""};
  }
  if (f.bad()) return {false, "cannot read " + path, ""};
  return check_certificate(text);
}

}  // namespace p2v::checker
