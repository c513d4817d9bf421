// The independent certificate checker. Readable in one sitting; shares no code with the engine's
// synthesizer or state code, nor with the SMT encodings. Everything it trusts is in this file
// and docs/model.md: device digits (§2), synthesis hierarchies (§3), states and Hoare rules (§4),
// groups of the DSL (§5), lowering (§6).
#include "p2v/checker/checker.hpp"

#include "read_capped.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>
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
  // an unsigned number above 2^63 - 1 would wrap to a negative long long (2^64 - 1 read as -1)
  if (j.is_number_unsigned() && (hi < 0 || j.get<unsigned long long>() > static_cast<unsigned long long>(hi)))
    reject(what + ": " + std::to_string(j.get<unsigned long long>()) + " out of range");
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
  for (std::size_t i = 0; i < j.size(); ++i)
    g.push_back(int_list(j[i], 0, n - 1, what + "[" + std::to_string(i) + "]"));
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

// ---- the placement: digits of devices (docs/model.md §2) ----
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

// ---- the synthesis hierarchy (docs/model.md §3) and its copies ----
struct Hierarchy {
  std::vector<int> cards;
  std::vector<std::vector<int>> coords;  // coords[local][level]
  std::vector<Group> copies;             // copies[c][local] = system device
  Groups goal;                           // local goal groups
};

// The (axis, system level) digits of each level of hierarchy `kind` (docs/model.md §3), root not included.
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

// ---- the groups of a DSL instruction (docs/model.md §5) ----
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

// ---- states and the Hoare rules (docs/model.md §4) ----
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
void unite_into(Row& a, const Row& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (b[i]) a[i] = true;
}

// Why collective `c` may not run on group g of state s ("" if it may): model.md §4's preconditions.
std::string precondition(const std::string& c, const Group& g, const State& s) {
  const int k = static_cast<int>(s.size());
  const auto rows0 = rows_of(s[g[0]]);
  if (c == "AllReduce" || c == "Reduce" || c == "ReduceScatter") {
    if (rows0.empty()) return "the root holds no rows";
    for (int d : g)
      for (int r = 0; r < k; ++r)
        if (empty(s[d][r]) != empty(s[g[0]][r])) return "members hold different rows";
    for (int r = 0; r < k; ++r)
      for (std::size_t a = 0; a < g.size(); ++a)
        for (std::size_t b = a + 1; b < g.size(); ++b)
          if (!disjoint(s[g[a]][r], s[g[b]][r])) return "row " + std::to_string(r) + " is summed twice";
    if (c == "ReduceScatter" && rows0.size() % g.size() != 0) return "rows not divisible by the group size";
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
    return "";
  }
  reject("unknown collective '" + c + "'");
}

// The effect of collective `c` on group g of state s (in place), its precondition holding.
void effect(const std::string& c, const Group& g, State& s) {
  const int k = static_cast<int>(s.size());
  auto sum = [&] {
    Dev S(k, Row(k, false));
    for (int d : g)
      for (int r = 0; r < k; ++r) unite_into(S[r], s[d][r]);
    return S;
  };
  if (c == "Broadcast") {
    for (int d : g) s[d] = s[g[0]];
  } else if (c == "ReduceScatter") {
    const auto rows0 = rows_of(s[g[0]]);
    const Dev S = sum();
    const std::size_t b = rows0.size() / g.size();
    for (std::size_t i = 0; i < g.size(); ++i) {
      Dev mine(k, Row(k, false));
      for (std::size_t q = i * b; q < (i + 1) * b; ++q) mine[rows0[q]] = S[rows0[q]];
      s[g[i]] = mine;
    }
  } else {
    const Dev S = sum();
    if (c == "Reduce") {
      for (int d : g) s[d] = Dev(k, Row(k, false));
      s[g[0]] = S;
    } else {  // AllReduce, AllGather
      for (int d : g) s[d] = S;
    }
  }
}

// Applies collective `c` to group g of state s (in place); returns "" or why the precondition fails
// (then s is unchanged). A step's groups are disjoint, so each group's precondition reads the same
// data before and after the others run.
std::string apply(const std::string& c, const Group& g, State& s) {
  if (auto why = precondition(c, g, s); !why.empty()) return why;
  effect(c, g, s);
  return "";
}

// ---- states in words, for rejections ----
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

// ---- the schema: every object has exactly its fields (missing or unknown ones are refused) ----
void fields(const json& j, const std::string& where, std::initializer_list<const char*> required,
            std::initializer_list<const char*> optional = {}) {
  if (!j.is_object()) reject(where + ": not an object");
  for (const char* k : required)
    if (!j.contains(k)) reject(where + ": missing field '" + k + "'");
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : required) known = known || it.key() == k;
    for (const char* k : optional) known = known || it.key() == k;
    if (!known) reject(where + ": unknown field '" + it.key() + "'");
  }
}
bool boolean(const json& j, const std::string& what) {
  if (!j.is_boolean()) reject(what + ": not a boolean");
  return j.get<bool>();
}
double number(const json& j, const std::string& what) {
  if (!j.is_number() || !(j.get<double>() >= 0)) reject(what + ": not a non-negative number");
  return j.get<double>();
}

// The claims a certificate makes and how the checker established each (Verdict::claims).
struct Claims {
  std::vector<Claim>* out;
  std::string prefix;  // "instance." inside a shape certificate
  const Context* ctx;
  void add(const std::string& path, const std::string& claim, const char* how) const {
    out->push_back({prefix + path, claim, how});
  }
};

// ---- the system: levels must be the certificate's; the rest (interconnects, topology, device)
// is cost-model data the proof does not use: schema-checked and reported as recorded ----
std::vector<std::string> read_system(const json& sj, const std::vector<int>& levels, const Claims& cl,
                                     const std::string& where) {
  fields(sj, where, {"name", "levels"}, {"description", "topology", "device"});
  str(sj["name"], where + ".name");
  if (sj.contains("description")) str(sj["description"], where + ".description");
  if (sj.contains("topology") && !sj["topology"].is_object()) reject(where + ".topology: not an object");
  if (sj.contains("device")) {
    fields(sj["device"], where + ".device", {}, {"name", "peak_tflops", "efficiency", "memory_gb"});
    for (auto it = sj["device"].begin(); it != sj["device"].end(); ++it)
      if (it.key() == "name")
        str(it.value(), where + ".device.name");
      else
        number(it.value(), where + ".device." + it.key());
  }
  const json& lv = sj["levels"];
  if (!lv.is_array() || lv.size() != levels.size()) reject(where + ".levels: one per entry of 'levels' expected");
  std::vector<std::string> names;
  for (std::size_t j = 0; j < lv.size(); ++j) {
    const std::string at = where + ".levels[" + std::to_string(j) + "]";
    fields(lv[j], at, {"name", "cardinality"}, {"interconnect"});
    names.push_back(str(lv[j]["name"], at + ".name"));
    if (names.back().empty() || std::count(names.begin(), names.end(), names.back()) > 1)
      reject(at + ".name: empty or repeated");
    if (as_int(lv[j]["cardinality"], 1, 1 << 20, at + ".cardinality") != levels[j])
      reject(at + ".cardinality: differs from 'levels'");
    if (lv[j].contains("interconnect")) {
      const json& ic = lv[j]["interconnect"];
      // Bandwidths in GB/s under the names that say so, or their deprecated names (docs/formats.md);
      // one of each pair, never both.
      fields(ic, at + ".interconnect", {"kind", "latency_us"},
             {"bandwidth_GBps", "bandwidth_gbps", "flow_bandwidth_GBps", "flow_bandwidth_gbps"});
      str(ic["kind"], at + ".interconnect.kind");
      for (const auto& [now, old] :
           {std::pair{"bandwidth_GBps", "bandwidth_gbps"}, std::pair{"flow_bandwidth_GBps", "flow_bandwidth_gbps"}})
        if (ic.contains(now) && ic.contains(old))
          reject(at + ".interconnect: both '" + now + "' and its deprecated name '" + old + "'");
      if (!ic.contains("bandwidth_GBps") && !ic.contains("bandwidth_gbps"))
        reject(at + ".interconnect: missing field 'bandwidth_GBps'");
      for (const char* k :
           {"bandwidth_GBps", "bandwidth_gbps", "latency_us", "flow_bandwidth_GBps", "flow_bandwidth_gbps"})
        if (ic.contains(k)) number(ic[k], at + ".interconnect." + k);
    }
  }
  cl.add("system.name", "the system's name", "recorded");
  for (const char* k : {"description", "topology", "device"})
    if (sj.contains(k)) cl.add("system." + std::string(k), "cost-model data (not used by the proof)", "recorded");
  if (std::any_of(lv.begin(), lv.end(), [](const json& l) { return l.contains("interconnect"); }))
    cl.add("system.levels[].interconnect", "the levels' interconnects (cost-model data, not used by the proof)",
           "recorded");
  return names;
}

