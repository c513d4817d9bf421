// The independent checker for reshard certificates (SPEC §10). Its own mesh and type parser and
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

// SPEC §10 Meaning: D[c{}c](i) = 0, D[c{a,rest}n](i) = c·i_a + D[(c·|a|){rest}n](i).
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

std::string check_reshard(const json& c) {
  MeshAxes m;
  for (const auto& a : c.at("mesh_axes")) {
    m.names.push_back(a.at(0).get<std::string>());
    m.sizes.push_back(a.at(1).get<i64>());
    if (m.sizes.back() < 1) throw Bad("mesh: axis size below 1");
  }
  const i64 n = m.devices();
  const auto from = parse_type(c.at("from").get<std::string>(), m), to = parse_type(c.at("to").get<std::string>(), m);
  if (from.size() != to.size()) throw Bad("global shapes differ");
  for (std::size_t i = 0; i < from.size(); ++i)
    if (from[i].global != to[i].global) throw Bad("global shapes differ in dimension " + std::to_string(i));
  std::vector<Box> box;
  for (i64 d = 0; d < n; ++d) box.push_back(tile(from, m, d));
  const i64 bound = std::max(volume(box[0]), volume(tile(to, m, 0)));
  if (c.at("bound").get<i64>() != bound)
    throw Bad("recorded bound differs from max(localsize τ1, localsize τ2) = " + std::to_string(bound));
  const i64 limit = c.at("limit").get<i64>();
  if (limit < bound) throw Bad("limit below the bound");
  i64 cost = 0, peak = volume(box[0]);
  int k_step = 0;
  for (const auto& s : c.at("steps")) {
    const std::string op = s.at("op").get<std::string>();
    const std::string where = "step " + std::to_string(k_step++) + " (" + op + ")";
    std::vector<Box> next = box;
    const i64 before = volume(box[0]);
    auto partition = [&](const json& groups, std::size_t dim) -> i64 {
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      std::size_t k = 0;
      for (std::size_t g = 0; g < groups.size(); ++g) {
        const auto& grp = groups[g];
        if (g == 0) k = grp.size();
        if (grp.size() != k || k < 2)
          throw Bad(where + ": group " + std::to_string(g) + " has " + std::to_string(grp.size()) +
                    " devices, expected " + std::to_string(k) + " (at least 2)");
        const i64 first = grp[0].get<i64>();
        for (std::size_t r = 0; r < grp.size(); ++r) {
          const i64 d = grp[r].get<i64>();
          if (d < 0 || d >= n || seen[static_cast<std::size_t>(d)]++)
            throw Bad(where + ": device " + std::to_string(d) + " is out of range or in two groups");
          const Box& b = box[static_cast<std::size_t>(d)];
          const Box& f = box[static_cast<std::size_t>(first)];
          for (std::size_t i = 0; i < b.off.size(); ++i) {
            const i64 want = i == dim ? f.off[i] + static_cast<i64>(r) * f.size[i] : f.off[i];
            if (b.off[i] != want || b.size[i] != f.size[i])
              throw Bad(where + ": group " + std::to_string(g) + " lists device " + std::to_string(d) +
                        " at position " + std::to_string(r) + " but its tile is " + box_str(b) +
                        "; adjacent tiles in concatenation order need offset " + std::to_string(want) +
                        " in dimension " + std::to_string(i));
          }
        }
      }
      for (i64 d = 0; d < n; ++d)
        if (!seen[static_cast<std::size_t>(d)]) throw Bad(where + ": device " + std::to_string(d) + " is in no group");
      return static_cast<i64>(k);
    };
    if (op == "allgather" || op == "alltoall") {
      const auto dims = s.at("dims");
      const std::size_t i = dims.at(0).get<std::size_t>();
      if (i >= from.size()) throw Bad(where + ": dimension out of range");
      const i64 k = partition(s.at("groups"), i);
      for (const auto& grp : s.at("groups")) {
        const Box f = box[grp[0].get<std::size_t>()];
        for (std::size_t r = 0; r < grp.size(); ++r) {
          Box b = f;
          b.size[i] = f.size[i] * k;
          if (op == "alltoall") {
            const std::size_t j = dims.at(1).get<std::size_t>();
            if (j >= from.size() || j == i) throw Bad(where + ": bad second dimension");
            if (f.size[j] % k)
              throw Bad(where + ": local size " + std::to_string(f.size[j]) + " of dimension " + std::to_string(j) +
                        " is not divisible by the group size " + std::to_string(k));
            b.size[j] = f.size[j] / k;
            b.off[j] = f.off[j] + static_cast<i64>(r) * b.size[j];
          }
          next[grp[r].get<std::size_t>()] = b;
        }
      }
    } else if (op == "dynslice") {
      const std::size_t i = s.at("dims").at(0).get<std::size_t>();
      const auto local = s.at("local").get<std::vector<i64>>();
      if (i >= from.size() || local.size() != from.size()) throw Bad(where + ": bad dimension or local type");
      const i64 cnew = local[i];
      if (cnew < 1 || box[0].size[i] % cnew)
        throw Bad(where + ": local size " + std::to_string(box[0].size[i]) + " is not divisible into tiles of " +
                  std::to_string(cnew));
      const auto slice = s.at("slice").get<std::vector<i64>>();
      if (static_cast<i64>(slice.size()) != n) throw Bad(where + ": slice list has the wrong length");
      for (i64 d = 0; d < n; ++d) {
        const auto sl = slice[static_cast<std::size_t>(d)];
        if (sl < 0 || sl >= box[0].size[i] / cnew)
          throw Bad(where + ": device " + std::to_string(d) + " keeps chunk " + std::to_string(sl) + ", out of range");
        next[static_cast<std::size_t>(d)].off[i] += sl * cnew;
        next[static_cast<std::size_t>(d)].size[i] = cnew;
      }
    } else if (op == "allpermute") {
      const auto src = s.at("sources").get<std::vector<i64>>();
      if (static_cast<i64>(src.size()) != n) throw Bad(where + ": sources has the wrong length");
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      for (i64 d = 0; d < n; ++d) {
        const i64 f = src[static_cast<std::size_t>(d)];
        if (f < 0 || f >= n || seen[static_cast<std::size_t>(f)]++)
          throw Bad(where + ": not a permutation (device " + std::to_string(f) + ")");
        next[static_cast<std::size_t>(d)] = box[static_cast<std::size_t>(f)];
      }
    } else {
      throw Bad(where + ": unknown op");
    }
    for (i64 d = 1; d < n; ++d)
      if (next[static_cast<std::size_t>(d)].size != next[0].size)
        throw Bad(where + ": devices end with different local types");
    if (s.at("local").get<std::vector<i64>>() != next[0].size)
      throw Bad(where + ": recorded local type differs from the replay");
    const i64 after = volume(next[0]);
    if (after > limit)
      throw Bad(where + ": local size " + std::to_string(after) + " exceeds the memory limit " + std::to_string(limit));
    peak = std::max(peak, after);
    cost += op == "allgather" ? after : op == "dynslice" ? 0 : before;
    box = std::move(next);
  }
  for (i64 d = 0; d < n; ++d) {
    const Box want = tile(to, m, d);
    if (!(box[static_cast<std::size_t>(d)] == want))
      throw Bad("end: device " + std::to_string(d) + " holds " + box_str(box[static_cast<std::size_t>(d)]) + " but " +
                c.at("to").get<std::string>() + " puts " + box_str(want) + " there");
  }
  if (c.at("cost").get<i64>() != cost || c.at("peak").get<i64>() != peak)
    throw Bad("recorded cost/peak differ from the replay (" + std::to_string(cost) + ", " + std::to_string(peak) + ")");
  return c.at("from").get<std::string>() + " ~> " + c.at("to").get<std::string>() + ": " +
         std::to_string(c.at("steps").size()) + " steps replayed on " + std::to_string(n) + " devices, cost " +
         std::to_string(cost) + ", peak " + std::to_string(peak) + " <= limit " + std::to_string(limit);
}

}  // namespace

Verdict check_reshard_certificate(const std::string& text) {
  Verdict v;
  try {
    const json c = json::parse(text);
    v.summary = check_reshard(c);
    if (c.contains("smt") && c["smt"].is_object()) v.summary += "  [per-step SMT facts recorded, not re-proved]";
    v.ok = true;
  } catch (const Bad& e) {
    v.reason = e.what();
  } catch (const std::exception& e) {
    v.reason = std::string("malformed reshard certificate: ") + e.what();
  }
  return v;
}

}  // namespace p2v::checker
