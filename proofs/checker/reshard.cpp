// The independent checker for reshard certificates (docs/model.md §10). Its own mesh and type parser and
// its own offset tables (over the user's axes, not the engine's prime split); it replays the
// program on every device's tile (a box: offset and size per dimension) with the recorded groups,
// slices and permutation, checking at every step: the groups partition the devices, have the
// rule's size, list devices holding adjacent tiles in concatenation order, the sizes divide,
// the local type matches the record, the memory bound holds; and at the end that every device
// holds exactly τ2's tile. A rejection names the step, group and device (a counterexample).
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "p2v/checker/checker.hpp"

namespace p2v::checker {
namespace {

using nlohmann::json;
using i64 = std::int64_t;

struct Bad : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct MeshAxes {
  std::vector<std::string> names;
  std::vector<i64> sizes;
  i64 devices() const {
    i64 n = 1;
    for (auto s : sizes) n *= s;
    return n;
  }
  i64 coord(i64 device, std::size_t axis) const {  // first axis most significant
    for (std::size_t a = sizes.size(); a-- > axis + 1;) device /= sizes[a];
    return device % sizes[axis];
  }
};

struct Dim {
  i64 local, global;
  std::vector<std::size_t> axes;  // minor first
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<Dim> parse_type(const std::string& t, const MeshAxes& m) {
  if (t.size() < 2 || t.front() != '[' || t.back() != ']') throw Bad("type " + t + ": not [..]");
  std::vector<Dim> dims;
  std::vector<bool> used(m.sizes.size(), false);
  std::string cur;
  int depth = 0;
  auto finish = [&](std::string e) {
    e = trim(e);
    Dim d{};
    const auto open = e.find('{');
    if (open == std::string::npos) {
      d.local = d.global = std::stoll(e);
    } else {
      const auto close = e.find('}');
      d.local = std::stoll(e.substr(0, open));
      d.global = std::stoll(e.substr(close + 1));
      std::stringstream names(e.substr(open + 1, close - open - 1));
      for (std::string n; std::getline(names, n, ',');) {
        n = trim(n);
        const auto it = std::find(m.names.begin(), m.names.end(), n);
        if (it == m.names.end()) throw Bad("type " + t + ": unknown axis " + n);
        const auto a = static_cast<std::size_t>(it - m.names.begin());
        if (used[a]) throw Bad("type " + t + ": axis " + n + " used twice");
        used[a] = true;
        d.axes.push_back(a);
      }
    }
    i64 k = 1;
    for (auto a : d.axes) k *= m.sizes[a];
    if (d.local < 1 || d.local * k != d.global) throw Bad("type " + t + ": not well-formed");
    dims.push_back(d);
  };
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i] == '{') ++depth;
    if (t[i] == '}') --depth;
    if (t[i] == ',' && depth == 0) {
      finish(cur);
      cur.clear();
    } else {
      cur += t[i];
    }
  }
  finish(cur);
  return dims;
}

struct Box {
  std::vector<i64> off, size;
  bool operator==(const Box&) const = default;
};

// docs/model.md §10 Meaning: D[c{}c](i) = 0, D[c{a,rest}n](i) = c·i_a + D[(c·|a|){rest}n](i).
Box tile(const std::vector<Dim>& t, const MeshAxes& m, i64 device) {
  Box b;
  for (const auto& d : t) {
    i64 o = 0, c = d.local;
    for (auto a : d.axes) {
      o += c * m.coord(device, a);
      c *= m.sizes[a];
    }
    b.off.push_back(o);
    b.size.push_back(d.local);
  }
  return b;
}

std::string box_str(const Box& b) {
  std::string s = "[";
  for (std::size_t i = 0; i < b.off.size(); ++i)
    s += (i ? "," : "") + std::to_string(b.off[i]) + "+" + std::to_string(b.size[i]);
  return s + "]";
}

i64 volume(const Box& b) {
  i64 v = 1;
  for (auto s : b.size) v *= s;
  return v;
}