// The hierarchy's level names (docs/model.md §3): a level of one system level keeps its name, a level of
// one (axis, level) digit is "name.axis"; "root" when the first level is not of cardinality 1.
std::vector<std::string> hierarchy_names(const Placement& p, const std::vector<std::string>& level_names,
                                         const std::string& kind, const Hierarchy& h) {
  std::vector<std::string> names;
  const auto parts = level_parts(static_cast<int>(p.axes.size()), static_cast<int>(p.levels.size()), p.reduce, kind);
  const bool per_digit = kind == "b" || kind == "c" || kind == "d-uncollapsed";
  if (h.cards.size() != parts.size()) names.push_back("root");
  for (const auto& ps : parts)
    names.push_back(per_digit ? level_names[ps[0].second] + "." + std::to_string(ps[0].first)
                              : level_names[ps.empty() ? 0 : ps[0].second]);
  return names;
}

// ---- the instructions the enumerator uses (docs/model.md §5): every (slice, form, e) whose groups are not
// all singletons, the first of equal groupings kept (order: slice ascending; Inside, Parallel and
// Master with e descending), times the collectives (Master: AllReduce only unless "all") ----
const char* const kCollectives[] = {"AllReduce", "Reduce", "ReduceScatter", "AllGather", "Broadcast"};
struct Ins {
  std::string col;
  int slice, e;
  std::string form;
  Groups g;
};
std::vector<Ins> instruction_set(const Hierarchy& h, const std::string& mc) {
  std::vector<Ins> out;
  std::vector<Groups> seen;
  auto consider = [&](int s, const char* f, int e) {
    Groups g = form_groups(h, s, f, e);
    if (g.empty() || g[0].size() < 2) return;
    if (std::find(seen.begin(), seen.end(), g) != seen.end()) return;
    seen.push_back(g);
    for (const char* c : kCollectives)
      if (std::string(f) != "Master" || mc == "all" || std::string(c) == "AllReduce") out.push_back({c, s, e, f, g});
  };
  for (int s = 0; s + 1 < static_cast<int>(h.cards.size()); ++s) {
    consider(s, "Inside", -1);
    for (int e = s - 1; e >= 0; --e) consider(s, "Parallel", e);
    for (int e = s - 1; e >= 0; --e) consider(s, "Master", e);
  }
  return out;
}

// A state's bits, device-major then row then column (k^3 bits), as the memos keep it.
std::vector<std::uint64_t> pack(const State& s) {
  const std::size_t k = s.size();
  std::vector<std::uint64_t> b((k * k * k + 63) / 64, 0);
  for (std::size_t d = 0, i = 0; d < k; ++d)
    for (std::size_t r = 0; r < k; ++r)
      for (std::size_t j = 0; j < k; ++j, ++i)
        if (s[d][r][j]) b[i / 64] |= std::uint64_t{1} << (i % 64);
  return b;
}
State unpack(const std::vector<std::uint64_t>& b, std::size_t k) {
  State s(k, Dev(k, Row(k, false)));
  for (std::size_t d = 0, i = 0; d < k; ++d)
    for (std::size_t r = 0; r < k; ++r)
      for (std::size_t j = 0; j < k; ++j, ++i) s[d][r][j] = (b[i / 64] >> (i % 64)) & 1;
  return s;
}

// Counts the valid programs from `s` to the goal by length (v[len], len <= rem), by brute force
// with memoisation (states packed, k^3 bits each); throws Budget past kMaxApplied units, one unit
// per 512 state bits per instruction tried (an application reads and may copy a k x k x k state).
// The memo holds at most one state per application, so it stays under kMaxApplied x 64 bytes
// (128 MiB) whatever k is. The four-level 16-device shape at L = 5 takes 1.4 million units.
struct Budget {};
constexpr long long kMaxApplied = 2000000;
struct Counter {
  Counter(const std::vector<Ins>& i, const State& g) : ins(i), goal(g) {}
  const std::vector<Ins>& ins;
  const State& goal;
  long long applied = 0;
  long long unit = std::max<long long>(1, static_cast<long long>(goal.size() * goal.size() * goal.size()) / 512);
  // v[len] for len < v.size(): the number of programs of exactly len steps from a state does not
  // depend on the bound, so one entry per state serves every smaller remainder.
  std::map<std::vector<std::uint64_t>, std::vector<long long>> memo;
  std::vector<long long> count(const State& s, int rem) {
    auto key = pack(s);
    if (auto it = memo.find(key); it != memo.end() && it->second.size() > static_cast<std::size_t>(rem))
      return {it->second.begin(), it->second.begin() + rem + 1};
    std::vector<long long> v(static_cast<std::size_t>(rem) + 1, 0);
    for (const auto& in : ins) {
      if ((applied += unit) > kMaxApplied) throw Budget{};
      // A step's groups are disjoint: checking every precondition on s first copies only valid steps.
      if (std::any_of(in.g.begin(), in.g.end(),
                      [&](const Group& grp) { return !precondition(in.col, grp, s).empty(); }))
        continue;
      State next = s;
      for (const auto& grp : in.g) effect(in.col, grp, next);
      if (next == goal) {
        ++v[1];
      } else if (rem > 1) {
        const auto sub = count(next, rem - 1);
        for (std::size_t l = 1; l < sub.size(); ++l) v[l + 1] += sub[l];
      }
    }
    memo[std::move(key)] = v;
    return v;
  }
};

// The state text the writer records: rows with equal column sets together ("rows:cols", ranges
// "0-3,5"), in the order of their first row, ";" between; "" for a device holding nothing.
std::string ranges_text(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(v[i]);
    if (j > i) s += '-' + std::to_string(v[j]);
    i = j + 1;
  }
  return s;
}
std::string state_text(const Dev& d) {
  std::vector<Row> order;
  std::map<Row, std::vector<int>> rows;
  for (std::size_t r = 0; r < d.size(); ++r) {
    if (empty(d[r])) continue;
    if (!rows.count(d[r])) order.push_back(d[r]);
    rows[d[r]].push_back(static_cast<int>(r));
  }
  std::string out;
  for (const auto& cols : order) {
    std::vector<int> c;
    for (std::size_t j = 0; j < cols.size(); ++j)
      if (cols[j]) c.push_back(static_cast<int>(j));
    if (!out.empty()) out += ';';
    out += ranges_text(rows[cols]) + ":" + ranges_text(c);
  }
  return out;
}

// ---- the per-level form (encodings/README.md "The per-level encoding"): on a hierarchy whose
// levels have cardinality 1 or 2, every device that holds rows holds them all with one column
// set, and holds exactly the rows whose bits at some positions equal its digits at some levels
// (one row bit per level, the same assignment for every device) ----
bool per_level_form(const State& s, const Hierarchy& h) {
  const int k = static_cast<int>(s.size());
  std::vector<int> wide;  // the levels of cardinality 2
  for (int j = 0; j < static_cast<int>(h.cards.size()); ++j)
    if (h.cards[j] == 2) wide.push_back(j);
  const int n = static_cast<int>(wide.size());
  if (k != (1 << n)) return false;
  std::vector<std::vector<int>> rows(k);
  std::vector<int> present;
  for (int d = 0; d < k; ++d) {
    rows[d] = rows_of(s[d]);
    if (rows[d].empty()) continue;
    present.push_back(d);
    for (int r : rows[d])
      if (s[d][r] != s[d][rows[d][0]]) return false;
  }
  if (present.empty()) return false;
  std::vector<int> level_of(n, -1);  // row bit -> level it is fixed to
  std::vector<char> used(h.cards.size(), 0);
  for (int b = 0; b < n; ++b)
    for (int j : wide) {
      bool all = true;
      for (std::size_t q = 0; q < present.size() && all; ++q)
        for (int r : rows[present[q]]) all = all && ((r >> b) & 1) == h.coords[present[q]][j];
      if (!all) continue;
      if (used[j]) return false;
      used[j] = 1;
      level_of[b] = j;
      break;
    }
  for (int d = 0; d < k; ++d)
    for (int r = 0; r < k; ++r) {
      bool in = !rows[d].empty();
      for (int b = 0; b < n && in; ++b) in = level_of[b] < 0 || ((r >> b) & 1) == h.coords[d][level_of[b]];
      if (in == empty(s[d][r])) return false;
    }
  return true;
}

// ---- summed levels (encodings/README.md, "summed levels"): in a state of per-level form, every
// device that holds rows holds the columns of exactly the devices that agree with it outside some
// set of levels (its summed levels) ----
// How certificates and the checker's claims name that form.
constexpr const char* kSummedLevelsText =
    "each device's columns those of the devices that agree with it outside a set of levels";
}  // namespace

bool summed_levels_form(const std::vector<std::vector<std::vector<bool>>>& s,
                        const std::vector<std::vector<int>>& coords) {
  const int k = static_cast<int>(s.size());
  if (coords.size() != s.size()) throw std::invalid_argument("summed_levels_form: one coordinate vector per device");
  const int levels = k == 0 ? 0 : static_cast<int>(coords[0].size());
  for (int d = 0; d < k; ++d) {
    const auto rows = rows_of(s[d]);
    if (rows.empty()) continue;
    const Row& cols = s[d][rows[0]];
    std::vector<char> summed(levels, 0);  // a level on which some column differs from d
    for (int c = 0; c < k; ++c)
      if (cols[c])
        for (int j = 0; j < levels; ++j)
          if (coords[c][j] != coords[d][j]) summed[j] = 1;
    for (int c = 0; c < k; ++c) {
      bool agrees = true;
      for (int j = 0; j < levels && agrees; ++j) agrees = summed[j] || coords[c][j] == coords[d][j];
      if (agrees != static_cast<bool>(cols[c])) return false;
    }
  }
  return true;
}

namespace {

// ---- the replay, memoised by program prefix: the certificates of one directory share their
// hierarchy and most prefixes, so each distinct prefix's state is derived once per process (by
// the code above, from its parent prefix's state) and its texts rendered once ----
// The hierarchy's local part (cardinalities, coordinates, goal groups): what states, steps and
// goal depend on.
std::string hierarchy_key(const Hierarchy& h) {
  std::string key;
  for (int x : h.cards) key += std::to_string(x) + ",";
  for (const auto* gs : {&h.coords, &h.goal}) {
    key += "|";
    for (const auto& g : *gs) {
      for (int x : g) key += std::to_string(x) + ",";
      key += ";";
    }
  }
  return key;
}
// The goal state of h: every device of a goal group holds every row summed over its group
// (derived once per hierarchy; `key` is hierarchy_key(h)).
std::shared_ptr<const State> goal_state(const Hierarchy& h, const std::string& key) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const State>> memo;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  const int k = static_cast<int>(h.coords.size());
  auto goal = std::make_shared<State>(k, Dev(k, Row(k, false)));
  for (const auto& g : h.goal)
    for (int d : g)
      for (int r = 0; r < k; ++r)
        for (int j : g) (*goal)[d][r][j] = true;
  const std::lock_guard<std::mutex> lock(mutex);
  if (memo.size() >= 16 || k > 64) return goal;  // bounded: a directory holds one hierarchy
  return memo.emplace(key, std::move(goal)).first->second;
}

struct Replayed {
  std::vector<std::uint64_t> bits;  // the state, packed
  std::vector<std::string> text;    // state_text of each device
  bool goal = false, per_level = false, summed = false;
  std::string why;  // the step to this state fails its precondition: why ("" when it holds)
};
// Bounds the memo: bits of states kept (k^3 each, packed), 2^28 = 32 MiB; past it, states are
// derived without being kept.
constexpr long long kMemoBits = 1LL << 28;
// The state after prefix `key`: `parent`'s state with collective `col` applied to each group of
// `g` in turn (parent null: the initial state of h).
std::shared_ptr<const Replayed> replay_node(const std::string& key, const std::shared_ptr<const Replayed>& parent,
                                            const Hierarchy& h, const State& goal, const std::string& col,
                                            const Groups& g) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Replayed>> memo;
  static long long bits = 0;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  auto r = std::make_shared<Replayed>();
  const int k = static_cast<int>(h.coords.size());
  State s;
  if (!parent) {
    s.assign(k, Dev(k, Row(k, false)));
    for (int d = 0; d < k; ++d)
      for (int q = 0; q < k; ++q) s[d][q][d] = true;
  } else {
    s = unpack(parent->bits, k);
    for (const auto& grp : g)
      if (auto why = apply(col, grp, s); !why.empty()) {
        r->why = "(" + col + " on " + show(grp) + "): precondition fails: " + why;
        break;
      }
  }
  if (r->why.empty()) {
    r->bits = pack(s);
    r->text.reserve(k);
    for (int d = 0; d < k; ++d) r->text.push_back(state_text(s[d]));
    r->goal = s == goal;
    r->per_level = per_level_form(s, h);
    r->summed = r->per_level && summed_levels_form(s, h.coords);
  }
  const std::lock_guard<std::mutex> lock(mutex);
  const long long size = static_cast<long long>(k) * k * k;
  if (bits + size > kMemoBits) return r;
  bits += size;
  return memo.emplace(key, std::move(r)).first->second;
}

// ---- solver facts: each entry's query, result and conclusion text follow from its numbers (the
// checker renders them); the answers themselves are recorded, not re-solved here ----
struct SolverFacts {
  std::string method, version, settings;
  bool found = false;
  std::map<int, long long> complete;  // bound -> programs of exactly that length (enumerate, confirm)
  long long closure_programs = -1;
  bool summed = false;  // a symbolic closure over summed levels (its query says so)
  std::vector<int> no_shorter;
};