// ---- the schema: every object has exactly its fields ----
void fields(const json& j, const std::string& where, std::initializer_list<const char*> required,
            std::initializer_list<const char*> optional = {}) {
  if (!j.is_object()) throw Bad(where + ": not an object");
  for (const char* k : required)
    if (!j.contains(k)) throw Bad(where + ": missing field '" + k + "'");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::none_of(required.begin(), required.end(), [&](const char* k) { return it.key() == k; }) &&
        std::none_of(optional.begin(), optional.end(), [&](const char* k) { return it.key() == k; }))
      throw Bad(where + ": unknown field '" + it.key() + "'");
}
i64 integer(const json& j, i64 lo, i64 hi, const std::string& what) {
  if (!j.is_number_integer()) throw Bad(what + ": not an integer");
  // above 2^63 - 1 an unsigned number would wrap to a negative i64 (2^64 - 1 read as -1)
  if (j.is_number_unsigned() && (hi < 0 || j.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)))
    throw Bad(what + ": " + std::to_string(j.get<std::uint64_t>()) + " out of range");
  const i64 v = j.get<i64>();
  if (v < lo || v > hi) throw Bad(what + ": " + std::to_string(v) + " out of range");
  return v;
}
// A recorded time: a finite number of seconds, not negative.
double seconds(const json& j, const std::string& what) {
  if (!j.is_number()) throw Bad(what + ": not a number");
  const double v = j.get<double>();
  if (!(v >= 0) || v > 1e300) throw Bad(what + ": " + j.dump() + " is not a time in seconds (finite, >= 0)");
  return v;
}
std::string text(const json& j, const std::string& what) {
  if (!j.is_string()) throw Bad(what + ": not a string");
  return j.get<std::string>();
}
std::vector<i64> integers(const json& j, i64 lo, i64 hi, const std::string& what) {
  if (!j.is_array()) throw Bad(what + ": not an array");
  std::vector<i64> v;
  for (std::size_t i = 0; i < j.size(); ++i) v.push_back(integer(j[i], lo, hi, what + "[" + std::to_string(i) + "]"));
  return v;
}

constexpr i64 kMaxDevices = 1 << 16;
const char* const kClaim = "per step: every element of the new layout comes from where the rule says";

struct Replayed {
  i64 cost = 0, peak = 0;
  std::vector<std::size_t> solver_steps;  // the steps with a solver fact (all but allpermute)
  std::vector<std::string> ops;
};