void read_fact(const json& f, const std::string& at, const std::string& list, int n, int L,
               std::map<std::string, SolverFacts>& by, const Claims& cl) {
  fields(f, at, {"solver", "version", "settings", "bound", "method", "query", "result"},
         {"seconds", "bound_seconds", "programs", "states", "steps", "conclusion"});
  const std::string solver = str(f["solver"], at + ".solver"), method = str(f["method"], at + ".method");
  if (solver != "z3" && solver != "cvc5") reject(at + ".solver: expected z3 or cvc5");
  const std::string version = str(f["version"], at + ".version"), settings = str(f["settings"], at + ".settings");
  if (version.empty() || settings.empty()) reject(at + ": empty version or settings");
  if (method != "enumerate" && method != "confirm" && method != "closure" && method != "symbolic-closure")
    reject(at + ".method: expected enumerate, confirm, closure or symbolic-closure");
  SolverFacts& sf = by[solver];
  if (!sf.method.empty() && sf.method != method) reject(at + ".method: " + solver + " has facts of two methods");
  sf.method = method;
  // One run per solver: every fact of a solver names the same version and settings.
  if (sf.version.empty()) {
    sf.version = version;
    sf.settings = settings;
  } else if (sf.version != version || sf.settings != settings) {
    reject(at + ": " + solver + "'s version or settings differ from its other facts (one run per solver)");
  }
  const int bound = static_cast<int>(as_int(f["bound"], 1, kMaxSteps, at + ".bound"));
  const std::string query = str(f["query"], at + ".query"), result = str(f["result"], at + ".result");
  auto allow = [&](std::initializer_list<const char*> keys) {
    for (const char* k : {"seconds", "bound_seconds", "programs", "states", "steps", "conclusion"})
      if (f.contains(k) &&
          std::find_if(keys.begin(), keys.end(), [&](const char* a) { return std::string(a) == k; }) == keys.end())
        reject(at + ": field '" + k + "' does not belong to a " + list + " fact of method " + method);
    for (const char* k : keys)
      if (!f.contains(k)) reject(at + ": missing field '" + k + "'");
  };
  auto expect = [&](const std::string& what, const std::string& got, const std::string& want) {
    if (got != want)
      reject(at + "." + what + ": \"" + got + "\" does not follow from the fact (expected \"" + want + "\")");
  };
  // symbolic-closure: the closure over the per-level encoding (encodings/README.md), whose texts
  // name it; it closes the reachable states that have a per-level form.
  const bool sym = method == "symbolic-closure";
  const bool closure = method == "closure" || sym, confirm = method == "confirm";
  const std::string ns = std::to_string(bound);
  if (f.contains("seconds")) number(f["seconds"], at + ".seconds");
  if (f.contains("bound_seconds")) number(f["bound_seconds"], at + ".bound_seconds");
  std::string claim;
  if (list == "found_by") {
    if (sf.found) reject(at + ": " + solver + " accepts the program twice");
    sf.found = true;
    if (bound != n) reject(at + ".bound: not the program's length");
    allow({"seconds"});
    // The per-level closure proves its steps in one query, "a listed step the step relation
    // rejects": unsat. Certificates written before that checked each step: sat, with the text
    // `per_step`, and are read as they are.
    const std::string per_step =
        "each step of this program from its start state in the per-level encoding, with its successor's goal status";
    const bool batched = sym && query != per_step;
    expect("query", query,
           batched   ? "a step of the listed programs (this program's among them), from its start state in the "
                       "per-level encoding, that the encoding's step relation rejects with its successor and that "
                       "one's goal status"
           : sym     ? per_step
           : closure ? "each step of this program from its start state, with its successor's goal status"
           : confirm ? "this program (its choices fixed) satisfies the encoding of " + ns + " steps"
                     : "a valid program of exactly " + ns + " steps (blocking those found before)");
    expect("result", result, batched ? "unsat" : "sat");
    claim = solver + " accepts this program (" + (batched ? "no step rejected: unsat" : "sat") + ")";
  } else if (list == "no_shorter") {
    if (std::find(sf.no_shorter.begin(), sf.no_shorter.end(), bound) != sf.no_shorter.end())
      reject(at + ": bound " + ns + " given twice for " + solver);
    sf.no_shorter.push_back(bound);
    if (bound >= n) reject(at + ".bound: not shorter than the program");
    if (closure) {
      allow({});
      if (bound != n - 1) reject(at + ".bound: a closure's no-shorter fact is for the program's length - 1");
      expect("query", query, "a valid program of at most " + ns + " steps");
      expect("result", result, "none: follows from the closure fact in facts.complete");
    } else {
      allow({"seconds"});
      expect("query", query, "a valid program of exactly " + ns + " steps");
      expect("result", result, "unsat");
    }
    claim = solver + ": no valid program of " + (closure ? "at most " : "exactly ") + ns + " steps";
  } else {
    if (closure) {
      if (sf.closure_programs >= 0) reject(at + ": two closure facts for " + solver);
      if (bound != L) reject(at + ".bound: the closure is for max_size");
      allow({"seconds", "programs", "states", "steps", "conclusion"});
      const long long P = as_int(f["programs"], 0, 1LL << 40, at + ".programs");
      const std::string S = std::to_string(as_int(f["states"], 0, 1LL << 40, at + ".states"));
      const std::string E = std::to_string(as_int(f["steps"], 0, 1LL << 40, at + ".steps"));
      // The per-level closure's states: with a per-level form, and since the summed-levels
      // encoding, also with summed levels (certificates before it name the per-level form alone).
      const auto closure_query = [&](bool summed) {
        return "from each of the " + S + " reachable states (depth < " + ns + ", not the goal" +
               (sym ? std::string(", with a per-level form: row-uniform, rows fixed to level digits") +
                          (summed ? std::string(", ") + kSummedLevelsText : std::string())
                    : std::string()) +
               "), a valid step other than the " + E +
               " listed ones with their successors (from states first reached at depth " + std::to_string(bound - 1) +
               ": a valid step to the goal other than the listed ones)";
      };
      sf.summed = sym && query == closure_query(true);
      if (!sf.summed) expect("query", query, closure_query(false));
      // The per-level text names the model's section; certificates written before it moved to
      // docs/model.md named "SPEC section 4" for the same section and are read as they are.
      const auto conclusion = [&](const char* section) {
        return "by induction on the length, every valid program of at most " + ns + " steps" +
               (sym ? " of the per-level encoding" : "") +
               " is a path of the closed state graph, whose paths are exactly the " + std::to_string(P) +
               " listed programs" +
               (sym ? std::string(" (every other reachable state is a dead end of the reference semantics; the "
                                  "per-level encoding is ") +
                          section + " on the states it represents: encodings/README.md)"
                    : std::string());
      };
      const std::string got_conclusion = str(f["conclusion"], at + ".conclusion");
      // (Summed-levels certificates came later: only the current text.)
      if (!(sym && !sf.summed && got_conclusion == conclusion("SPEC section 4")))
        expect("conclusion", got_conclusion, conclusion("docs/model.md section 4"));
      sf.closure_programs = P;
      claim = solver + ": the state graph of " + S + " states and " + E + " steps is closed" +
              (sym ? " in the per-level encoding" : "") + ", so the " + std::to_string(P) + " programs are all up to " +
              ns + " steps (unsat)";
    } else {
      if (sf.complete.count(bound)) reject(at + ": bound " + ns + " given twice for " + solver);
      allow({"seconds", "bound_seconds", "programs"});
      const long long P = as_int(f["programs"], 0, 1LL << 40, at + ".programs");
      expect("query", query,
             "another valid program of exactly " + ns + " steps after blocking the " + std::to_string(P) +
                 (confirm ? " listed" : " found"));
      sf.complete[bound] = P;
      claim =
          solver + ": exactly " + std::to_string(P) + " valid programs of " + ns + " steps (unsat after blocking them)";
    }
    expect("result", result, "unsat");
  }
  cl.add(at.substr(at.find("facts")), claim + ", " + str(f["version"], "") + " " + str(f["settings"], ""), "recorded");
}

// The facts section: the solvers' answers are recorded; shortest, minimal, complete_up_to and the
// enumerator's count are re-derived by the checker's own enumeration when the instance is small
// enough (kMaxApplied), else checked against the solver facts and reported as recorded.
std::string check_facts(const json& f, const Hierarchy& h, const std::string& mc, const State& goal, int n, int L,
                        const std::string& notation, const Claims& cl,
                        const std::vector<std::shared_ptr<const Replayed>>& trace) {
  fields(f, "facts", {"enumerator", "found_by", "shortest", "minimal", "no_shorter", "complete_up_to", "complete"},
         {"proofs"});
  fields(f["enumerator"], "facts.enumerator", {"found", "programs", "nodes"});
  if (!boolean(f["enumerator"]["found"], "facts.enumerator.found"))
    reject("facts.enumerator.found: a certificate is only written for a program the enumerator found");
  const long long programs = as_int(f["enumerator"]["programs"], 1, 1LL << 40, "facts.enumerator.programs");
  as_int(f["enumerator"]["nodes"], 0, 1LL << 62, "facts.enumerator.nodes");
  cl.add("facts.enumerator.nodes", "the enumerator's search statistic", "recorded");
  std::map<std::string, SolverFacts> by;
  for (const char* list : {"found_by", "no_shorter", "complete"}) {
    const json& a = f[list];
    if (!a.is_array()) reject(std::string("facts.") + list + ": not an array");
    for (std::size_t i = 0; i < a.size(); ++i)
      read_fact(a[i], cl.prefix + "facts." + list + "[" + std::to_string(i) + "]", list, n, L, by, cl);
  }
  if (by.empty()) reject("facts: no solver facts (not a certificate)");
  if (cl.ctx->in_directory) {  // the run's solvers (manifest options) each answered, and no other
    for (const auto& solver : cl.ctx->solvers)
      if (!by.count(solver))
        reject("facts: no facts of " + solver + ", which the run asked (manifest options.solvers)");
    for (const auto& [solver, sf] : by)
      if (std::find(cl.ctx->solvers.begin(), cl.ctx->solvers.end(), solver) == cl.ctx->solvers.end())
        reject("facts: facts of " + solver + ", which the run did not ask (manifest options.solvers)");
  }
  if (f.contains("proofs")) {
    if (!f["proofs"].is_array()) reject("facts.proofs: not an array");
    for (const auto& p : f["proofs"]) {
      if (str(p, "facts.proofs").empty() || p.get<std::string>().find('/') != std::string::npos)
        reject("facts.proofs: a file name beside the certificate expected");
      if (cl.ctx->in_directory &&
          std::find(cl.ctx->files.begin(), cl.ctx->files.end(), p.get<std::string>()) == cl.ctx->files.end())
        reject("facts.proofs: " + p.get<std::string>() + " is not in the directory's manifest");
    }
    cl.add("facts.proofs",
           cl.ctx->in_directory ? "cvc5 proof files, present beside the certificate with the manifest's hashes (their "
                                  "content is not checked)"
                                : "cvc5 proof files beside the certificate (check the directory to see them hashed)",
           "recorded");
  }
  // Facts of the per-level encoding: it applies to this instance (levels of cardinality 1 or 2,
  // Master steps AllReduce only) and the program passes only states it represents.
  if (std::any_of(by.begin(), by.end(), [](const auto& e) { return e.second.method == "symbolic-closure"; })) {
    if (std::any_of(h.cards.begin(), h.cards.end(), [](int c) { return c > 2; }))
      reject(
          "facts: symbolic-closure facts on a hierarchy with a level of cardinality above 2 (the per-level "
          "encoding is for levels of cardinality 1 or 2)");
    if (mc != "allreduce") reject("facts: symbolic-closure facts with --master-collectives all");
    for (std::size_t t = 0; t < trace.size(); ++t)
      if (!trace[t]->per_level)
        reject("facts: symbolic-closure facts, but the state after step " + std::to_string(t) +
               " has no per-level form (not row-uniform, or its rows are not fixed to level digits)");
    const bool summed = std::any_of(by.begin(), by.end(), [](const auto& e) { return e.second.summed; });
    if (summed)
      for (std::size_t t = 0; t < trace.size(); ++t)
        if (!trace[t]->summed)
          reject("facts: symbolic-closure facts over summed levels, but after step " + std::to_string(t) +
                 " some device's columns are not those of the devices that agree with it outside a set of levels");
    cl.add(
        "facts",
        std::string("the per-level encoding applies: levels of cardinality 1 or 2, and every state of the program is "
                    "row-uniform with its rows fixed to level digits") +
            (summed ? std::string(" and ") + kSummedLevelsText : std::string()),
        "re-derived");
  }
  // Each solver: accepts the program, answers for every length up to max_size, and its
  // no-shorter facts are exactly the lengths below n where it found no program.
  std::string solvers;
  std::vector<long long> by_len;  // programs per length, as the solvers state them
  for (const auto& [solver, sf] : by) {
    solvers += (solvers.empty() ? "" : "+") + solver;
    if (!sf.found) reject("facts.found_by: " + solver + " has facts but does not accept the program");
    std::vector<long long> mine(static_cast<std::size_t>(L) + 1, 0);
    std::vector<int> want_ns;
    if (sf.method == "closure" || sf.method == "symbolic-closure") {
      if (sf.closure_programs < 0) reject("facts.complete: no closure fact for " + solver);
      if (sf.closure_programs != programs)
        reject("facts.complete: " + solver + "'s closure lists " + std::to_string(sf.closure_programs) +
               " programs, the enumerator " + std::to_string(programs));
      // "No valid program of at most n - 1 steps" belongs to the shortest programs only.
      if (n > 1 && f["shortest"].is_number_integer() && f["shortest"].get<long long>() == n) want_ns.push_back(n - 1);
    } else {
      long long total = 0;
      for (int b = 1; b <= L; ++b) {
        if (!sf.complete.count(b))
          reject("facts.complete: " + solver + " has no answer for length " + std::to_string(b));
        mine[b] = sf.complete.at(b);
        total += mine[b];
        if (b < n && mine[b] == 0) want_ns.push_back(b);
      }
      if (sf.complete.size() != static_cast<std::size_t>(L)) reject("facts.complete: lengths beyond max_size");
      if (total != programs)
        reject("facts.complete: " + solver + " counts " + std::to_string(total) + " programs, the enumerator " +
               std::to_string(programs));
      if (!by_len.empty() && by_len != mine) reject("facts.complete: the solvers count different programs per length");
      by_len = mine;
    }
    auto got = sf.no_shorter;
    std::sort(got.begin(), got.end());
    if (got != want_ns) reject("facts.no_shorter: " + solver + "'s lengths do not follow from its complete facts");
  }
  // Re-derive by enumeration.
  std::vector<long long> cnt;
  std::string how_count = "recorded";
  // The counts depend only on the hierarchy, the goal, the collectives and the bound: computed
  // once per process for the certificates of one run (a directory holds one per program).
  // The first worker to need a count computes it; the others wait for it rather than repeat it.
  using Counted = std::optional<std::vector<long long>>;
  static std::mutex cache_mutex;
  static std::map<std::string, std::shared_future<Counted>> cache;
  const std::string key = mc + "/" + std::to_string(L) + "/" + hierarchy_key(h);
  std::shared_future<Counted> pending;
  std::promise<Counted> mine;
  bool compute = false;
  {
    const std::lock_guard<std::mutex> lock(cache_mutex);
    if (auto it = cache.find(key); it != cache.end()) {
      pending = it->second;
    } else {
      pending = mine.get_future().share();
      cache.emplace(key, pending);
      compute = true;
    }
  }
  if (compute) {
    try {
      State init(goal.size(), Dev(goal.size(), Row(goal.size(), false)));
      for (std::size_t d = 0; d < goal.size(); ++d)
        for (std::size_t r = 0; r < goal.size(); ++r) init[d][r][d] = true;
      const auto ins = instruction_set(h, mc);
      Counter counter{ins, goal};
      mine.set_value(counter.count(init, L));
    } catch (const Budget&) {
      mine.set_value(std::nullopt);
    } catch (...) {
      mine.set_exception(std::current_exception());
    }
  }
  const Counted counted = pending.get();
  if (counted) {
    cnt = *counted;
    how_count = "re-derived";
  } else {
    cnt = by_len;  // closure-only facts and a large instance: nothing to compare against but the facts
  }
  long long total = 0;
  int shortest = 0;
  for (std::size_t l = 1; l < cnt.size(); ++l) {
    total += cnt[l];
    if (!shortest && cnt[l]) shortest = static_cast<int>(l);
  }
  if (how_count == "re-derived") {
    if (total != programs)
      reject("facts.enumerator.programs: " + std::to_string(programs) + ", but the checker's enumeration finds " +
             std::to_string(total) + " valid programs of at most " + std::to_string(L) + " steps");
    if (!by_len.empty() && by_len != cnt)
      reject("facts.complete: the solvers' programs per length differ from the checker's enumeration");
  }
  const long long sh = as_int(f["shortest"], 0, kMaxSteps, "facts.shortest");
  const bool minimal = boolean(f["minimal"], "facts.minimal");
  const long long upto = as_int(f["complete_up_to"], 0, kMaxSteps, "facts.complete_up_to");
  if (upto != L)
    reject("facts.complete_up_to: " + std::to_string(upto) + ", but the search bound max_size is " + std::to_string(L));
  if (cnt.empty()) {  // closure facts only, instance too large: shortest from the no-shorter facts
    shortest = n;
    for (const auto& [solver, sf] : by)
      if (std::find(sf.no_shorter.begin(), sf.no_shorter.end(), n - 1) == sf.no_shorter.end() && n > 1)
        shortest = 0;  // unknown
  }
  if (shortest && sh != shortest)
    reject("facts.shortest: " + std::to_string(sh) + ", but the shortest valid program has " +
           std::to_string(shortest) + " steps");
  if (!shortest) shortest = static_cast<int>(sh);
  if (shortest > n) reject("facts.shortest: longer than this program");
  if (minimal != (n == shortest))
    reject(std::string("facts.minimal: ") + (minimal ? "true" : "false") + ", but the program has " +
           std::to_string(n) + " steps and the shortest " + std::to_string(shortest));
  const char* how = how_count == "re-derived" ? "re-derived" : "recorded";
  cl.add("facts.enumerator.programs",
         std::to_string(programs) + " valid programs of at most " + std::to_string(L) + " steps", how);
  cl.add("facts.shortest", "the shortest valid program has " + std::to_string(shortest) + " steps", how);
  cl.add("facts.minimal", std::string("this program is ") + (minimal ? "" : "not ") + "among the shortest", how);
  cl.add("facts.complete_up_to",
         "no valid program of at most " + std::to_string(L) + " steps besides the " + std::to_string(programs), how);
  std::string s = std::string("facts: ") + (minimal ? "minimal" : "not minimal") + " (" + how + "), shortest " +
                  std::to_string(shortest) + " (" + how + "), complete_up_to " + std::to_string(L) + " with " +
                  std::to_string(programs) + " programs (" +
                  (how_count == "re-derived" ? "re-derived by enumeration" : "not enumerated: instance too large") +
                  "); solver answers recorded by " + solvers + ", not re-checked";
  (void)notation;
  return s;
}