// Replays one program (the plan's or the baseline's) from `from` to `to` on the mesh.
Replayed replay(const json& prog, const std::string& where, const std::string& from_text, const std::string& to_text,
                const MeshAxes& m, i64 limit, i64 bpe, bool topology, std::vector<Claim>& claims) {
  const bool base = where == "baseline";
  fields(prog, where, {"steps", "cost", "peak", "bound"}, {"time_s"});
  if (topology != prog.contains("time_s")) throw Bad(where + ".time_s: present exactly with the topology cost model");
  if (topology) seconds(prog["time_s"], where + ".time_s");
  const i64 n = m.devices();
  const auto from = parse_type(from_text, m), to = parse_type(to_text, m);
  if (from.size() != to.size()) throw Bad("global shapes differ");
  for (std::size_t i = 0; i < from.size(); ++i)
    if (from[i].global != to[i].global) throw Bad("global shapes differ in dimension " + std::to_string(i));
  std::vector<Box> box;
  for (i64 d = 0; d < n; ++d) box.push_back(tile(from, m, d));
  const i64 bound = std::max(volume(box[0]), volume(tile(to, m, 0)));
  if (integer(prog["bound"], 0, INT64_MAX, where + ".bound") != bound)
    throw Bad("recorded bound differs from max(localsize τ1, localsize τ2) = " + std::to_string(bound));
  if (limit < bound) throw Bad("limit below the bound");
  Replayed out;
  bool sliced = false;  // the baseline has begun to dynslice
  i64 cost = 0, peak = volume(box[0]);
  const json& steps = prog["steps"];
  if (!steps.is_array()) throw Bad(where + ".steps: not an array");
  for (std::size_t k_step = 0; k_step < steps.size(); ++k_step) {
    const json& s = steps[k_step];
    const std::string at = where + ".steps[" + std::to_string(k_step) + "]";
    const std::string op = text(s.is_object() && s.contains("op") ? s["op"] : json(), at + ".op");
    if (op == "allgather" || op == "alltoall")
      fields(s, at,
             {"op", "text", "type", "local", "cost", "bytes", "group_size", "num_groups", "dims", "axes", "groups"},
             {"time_s", "level", "relabelled"});
    else if (op == "dynslice")
      fields(s, at,
             {"op", "text", "type", "local", "cost", "bytes", "group_size", "num_groups", "dims", "axes", "slice"},
             {"time_s", "level", "relabelled"});
    else if (op == "allpermute")
      fields(s, at, {"op", "text", "type", "local", "cost", "bytes", "group_size", "num_groups", "sources"},
             {"time_s", "level", "relabelled"});
    else
      throw Bad(at + ": unknown op '" + op + "'");
    if (topology != s.contains("time_s")) throw Bad(at + ".time_s: present exactly with the topology cost model");
    if (topology) seconds(s["time_s"], at + ".time_s");
    if (s.contains("level")) text(s["level"], at + ".level");
    if (s.contains("relabelled") && (!s["relabelled"].is_boolean() || !s["relabelled"].get<bool>()))
      throw Bad(at + ".relabelled: true or absent");
    const std::string where_step = (base ? "baseline step " : "step ") + std::to_string(k_step) + " (" + op + ")";
    // The baseline is the naive program, allgathers then dynslices (docs/model.md §10), gathering
    // only dimensions the redistribution changes: its cost is what the plan is compared with, so no
    // other program may stand in for it.
    if (base) {
      if (op != "allgather" && op != "dynslice") throw Bad(where_step + ": the baseline is allgathers, then dynslices");
      if (op == "allgather" && sliced)
        throw Bad(where_step + ": an allgather after a dynslice; the baseline gathers first, then slices");
      if (op == "allgather") {
        // only a dimension the redistribution changes is gathered (one both layouts tile alike
        // stays as it is)
        const auto gd = s["dims"].is_array() && s["dims"].size() == 1 && s["dims"][0].is_number_integer()
                            ? s["dims"][0].get<i64>()
                            : -1;
        bool changes = false;
        for (i64 d = 0; d < n && gd >= 0 && gd < static_cast<i64>(from.size()); ++d) {
          const Box a = tile(from, m, d), b = tile(to, m, d);
          const auto k = static_cast<std::size_t>(gd);
          changes = changes || a.off[k] != b.off[k] || a.size[k] != b.size[k];
        }
        if (gd >= 0 && !changes)
          throw Bad(where_step + ": gathers dimension " + std::to_string(gd) +
                    ", which both layouts tile alike; the baseline gathers only what the redistribution changes");
      }
      sliced = sliced || op == "dynslice";
    }
    std::vector<Box> next = box;
    const i64 before = volume(box[0]);
    i64 group_size = 1, num_groups = 0;
    std::vector<std::vector<i64>> groups;
    auto partition = [&](std::size_t dim) -> i64 {
      const json& gj = s["groups"];
      if (!gj.is_array() || gj.empty()) throw Bad(at + ".groups: non-empty array expected");
      for (const auto& g : gj) groups.push_back(integers(g, 0, n - 1, at + ".groups"));
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      const std::size_t k = groups[0].size();
      for (std::size_t g = 0; g < groups.size(); ++g) {
        const auto& grp = groups[g];
        if (grp.size() != k || k < 2)
          throw Bad(where_step + ": group " + std::to_string(g) + " has " + std::to_string(grp.size()) +
                    " devices, expected " + std::to_string(k) + " (at least 2)");
        const i64 first = grp[0];
        for (std::size_t r = 0; r < grp.size(); ++r) {
          const i64 d = grp[r];
          if (seen[static_cast<std::size_t>(d)]++)
            throw Bad(where_step + ": device " + std::to_string(d) + " is in two groups");
          const Box& b = box[static_cast<std::size_t>(d)];
          const Box& f = box[static_cast<std::size_t>(first)];
          for (std::size_t i = 0; i < b.off.size(); ++i) {
            const i64 want = i == dim ? f.off[i] + static_cast<i64>(r) * f.size[i] : f.off[i];
            if (b.off[i] != want || b.size[i] != f.size[i])
              throw Bad(where_step + ": group " + std::to_string(g) + " lists device " + std::to_string(d) +
                        " at position " + std::to_string(r) + " but its tile is " + box_str(b) +
                        "; adjacent tiles in concatenation order need offset " + std::to_string(want) +
                        " in dimension " + std::to_string(i));
          }
        }
      }
      for (i64 d = 0; d < n; ++d)
        if (!seen[static_cast<std::size_t>(d)])
          throw Bad(where_step + ": device " + std::to_string(d) + " is in no group");
      group_size = static_cast<i64>(k);
      num_groups = static_cast<i64>(groups.size());
      return static_cast<i64>(k);
    };
    std::vector<i64> dims;
    std::string rendered;
    i64 named_axes = 1;     // devices of the mesh axes the step names (its text shows them)
    bool factored = false;  // a factor x[i] among them: named_axes is then a multiple of the devices
    if (op != "allpermute") {
      dims = integers(s["dims"], 0, static_cast<i64>(from.size()) - 1, at + ".dims");
      if (dims.size() != (op == "alltoall" ? 2u : 1u) || (dims.size() == 2 && dims[0] == dims[1]))
        throw Bad(at + ".dims: " + (op == "alltoall" ? "two different dimensions" : "one dimension") + " expected");
      if (!s["axes"].is_array() || s["axes"].empty()) throw Bad(at + ".axes: non-empty array expected");
      std::string axes;
      named_axes = 1;
      std::vector<std::string> seen_axes;
      for (const auto& a : s["axes"]) {
        // a mesh axis, or one of its prime factors "x[0]" (docs/model.md §10), whose size is then
        // known only to divide the axis's
        const std::string name = text(a, at + ".axes");
        const std::string axis = name.substr(0, name.find('['));
        const auto it = std::find(m.names.begin(), m.names.end(), axis);
        if (it == m.names.end() || std::count(seen_axes.begin(), seen_axes.end(), name))
          throw Bad(at + ".axes: " + name + " is not a mesh axis (or a factor of one), or named twice");
        seen_axes.push_back(name);
        named_axes *= m.sizes[static_cast<std::size_t>(it - m.names.begin())];
        factored = factored || axis != name;
        axes += (axes.empty() ? "" : ",") + name;
      }
      rendered = op + "(" + std::to_string(dims[0]) + (dims.size() == 2 ? "," + std::to_string(dims[1]) : "") + "){" +
                 axes + "}";
    }
    if (op == "allgather" || op == "alltoall") {
      const std::size_t i = static_cast<std::size_t>(dims[0]);
      const i64 k = partition(i);
      if (factored ? named_axes % k != 0 : k != named_axes)
        throw Bad(at + ".axes: groups of " + std::to_string(k) + " devices, but the axes named hold " +
                  std::to_string(named_axes));
      for (const auto& grp : groups) {
        const Box f = box[static_cast<std::size_t>(grp[0])];
        for (std::size_t r = 0; r < grp.size(); ++r) {
          Box b = f;
          b.size[i] = f.size[i] * k;
          if (op == "alltoall") {
            const std::size_t j = static_cast<std::size_t>(dims[1]);
            if (f.size[j] % k)
              throw Bad(where_step + ": local size " + std::to_string(f.size[j]) + " of dimension " +
                        std::to_string(j) + " is not divisible by the group size " + std::to_string(k));
            b.size[j] = f.size[j] / k;
            b.off[j] = f.off[j] + static_cast<i64>(r) * b.size[j];
          }
          next[static_cast<std::size_t>(grp[r])] = b;
        }
      }
    } else if (op == "dynslice") {
      const std::size_t i = static_cast<std::size_t>(dims[0]);
      const auto local = integers(s["local"], 1, INT64_MAX, at + ".local");
      if (local.size() != from.size()) throw Bad(where_step + ": bad local type");
      const i64 cnew = local[i];
      if (box[0].size[i] % cnew)
        throw Bad(where_step + ": local size " + std::to_string(box[0].size[i]) + " is not divisible into tiles of " +
                  std::to_string(cnew));
      if (const i64 chunks = box[0].size[i] / cnew; factored ? named_axes % chunks != 0 : chunks != named_axes)
        throw Bad(at + ".axes: a slice into " + std::to_string(chunks) + " chunks, but the axes named hold " +
                  std::to_string(named_axes) + " devices");
      const auto slice = integers(s["slice"], 0, INT64_MAX, at + ".slice");
      if (static_cast<i64>(slice.size()) != n) throw Bad(where_step + ": slice list has the wrong length");
      for (i64 d = 0; d < n; ++d) {
        const auto sl = slice[static_cast<std::size_t>(d)];
        if (sl >= box[0].size[i] / cnew)
          throw Bad(where_step + ": device " + std::to_string(d) + " keeps chunk " + std::to_string(sl) +
                    ", out of range");
        next[static_cast<std::size_t>(d)].off[i] += sl * cnew;
        next[static_cast<std::size_t>(d)].size[i] = cnew;
      }
    } else {
      const auto src = integers(s["sources"], 0, n - 1, at + ".sources");
      if (static_cast<i64>(src.size()) != n) throw Bad(where_step + ": sources has the wrong length");
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      group_size = 2;
      for (i64 d = 0; d < n; ++d) {
        const i64 f = src[static_cast<std::size_t>(d)];
        if (seen[static_cast<std::size_t>(f)]++)
          throw Bad(where_step + ": not a permutation (device " + std::to_string(f) + ")");
        next[static_cast<std::size_t>(d)] = box[static_cast<std::size_t>(f)];
        num_groups += f != d;
      }
    }
    for (i64 d = 1; d < n; ++d)
      if (next[static_cast<std::size_t>(d)].size != next[0].size)
        throw Bad(where_step + ": devices end with different local types");
    if (integers(s["local"], 1, INT64_MAX, at + ".local") != next[0].size)
      throw Bad(where_step + ": recorded local type differs from the replay");
    // The planner's type after the step, in its own axis factors (x[0], ...) and, after a relabelling
    // permutation, its own device numbering: shown to users, recorded; the tiles are replayed.
    const std::string type = text(s["type"], at + ".type");
    if (op == "allpermute") rendered = "allpermute -> " + type;
    if (text(s["text"], at + ".text") != rendered)
      throw Bad(at + ".text: expected \"" + rendered + "\" (rendered from the step)");
    const i64 after = volume(next[0]);
    if (after > limit)
      throw Bad(where_step + ": local size " + std::to_string(after) + " exceeds the memory limit " +
                std::to_string(limit));
    peak = std::max(peak, after);
    const i64 step_cost = op == "allgather" ? after : op == "dynslice" ? 0 : before;
    if (integer(s["cost"], 0, INT64_MAX, at + ".cost") != step_cost)
      throw Bad(at + ".cost: expected " + std::to_string(step_cost));
    if (integer(s["bytes"], 0, INT64_MAX, at + ".bytes") != step_cost * bpe)
      throw Bad(at + ".bytes: expected cost × bytes_per_element = " + std::to_string(step_cost * bpe));
    if (integer(s["group_size"], 0, INT64_MAX, at + ".group_size") != group_size ||
        integer(s["num_groups"], 0, INT64_MAX, at + ".num_groups") != num_groups)
      throw Bad(at + ".group_size/num_groups: expected " + std::to_string(group_size) + " and " +
                std::to_string(num_groups));
    cost += step_cost;
    box = std::move(next);
    out.ops.push_back(op);
    if (op != "allpermute") out.solver_steps.push_back(k_step);
  }
  for (i64 d = 0; d < n; ++d) {
    const Box want = tile(to, m, d);
    if (!(box[static_cast<std::size_t>(d)] == want))
      throw Bad(std::string(base ? "baseline: " : "") + "end: device " + std::to_string(d) + " holds " +
                box_str(box[static_cast<std::size_t>(d)]) + " but " + to_text + " puts " + box_str(want) + " there");
  }
  if (integer(prog["cost"], 0, INT64_MAX, where + ".cost") != cost ||
      integer(prog["peak"], 0, INT64_MAX, where + ".peak") != peak)
    throw Bad((base ? "baseline: " : "") + std::string("recorded cost/peak differ from the replay (") +
              std::to_string(cost) + ", " + std::to_string(peak) + ")");
  claims.push_back({(where == "plan" ? "steps" : "baseline.steps") + std::string("[].type"),
                    "the planner's type after each step (its axis factors and numbering; the tiles are replayed)",
                    "recorded"});
  claims.push_back({where == "plan" ? "steps" : "baseline",
                    (base ? "the baseline " : "the program ") + from_text + " ~> " + to_text + " (cost " +
                        std::to_string(cost) + ", peak " + std::to_string(peak) + ")",
                    "replayed"});
  if (topology)
    claims.push_back(
        {where == "plan" ? "time_s" : "baseline.time_s", "times under the topology cost model", "recorded"});
  out.cost = cost;
  out.peak = peak;
  return out;
}