// ---- docs/shape.md §3.3, "programs that stay in G'_1": every state of the program on this
// hierarchy, the initial one included, is row-uniform, has the agreement form (S), (U), (P), (M),
// (C) of §3.2, and holds Lemma 1's rows for the level set D tracked along the program (D := D u V
// after a ReduceScatter over the levels V its groups vary, D \ V after an AllGather); and no
// Broadcast gives rows to an empty member that is non-zero on a level of D n V. Written here from
// the definitions, not shared with the engine, whose claim it re-derives. ----
constexpr int kMaxG1Devices = 32;  // the engine replays up to this many devices (kMaxG1ReplayDevices)
unsigned agreement(const Hierarchy& h, int x, int j) {
  unsigned p = 0;
  for (std::size_t l = 0; l < h.cards.size(); ++l) p |= static_cast<unsigned>(h.coords[x][l] == h.coords[j][l]) << l;
  return p;
}
bool in_g1(const Hierarchy& h, const State& s, unsigned D) {
  const int k = static_cast<int>(h.coords.size()), n = static_cast<int>(h.cards.size());
  const unsigned all = (1u << n) - 1;
  long long size = k;
  for (int l = 0; l < n; ++l)
    if ((D >> l) & 1u) size /= h.cards[l];
  auto device_at = [&](const std::vector<int>& c) {
    for (int y = 0; y < k; ++y)
      if (h.coords[y] == c) return y;
    return -1;
  };
  std::vector<std::vector<int>> rows(k);
  std::vector<Row> cols(k);
  std::vector<std::vector<int>> B(k);  // B[x][pattern]: 1 in B_x, 0 not, -1 pattern not realised
  for (int x = 0; x < k; ++x) {
    rows[x] = rows_of(s[x]);
    if (rows[x].empty()) continue;
    cols[x] = s[x][rows[x][0]];
    for (int r : rows[x])
      if (s[x][r] != cols[x]) return false;  // not row-uniform
    if (static_cast<long long>(rows[x].size()) != size) return false;
    B[x].assign(std::size_t{1} << n, -1);
    for (int j = 0; j < k; ++j) {  // (S)
      auto& b = B[x][agreement(h, x, j)];
      const int has = cols[x][j] ? 1 : 0;
      if (b >= 0 && b != has) return false;
      b = has;
    }
    for (unsigned p = 0; p <= all; ++p)  // (U)
      for (int l = 0; l < n; ++l)
        if (B[x][p] == 1 && B[x][p | (1u << l)] == 0) return false;
  }
  for (int x = 0; x < k; ++x) {
    if (rows[x].empty()) continue;
    for (int y = 0; y < k; ++y) {  // Lemma 1's rows: equal iff agreeing on D, else disjoint
      if (rows[y].empty()) continue;
      const bool agree = (agreement(h, x, y) & D) == D;
      if (agree ? rows[x] != rows[y]
                : std::find_first_of(rows[x].begin(), rows[x].end(), rows[y].begin(), rows[y].end()) != rows[x].end())
        return false;
    }
    for (int l = 0; l < n; ++l) {  // (P), (M)
      if (h.coords[x][l] == 0) continue;
      auto c = h.coords[x];
      c[l] = 0;
      const int y = device_at(c);
      if (y < 0 || rows[y].empty()) return false;
      for (unsigned p = 0; p <= all; ++p)
        if (B[x][p] == 1 && B[y][p] == 0) return false;
    }
  }
  for (int x = 0; x < k; ++x) {  // (C): presence and B by class (coordinates capped at 1)
    auto c = h.coords[x];
    for (auto& v : c) v = std::min(v, 1);
    const int phi = device_at(c);
    if (phi < 0 || rows[x].empty() != rows[phi].empty()) return false;
    if (!rows[x].empty() && B[x] != B[phi]) return false;
  }
  return true;
}
// `states` has the initial state and the state after each of `steps` (collective, groups).
bool stays_in_g1(const Hierarchy& h, const std::vector<State>& states,
                 const std::vector<std::pair<std::string, Groups>>& steps) {
  const int n = static_cast<int>(h.cards.size());
  unsigned D = 0;
  if (!in_g1(h, states[0], D)) return false;
  for (std::size_t t = 0; t < steps.size(); ++t) {
    const auto& [col, g] = steps[t];
    unsigned V = 0;
    for (const auto& grp : g)
      for (int x : grp)
        for (int l = 0; l < n; ++l) V |= static_cast<unsigned>(h.coords[x][l] != h.coords[grp[0]][l]) << l;
    if (col == "Broadcast")
      for (const auto& grp : g)
        for (int x : grp)
          if (rows_of(states[t][x]).empty())
            for (int l = 0; l < n; ++l)
              if ((((D & V) >> l) & 1u) && h.coords[x][l] != 0) return false;
    if (col == "ReduceScatter") D |= V;
    if (col == "AllGather") D &= ~V;
    if (!in_g1(h, states[t + 1], D)) return false;
  }
  return true;
}

// What check_shape reads from the instance check() derives (filled when non-null).
struct InstanceFacts {
  bool master_grouping = false;  // the enumerator's instructions include a Master grouping
  std::size_t devices = 0;
  bool stays_g1 = false;  // the program's states stay in G'_1 (stays_in_g1 below; `all`, <= kMaxG1Devices)
};

std::string check(const json& c, const Claims& cl, InstanceFacts* derived = nullptr) {
  if (!c.is_object()) reject("not a JSON object");
  fields(c, cl.prefix.empty() ? "certificate" : "instance",
         {"format", "system", "levels", "axes", "reduce", "matrix", "master_collectives", "max_size", "hierarchy",
          "goal_groups", "program", "lowered", "states", "facts"});
  if (str(c["format"], "format") != "p2v-certificate/1") reject("format: not p2v-certificate/1");
  const Placement p = read_placement(c);
  const std::vector<std::string> level_names = read_system(c["system"], p.levels, cl, "system");
  const json& hj = c["hierarchy"];
  fields(hj, "hierarchy", {"kind", "cards", "names"});
  const std::string kind = str(hj["kind"], "hierarchy.kind");
  const Hierarchy h = derive_hierarchy(p, kind);
  if (int_list(hj["cards"], 0, kMaxDevices, "hierarchy.cards") != h.cards)
    reject("hierarchy: recorded cardinalities do not follow from the matrix and reduction axes");
  const std::vector<std::string> names = hierarchy_names(p, level_names, kind, h);
  // Where two kinds give the same hierarchy on this placement (e.g. (a) and (d) with every axis
  // reduced), the kind is a label the rest of the certificate cannot bind: say so.
  for (const char* other : {"a", "b", "c", "d", "d-uncollapsed"}) {
    if (other == kind || ((kind == "d" || kind == "d-uncollapsed") && p.reduce.empty())) continue;
    Hierarchy o;
    try {
      o = derive_hierarchy(p, other);
    } catch (const Reject&) {
      continue;  // too large to compare: then it is not this hierarchy (which the checker replays)
    }
    if (o.cards == h.cards && o.coords == h.coords && o.copies == h.copies && o.goal == h.goal &&
        hierarchy_names(p, level_names, other, o) == names)
      cl.add(
          "hierarchy.kind",
          "the kind's name (" + kind + " and " + other + " give the same hierarchy here, so the claims are the same)",
          "recorded");
  }
  if (!hj["names"].is_array() || hj["names"].size() != names.size()) reject("hierarchy.names: one per level expected");
  for (std::size_t l = 0; l < names.size(); ++l)
    if (str(hj["names"][l], "hierarchy.names") != names[l])
      reject("hierarchy.names[" + std::to_string(l) + "]: expected \"" + names[l] +
             "\" (from the system's level names)");
  const int k = static_cast<int>(h.coords.size()), n = static_cast<int>(h.cards.size());
  if (groups_of(c["goal_groups"], k, "goal_groups") != h.goal)
    reject("goal: recorded goal groups differ from the reduction groups of the placement");
  const std::string mc = str(c["master_collectives"], "master_collectives");
  if (mc != "allreduce" && mc != "all") reject("master_collectives: expected allreduce or all");
  const int L = static_cast<int>(as_int(c["max_size"], 1, kMaxSteps, "max_size"));

  const json& prog = c["program"];
  fields(prog, "program", {"size", "notation", "steps"});
  const json& steps = prog["steps"];
  if (!steps.is_array() || steps.empty() || steps.size() > static_cast<std::size_t>(L))
    reject("program.steps: 1..max_size steps expected");
  if (as_int(prog["size"], 1, kMaxSteps, "program.size") != static_cast<long long>(steps.size()))
    reject("program.size differs from the number of steps");
  const json& lowered = c["lowered"];
  const json& states = c["states"];
  if (!lowered.is_array() || lowered.size() != steps.size()) reject("lowered: one entry per step expected");
  if (!states.is_array() || states.size() != steps.size() + 1)
    reject("states: one entry per step plus the initial state expected");
  const auto ins = instruction_set(h, mc);
  if (derived) {
    derived->master_grouping = std::any_of(ins.begin(), ins.end(), [](const Ins& in) { return in.form == "Master"; });
    derived->devices = static_cast<std::size_t>(k);
  }

  // Goal state.
  std::string prefix = hierarchy_key(h);
  const std::shared_ptr<const State> goal_p = goal_state(h, prefix);
  const State& goal = *goal_p;
  // The replay, memoised by program prefix: the initial state of this hierarchy, then each
  // step's successor (replay_node).
  std::shared_ptr<const Replayed> node = replay_node(prefix, nullptr, h, goal, "", {});

  // Recorded states must be the replayed ones, in the writer's exact text.
  auto compare = [&](std::size_t t) {
    const json& st = states[t];
    if (!st.is_array() || st.size() != static_cast<std::size_t>(k))
      reject("states[" + std::to_string(t) + "]: one entry per device expected");
    for (int d = 0; d < k; ++d) {
      const json& rec = st[d];
      if (!rec.is_string()) reject("states: not a string");
      if (rec.get_ref<const std::string&>() != node->text[d])
        reject("state after step " + std::to_string(t) + ", device " + std::to_string(d) + ": recorded \"" +
               rec.get<std::string>() + "\", replayed " + describe(unpack(node->bits, k)[d]) + " (\"" + node->text[d] +
               "\")");
    }
  };
  compare(0);
  std::vector<std::shared_ptr<const Replayed>> trace{node};    // for the per-level premise of symbolic facts
  std::vector<std::pair<std::string, Groups>> replayed_steps;  // for the G'_1 replay
  std::string notation;
  for (std::size_t t = 0; t < steps.size(); ++t) {
    const std::string at = "program.steps[" + std::to_string(t) + "]";
    const json& sj = steps[t];
    fields(sj, at, {"name", "collective", "slice", "form", "e", "groups"});
    const std::string col = str(sj["collective"], at + ".collective");
    if (std::find(std::begin(kCollectives), std::end(kCollectives), col) == std::end(kCollectives))
      reject(at + ".collective: unknown collective '" + col + "'");
    const std::string form = str(sj["form"], at + ".form");
    const int slice = static_cast<int>(as_int(sj["slice"], 0, n - 2, at + ".slice"));
    int e = -1;
    if (form == "Parallel" || form == "Master")
      e = static_cast<int>(as_int(sj["e"], 0, slice - 1, at + ".e"));
    else if (form != "Inside")
      reject(at + ": unknown form '" + form + "'");
    else if (as_int(sj["e"], -1, -1, at + ".e") != -1)
      reject(at + ".e: -1 for Inside");
    if (form == "Master" && mc == "allreduce" && col != "AllReduce") reject(at + ": Master carries AllReduce only");
    const Groups g = form_groups(h, slice, form, e);
    if (groups_of(sj["groups"], k, at + ".groups") != g)
      reject(at + ": recorded groups are not the groups of (slice " + std::to_string(slice) + ", " + form + ")");
    if (std::none_of(ins.begin(), ins.end(),
                     [&](const Ins& i) { return i.col == col && i.slice == slice && i.form == form && i.e == e; }))
      reject(at + ": not an instruction of the enumerator (all singletons, or the groups of an earlier (slice, form))");
    // The notation, rendered here from the step.
    const std::string name = col + "@(" + names[slice] + "," +
                             (form == "Inside" ? std::string("Inside") : form + "(" + names[e] + ")") + ")";
    if (str(sj["name"], at + ".name") != name) reject(at + ".name: expected \"" + name + "\" (rendered from the step)");
    notation += (t ? " ; " : "") + name;
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
    fields(lowered[t], "lowered[" + std::to_string(t) + "]", {"collective", "groups"});
    if (str(lowered[t]["collective"], "lowered.collective") != col ||
        groups_of(lowered[t]["groups"], p.devices, "lowered.groups") != low)
      reject(at + ": lowered groups or collective do not match the step");
    if (node->goal) reject(at + ": the program continues past the goal");
    prefix += "|" + col + "," + std::to_string(slice) + "," + form + "," + std::to_string(e);
    node = replay_node(prefix, node, h, goal, col, g);
    if (!node->why.empty()) reject(at + " " + node->why);
    compare(t + 1);
    trace.push_back(node);
    replayed_steps.emplace_back(col, g);
  }
  if (!node->goal) reject("the final state is not the goal");
  if (derived && mc == "all" && k <= kMaxG1Devices) {
    std::vector<State> states_along;
    for (const auto& r : trace) states_along.push_back(unpack(r->bits, static_cast<std::size_t>(k)));
    derived->stays_g1 = stays_in_g1(h, states_along, replayed_steps);
  }
  if (str(prog["notation"], "program.notation") != notation)
    reject("program.notation: differs from the notation rendered from the steps (\"" + notation + "\")");
  cl.add("program", "the program is valid on the placement and reaches the goal: " + notation, "replayed");
  cl.add("program.notation", "the text shown and run is the program's", "re-derived");
  const std::string facts =
      check_facts(c["facts"], h, mc, goal, static_cast<int>(steps.size()), L, notation, cl, trace);
  return notation + "\n  " + facts;
}

// ---- certificates at any size (docs/shape.md): the real placement is only read, never replayed;
// its shape is re-derived here, the smallest instance is checked in full by check(), and every
// step's level pattern is re-derived from the real matrix. ----
constexpr long long kMaxShapeDevices = 1 << 20;
const char* const kReliesOn0 =
    "docs/shape.md section 3 (Theorem 1: validity, states and goal depend only on the shape; the smallest "
    "instance's device l stands for the class of devices that are 0 exactly where l is 0)";
const char* const kReliesOn2 =
    "docs/shape.md section 4 (the groups of a step on any instance are the level pattern recorded in steps[])";

// ---- relies_on[1], the shape theorem's basis (docs/shape.md §3-§3.6), re-derived from the shape's
// depth and cardinalities, the Master setting, the program's Master steps and the smallest instance's
// Master groupings, with the proved depths of docs/shape.md: the default setting's validity and
// completeness to depth 6 (§3.2), `all` at depth <= 2 (§3.4) and at depths 3 and 4 on instances whose
// cardinalities >= 2 are equal (§3.5, §3.6, for this instance only), and §3.3's G' replay (an `all`
// program whose states on the smallest instance stay in G' with Lemma 1's rows), which check()
// re-derives by its own replay (stays_in_g1) where it applies: a Master step other than AllReduce,
// depth >= 3, at most kMaxG1Devices devices. ----
// The default setting's proved depth (docs/shape.md §3.2: the finite part of Lemmas 4-6, the exits of the
// smallest instances, computed up to depth 6).
constexpr int kMaxDefaultDepth = 6;
struct BasisFacts {
  int depth = 0;
  bool default_setting = true, master_step = false, master_allreduce_only = true, master_grouping = false;
  std::vector<long long> nontrivial;  // the shape's cardinalities >= 2, outermost first
  // The devices are numbered in the (d) levels' order (docs/shape.md §3.5 "Device numbering"): always for a
  // collapsed (d); for an uncollapsed one iff its non-trivial levels, (axis i, system level j), ascend in (j, i).
  bool level_order = true;
  // ... or in the reverse order: their non-trivial levels descend in (j, i) (docs/shape.md §3.6 "Device
  // numbering at depth 4"); both proved at depth 4, the other orders not.
  bool reverse_order = false;
};
std::string expected_basis(const BasisFacts& f, bool stays_g1) {
  const int d = f.depth;
  const bool by_default = f.default_setting || f.master_allreduce_only;
  // Theorem 4 (docs/shape.md §3.5 at depth 3, every numbering; §3.6 at depth 4, with or without a trivial leaf,
  // devices numbered in level order or its reverse): the instances whose cardinalities >= 2 are equal.
  const bool equal3 =
      !f.default_setting && (d == 3 || (d == 4 && (f.level_order || f.reverse_order))) &&
      std::all_of(f.nontrivial.begin(), f.nontrivial.end(), [&](long long v) { return v == f.nontrivial[0]; });
  const bool all_depth2 = !f.default_setting && d <= 2;
  const bool valid_shape = !f.master_step || (by_default && d <= kMaxDefaultDepth) || stays_g1 || all_depth2;
  const bool complete_shape = !f.master_grouping || (f.default_setting && d <= kMaxDefaultDepth) || all_depth2;
  const std::string ds = std::to_string(d), maxd = std::to_string(kMaxDefaultDepth);
  const std::string all_text =
      "proved (section 3.4: --master-collectives all at depth <= 2, the tuple model M; depth " + ds + ")";
  std::string equal_text;
  std::string cards;
  for (long long v : f.nontrivial) cards += (cards.empty() ? "" : " ") + std::to_string(v);
  if (equal3 && d == 3)
    equal_text =
        "proved (section 3.5, Theorem 4: --master-collectives all at depth 3 on the instances whose three "
        "cardinalities >= 2 are equal, the tuple model M3, its finite part for every cardinality on types, "
        "section 3.6; this instance: " +
        cards + ")";
  else if (equal3)
    equal_text =
        "proved (section 3.6, Theorem 4 at depth 4: --master-collectives all on the instances whose four "
        "cardinalities >= 2 are equal, the tuple model M4; this instance: " +
        cards + (f.reverse_order ? ", devices numbered in reverse level order (Device numbering at depth 4)" : "") +
        "; its finite part runs on request, not in CI)";
  // A claim with Master steps (groupings) in it: proved by §3.2 in the default setting, by §3.3's
  // reduction to it when every Master step is an AllReduce, else checked.
  auto masterful = [&](const std::string& claim, bool proved, const std::string& proof, const std::string& unproved,
                       bool covered_by_default) {
    if (proved && f.default_setting)
      return claim + ": proved (section 3.2, " + proof + "; default Master setting, depth " + ds + " <= " + maxd + ")";
    if (proved)
      return claim +
             ": proved (section 3.3: its Master steps are all AllReduce, so it is a program of the default "
             "setting; section 3.2, " +
             proof + ", depth " + ds + " <= " + maxd + ")";
    return claim + ": " + unproved + " (" +
           (covered_by_default ? "depth " + ds + " > " + maxd : "--master-collectives all") + ")";
  };
  const std::string v_claim = "valid on every instance of the shape";
  std::string valid;
  if (!f.master_step)
    valid = v_claim + ": proved (Theorem 1(b) without Master steps, section 3)";
  else if (all_depth2)
    valid = v_claim + ": " + all_text;
  else if (stays_g1)
    valid = v_claim +
            ": proved (section 3.3, Lemmas 3' and 2(b)': every state of this program on the smallest "
            "instance is in G' with Lemma 1's rows)";
  else
    valid = masterful(v_claim, valid_shape, "programs of the smallest instance are programs of every instance",
                      "checked, not proved, section 3.2", by_default);
  if (equal3 && !valid_shape) valid = "valid on this instance: " + equal_text + "; " + valid;
  const std::string c_claim = "no other program on any instance";
  std::string complete;
  if (!f.master_grouping)
    complete = c_claim + ": proved (no Master grouping, section 3)";
  else if (all_depth2)
    complete = c_claim + ": " + all_text;
  else
    complete = masterful(c_claim, complete_shape, "Lemma 2(a) on every instance of depth <= " + maxd,
                         f.default_setting ? "rests on section 3.2's Lemma 2(a), checked, not proved"
                                           : "checked, not proved, section 3.3",
                         f.default_setting);
  if (equal3 && !complete_shape) complete = "no other program on this instance: " + equal_text + "; " + complete;
  return "docs/shape.md: " + valid + "; " + complete;
}