std::string check_reshard(const json& c, std::vector<Claim>& claims) {
  fields(c, "certificate",
         {"format", "steps", "cost", "peak", "bound", "mesh", "mesh_axes", "from", "to", "limit", "bytes_per_element",
          "cost_model", "states", "baseline", "smt"},
         {"time_s"});
  MeshAxes m;
  const json& ma = c["mesh_axes"];
  if (!ma.is_array() || ma.empty()) throw Bad("mesh_axes: non-empty array expected");
  for (const auto& a : ma) {
    if (!a.is_array() || a.size() != 2) throw Bad("mesh_axes: [name, size] pairs expected");
    const std::string name = text(a[0], "mesh_axes name");
    if (name.empty() || std::count(m.names.begin(), m.names.end(), name))
      throw Bad("mesh_axes: empty or repeated name");
    m.names.push_back(name);
    m.sizes.push_back(integer(a[1], 1, kMaxDevices, "mesh_axes size"));
    if (m.devices() > kMaxDevices) throw Bad("mesh: more than 65536 devices");
  }
  const json& mesh = c["mesh"];
  if (!mesh.is_object() || mesh.size() != m.names.size()) throw Bad("mesh: must list mesh_axes' axes");
  for (std::size_t a = 0; a < m.names.size(); ++a)
    if (!mesh.contains(m.names[a]) || mesh[m.names[a]] != m.sizes[a]) throw Bad("mesh: differs from mesh_axes");
  const std::string cost_model = text(c["cost_model"], "cost_model");
  if (cost_model != "paper" && cost_model != "topology") throw Bad("cost_model: expected paper or topology");
  const i64 bpe = integer(c["bytes_per_element"], 1, 8, "bytes_per_element");
  if (bpe != 1 && bpe != 2 && bpe != 4 && bpe != 8) throw Bad("bytes_per_element: expected 1, 2, 4 or 8");
  integer(c["states"], 0, INT64_MAX, "states");
  claims.push_back({"states", "the number of layouts the planner's search visited (a statistic)", "recorded"});
  const std::string from = text(c["from"], "from"), to = text(c["to"], "to");
  const i64 limit = integer(c["limit"], 1, INT64_MAX, "limit");
  claims.push_back(
      {"limit", "the memory limit the plan was asked for (the question; peak <= limit is replayed)", "recorded"});
  json plan = json::object();
  for (const char* k : {"steps", "cost", "peak", "bound", "time_s"})
    if (c.contains(k)) plan[k] = c[k];
  const Replayed r = replay(plan, "plan", from, to, m, limit, bpe, cost_model == "topology", claims);
  const Replayed b =
      replay(c["baseline"], "baseline", from, to, m, limit * 0 + INT64_MAX / 2, bpe, cost_model == "topology", claims);
  (void)b;
  // The solvers' answers, one per step that is not a permutation table (the checker replays those).
  const json& smt = c["smt"];
  fields(smt, "smt", {"claim", "steps"});
  if (text(smt["claim"], "smt.claim") != kClaim) throw Bad(std::string("smt.claim: expected \"") + kClaim + "\"");
  const json& ss = smt["steps"];
  if (!ss.is_array() || ss.size() != r.solver_steps.size())
    throw Bad("smt.steps: one entry per step other than allpermute expected");
  for (std::size_t i = 0; i < ss.size(); ++i) {
    const std::string at = "smt.steps[" + std::to_string(i) + "]";
    fields(ss[i], at, {"step", "op", "z3", "cvc5"});
    const std::size_t k = r.solver_steps[i];
    if (integer(ss[i]["step"], 0, INT64_MAX, at + ".step") != static_cast<i64>(k) ||
        text(ss[i]["op"], at + ".op") != r.ops[k])
      throw Bad(at + ": not step " + std::to_string(k) + " (" + r.ops[k] + ")");
    for (const char* solver : {"z3", "cvc5"})
      if (text(ss[i][solver], at + "." + solver) != "unsat")
        throw Bad(at + "." + solver + ": \"" + ss[i][solver].get<std::string>() +
                  "\" (the claim holds only if every solver answers unsat)");
    claims.push_back(
        {at, "step " + std::to_string(k) + " (" + r.ops[k] + "): " + kClaim + " (z3 and cvc5: unsat)", "recorded"});
  }
  return from + " ~> " + to + ": " + std::to_string(r.ops.size()) + " steps replayed on " +
         std::to_string(m.devices()) + " devices, cost " + std::to_string(r.cost) + ", peak " + std::to_string(r.peak) +
         " <= limit " + std::to_string(limit) + "; baseline replayed\n  per-step SMT facts recorded by z3+cvc5 (" +
         std::to_string(ss.size()) + " steps), not re-checked";
}

}  // namespace

Verdict check_reshard_certificate(const std::string& text) {
  Verdict v;
  try {
    const json c = parse_json_strict(text);
    if (!c.is_object() || !c.contains("format") || c["format"] != kReshardCertificateFormat)
      throw Bad(std::string("format: not ") + kReshardCertificateFormat);
    v.summary = check_reshard(c, v.claims);
    v.ok = true;
  } catch (const Bad& e) {
    v.reason = e.what();
  } catch (const std::exception& e) {
    v.reason = std::string("malformed reshard certificate: ") + e.what();
  }
  if (!v.ok) v.claims.clear();
  return v;
}

}  // namespace p2v::checker