std::string check_shape(const json& c, const Claims& cl) {
  fields(c, "certificate",
         {"format", "system", "axes", "reduce", "matrix", "hierarchy_kind", "shape", "program", "steps", "relies_on",
          "instance"});
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
  read_system(sys, levels, cl, "system");
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

  // The shape (docs/model.md §3 (d), docs/shape.md §2): names and cardinalities of the (d) levels.
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
  fields(c["shape"], "shape", {"signature", "levels"});
  std::string signature = kind + ":";
  for (std::size_t l = 0; l < names.size(); ++l) signature += " " + names[l] + (cards[l] == 1 ? ":1" : ":*");
  if (str(c["shape"]["signature"], "shape.signature") != signature)
    reject("shape.signature: expected \"" + signature + "\" (from the shape's levels)");
  const json& rl = field(field(c, "shape"), "levels");
  if (!rl.is_array() || rl.size() != names.size()) reject("shape.levels: do not follow from the placement");
  for (std::size_t l = 0; l < names.size(); ++l)
    if ((fields(rl[l], "shape.levels[" + std::to_string(l) + "]", {"name", "cardinality"}), false) ||
        str(field(rl[l], "name"), "shape level") != names[l] ||
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
  if (str(field(field(inst, "system"), "name"), "instance.system.name") != "smallest instance of " + signature)
    reject("instance.system.name: expected \"smallest instance of " + signature + "\"");
  // The full replay of the smallest instance (states, goal, groups, facts).
  InstanceFacts ifacts;
  const std::string inst_summary = check(inst, Claims{cl.out, "instance.", cl.ctx}, &ifacts);
  const json& rel = c["relies_on"];
  if (!rel.is_array() || rel.size() != 3) reject("relies_on: three entries expected");
  for (std::size_t i = 0; i < 3; ++i) str(rel[i], "relies_on");
  if (rel[0] != kReliesOn0 || rel[2] != kReliesOn2)
    reject("relies_on: not the sections of docs/shape.md the claim rests on");
  {
    BasisFacts f;
    std::pair<int, int> prev{-1, -1};  // (system level, axis) of the previous non-trivial (d) level
    bool descending = kind == "d-uncollapsed";
    for (std::size_t l = 0; l < cards.size(); ++l)
      if (cards[l] >= 2) {
        ++f.depth;
        f.nontrivial.push_back(cards[l]);
        if (kind == "d-uncollapsed") {
          const std::pair<int, int> at{parts[l][0].second, parts[l][0].first};
          f.level_order = f.level_order && prev < at;
          descending = descending && (f.depth == 1 || at < prev);
          prev = at;
        }
      }
    f.reverse_order = descending && !f.level_order;
    f.default_setting = str(field(inst, "master_collectives"), "instance.master_collectives") == "allreduce";
    for (const auto& st : field(field(inst, "program"), "steps"))
      if (str(field(st, "form"), "instance step form") == "Master") {
        f.master_step = true;
        f.master_allreduce_only &= str(field(st, "collective"), "instance step collective") == "AllReduce";
      }
    f.master_grouping = ifacts.master_grouping;
    const std::string text = str(rel[1], "relies_on");
    // §3.3's G' replay applies to `all` programs with a Master step other than AllReduce, from depth 3
    // on, replayed on at most kMaxG1Devices devices; check() replayed it on the smallest instance.
    const bool g1 = !(f.default_setting || f.master_allreduce_only) && f.depth > 2 && f.master_step &&
                    ifacts.devices <= static_cast<std::size_t>(kMaxG1Devices) && ifacts.stays_g1;
    if (text != expected_basis(f, g1))
      reject("relies_on[1]: not the shape theorem's basis for this shape, setting and program (expected \"" +
             expected_basis(f, g1) + "\")");
    cl.add("relies_on[1]",
           g1 ? "the shape theorem's basis for this program (section 3.3: its states on the smallest instance, "
                "replayed, stay in G' with Lemma 1's rows)"
              : "the shape theorem's basis for this program",
           "re-derived");
  }

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
    fields(sj, at, {"collective", "slice", "form", "vary", "master", "group_size", "num_groups"});
    if (str(field(sj, "collective"), at) != str(field(ij, "collective"), at))
      reject(at + ": collective differs from the instance's");
    const int slice = static_cast<int>(as_int(field(ij, "slice"), 0, n - 1, at + ".slice"));
    const std::string form = str(field(ij, "form"), at + ".form");
    const int e = static_cast<int>(as_int(field(ij, "e"), -1, slice - 1, at + ".e"));
    if (str(field(sj, "slice"), at) != names[slice]) reject(at + ": slice differs from the instance's");
    const std::string fname = form == "Inside" ? "Inside" : form + "(" + names[e < 0 ? 0 : e] + ")";
    if (str(field(sj, "form"), at) != fname) reject(at + ": form differs from the instance's");
    // Members differ exactly in the digits of the varying levels (docs/model.md §5), in device order.
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
      if ((fields(rv[v], at + ".vary[" + std::to_string(v) + "]", {"axis", "level", "factor"}), false) ||
          as_int(field(rv[v], "level"), 0, L - 1, at) != vary[v].first ||
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
  cl.add("steps", "each step's level pattern on the real placement", "re-derived");
  cl.add("",
         "the program is valid on every instance of the shape (docs/shape.md sections 3-4, a theorem the checker "
         "relies on, not re-proved)",
         "recorded");
  return "shape " + signature + " on " + std::to_string(devices) + " devices: " + inst_summary +
         "\n  (smallest instance replayed; level patterns re-derived; relies on docs/shape.md sections 3-4)";
}

}  // namespace

json parse_json_strict(const std::string& text) {
  // One set of keys per open object (the parser's callback sees keys in document order, depth by
  // depth); the first key seen twice in one object stops the parse.
  std::vector<std::set<std::string>> open;
  return json::parse(text, [&open](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) {
      open.emplace_back();
    } else if (ev == json::parse_event_t::object_end) {
      if (!open.empty()) open.pop_back();
    } else if (ev == json::parse_event_t::key && !open.empty()) {
      if (!open.back().insert(parsed.get_ref<const std::string&>()).second)
        throw std::invalid_argument("the key " + parsed.dump(-1, ' ', true) +
                                    " appears twice in one object (JSON readers differ on which copy they take)");
    }
    return true;
  });
}

Verdict check_certificate(const std::string& text, const Context& ctx) {
  json c;
  try {
    c = parse_json_strict(text);
  } catch (const json::exception& e) {
    return {false, std::string("malformed JSON: ") + e.what(), "", {}};
  } catch (const std::invalid_argument& e) {
    return {false, std::string("malformed JSON: ") + e.what(), "", {}};
  }
  return check_certificate(c, text, ctx);
}

Verdict check_certificate(const json& c, const std::string& text, const Context& ctx) {
  Verdict v;
  try {
    if (c.is_object() && c.contains("format") && c["format"] == kReshardCertificateFormat)
      return check_reshard_certificate(text);
    const bool shape = c.is_object() && c.contains("format") && c["format"] == "p2v-shape-certificate/1";
    const Claims cl{&v.claims, "", &ctx};
    v.summary = shape ? check_shape(c, cl) : check(c, cl);
    v.ok = true;
  } catch (const Reject& e) {
    v.reason = e.what();
  } catch (const json::exception& e) {
    v.reason = std::string("malformed JSON: ") + e.what();
  } catch (const std::exception& e) {
    v.reason = std::string("malformed certificate: ") + e.what();
  }
  if (!v.ok) v.claims.clear();
  return v;
}

Verdict check_certificate_file(const std::string& path) {
  // Read with the same 256 MiB limit as p2v's other readers (a wrong path such as /dev/zero is
  // refused instead of filling the memory).
  std::string text;
  switch (detail::read_capped(path, text)) {
    case detail::Read::CannotRead:
      return {false, "cannot read " + path, "", {}};
    case detail::Read::TooLarge:
      return {false, path + ": larger than 256 MiB, the limit for input files", "", {}};
    case detail::Read::Ok:
      break;
  }
  return check_certificate(text);
}

}  // namespace p2v::checker
