// Types, validation, printing, offset tables (see p2v/reshard/type.hpp).
#include "p2v/reshard/type.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <numeric>

#include "detail.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/text_util.hpp"

namespace p2v::reshard {

using namespace detail;
namespace text = engine::text;

// ---- types ----

std::int64_t Type::localsize() const {
  std::int64_t s = 1;
  for (const auto& d : dims) s *= d.local;
  return s;
}

std::vector<std::int64_t> Type::localtype() const {
  std::vector<std::int64_t> c;
  for (const auto& d : dims) c.push_back(d.local);
  return c;
}

void validate(const Type& t, const Mesh& mesh) {
  std::vector<int> owner(mesh.primes.size(), -1);
  for (std::size_t i = 0; i < t.dims.size(); ++i) {
    const auto& d = t.dims[i];
    for (int a : d.axes) {
      if (a < 0 || a >= static_cast<int>(mesh.primes.size()))
        throw Error(fmt::format("{}: unknown axis #{}", dim_name(static_cast<int>(i)), a));
      if (owner[a] >= 0)
        throw Error(fmt::format("axis {} is used twice ({} and {}); an axis may split one dimension once",
                                mesh.axes[mesh.primes[a].parent].name, dim_name(owner[a]),
                                dim_name(static_cast<int>(i))));
      owner[a] = static_cast<int>(i);
    }
    if (d.local < 1 || d.local * axes_product(d.axes, mesh) != d.global)
      throw Error(fmt::format(
          "not well-formed: {} has local size {} split by {{{}}} ({} devices) but global size {}; "
          "need local * devices = global exactly (no padding)",
          dim_name(static_cast<int>(i)), d.local, axes_to_string(d.axes, mesh), axes_product(d.axes, mesh), d.global));
  }
}

Type parse_type(const std::string& text0, const Mesh& mesh) {
  const std::string text = text::trim(text0);
  if (text.size() < 2 || text.front() != '[' || text.back() != ']')
    throw Error(fmt::format("type '{}': write it as [c{{axes}}n, ...], e.g. [32{{x,y}}512,128]", text0));
  // Split on commas outside braces.
  std::vector<std::string> entries;
  std::string cur;
  int depth = 0;
  for (std::size_t k = 1; k + 1 < text.size(); ++k) {
    const char c = text[k];
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (depth < 0 || depth > 1) throw Error(fmt::format("type '{}': unbalanced braces", text0));
    if (c == ',' && depth == 0) {
      entries.push_back(text::trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) throw Error(fmt::format("type '{}': unbalanced braces", text0));
  entries.push_back(text::trim(cur));
  Type t;
  std::vector<std::string> used(mesh.axes.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& e = entries[i];
    const std::string where = fmt::format("type {}: {}", text0, dim_name(static_cast<int>(i)));
    Dim d;
    const auto open = e.find('{');
    if (open == std::string::npos) {
      d.global = d.local = parse_positive(e, where);
    } else {
      const auto close = e.find('}');
      if (close == std::string::npos || close < open) throw Error(fmt::format("{}: '{}' is not c{{axes}}n", where, e));
      // The local size may be omitted (`{x,y}1024`): computed below from the axes' sizes.
      const std::string c = text::trim(e.substr(0, open));
      d.local = c.empty() ? 0 : parse_positive(c, where + " local size");
      d.global = parse_positive(text::trim(e.substr(close + 1)), where + " global size");
      const std::string list = text::trim(e.substr(open + 1, close - open - 1));
      if (!list.empty())
        for (const auto& name : text::split_csv(list)) {
          const int a = mesh.axis_index(name);
          if (a < 0) {
            std::string known;
            for (const auto& ax : mesh.axes) known += (known.empty() ? "" : ", ") + ax.name;
            throw Error(fmt::format("{}: unknown axis '{}' (the mesh has {})", where, name, known));
          }
          if (!used[a].empty())
            throw Error(fmt::format("type {}: axis {} is used twice ({} and {})", text0, name, used[a],
                                    dim_name(static_cast<int>(i))));
          used[a] = dim_name(static_cast<int>(i));
          for (int p : mesh.factors[a]) d.axes.push_back(p);
        }
    }
    if (d.local == 0) {
      const auto k = axes_product(d.axes, mesh);
      if (d.global % k != 0)
        throw Error(fmt::format("{}: global size {} is not divisible by {} (the product of the sizes of {{{}}})", where,
                                d.global, k, axes_to_string(d.axes, mesh)));
      d.local = d.global / k;
    }
    t.dims.push_back(d);
  }
  try {
    validate(t, mesh);
  } catch (const Error& e) {
    throw Error(fmt::format("type {}: {}", text0, e.what()));
  }
  return t;
}

std::string axes_to_string(const std::vector<int>& axes, const Mesh& mesh) {
  std::string s;
  for (std::size_t k = 0; k < axes.size();) {
    const auto& f = mesh.factors[mesh.primes[axes[k]].parent];
    std::string name = mesh.primes[axes[k]].name;
    std::size_t len = 1;
    if (f.size() > 1 && axes[k] == f[0] && k + f.size() <= axes.size() &&
        std::equal(f.begin(), f.end(), axes.begin() + static_cast<std::ptrdiff_t>(k))) {
      name = mesh.axes[mesh.primes[axes[k]].parent].name;
      len = f.size();
    }
    s += (s.empty() ? "" : ",") + name;
    k += len;
  }
  return s;
}

std::string to_string(const Type& t, const Mesh& mesh) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.dims.size(); ++i) {
    const auto& d = t.dims[i];
    if (i) s += ",";
    s += d.axes.empty() ? std::to_string(d.global)
                        : fmt::format("{}{{{}}}{}", d.local, axes_to_string(d.axes, mesh), d.global);
  }
  return s + "]";
}

std::vector<std::int64_t> offsets(const Type& t, const Mesh& mesh, std::int64_t device) {
  const auto p = mesh.point(device);
  std::vector<std::int64_t> off;
  for (const auto& d : t.dims) {
    std::int64_t o = 0, c = d.local;
    for (int a : d.axes) {  // D[c{a,rest}n](i) = c·i_a + D[(c·|a|){rest}n](i)
      o += c * p[a];
      c *= mesh.primes[a].size;
    }
    off.push_back(o);
  }
  return off;
}

std::vector<std::vector<std::int64_t>> offset_table(const Type& t, const Mesh& mesh) {
  std::vector<std::vector<std::int64_t>> tab;
  for (std::int64_t d = 0; d < mesh.num_devices(); ++d) tab.push_back(offsets(t, mesh, d));
  return tab;
}

std::vector<std::int64_t> tile_indices(const Type& t, const Mesh& mesh, std::int64_t device) {
  const auto off = offsets(t, mesh, device);
  std::vector<std::int64_t> out(static_cast<std::size_t>(t.localsize()));
  std::vector<std::int64_t> idx(t.dims.size(), 0);
  for (auto& v : out) {
    std::int64_t g = 0;
    for (std::size_t i = 0; i < t.dims.size(); ++i) g = g * t.dims[i].global + off[i] + idx[i];
    v = g;
    for (std::size_t i = t.dims.size(); i-- > 0;) {  // next local index, last dimension fastest
      if (++idx[i] < t.dims[i].local) break;
      idx[i] = 0;
    }
  }
  return out;
}

std::string from_partition_spec(const std::string& spec0, const std::vector<std::int64_t>& shape, const Mesh& mesh) {
  const std::string what = fmt::format("PartitionSpec '{}'", spec0);
  std::string spec = text::trim(spec0);
  for (const char* head : {"PartitionSpec", "P"})
    if (spec.rfind(head, 0) == 0 && spec.size() > std::strlen(head) && spec[std::strlen(head)] == '(') {
      spec = spec.substr(std::strlen(head));
      break;
    }
  if (spec.size() < 2 || spec.front() != '(' || spec.back() != ')')
    throw Error(fmt::format("{}: write it as P(entry, ...), each entry None, 'axis' or ('major', 'minor')", what));
  // Entries: None | 'a' | "a" | (names...), separated by commas outside parentheses.
  std::vector<std::vector<std::string>> entries;
  std::size_t k = 1;
  auto skip = [&] {
    while (k + 1 < spec.size() && std::isspace(static_cast<unsigned char>(spec[k]))) ++k;
  };
  auto name = [&]() -> std::string {
    skip();
    const char q = spec[k];
    if (q != '\'' && q != '"') throw Error(fmt::format("{}: expected a quoted axis name at position {}", what, k));
    const auto end = spec.find(q, k + 1);
    if (end == std::string::npos || end + 1 >= spec.size()) throw Error(fmt::format("{}: unterminated name", what));
    std::string n = spec.substr(k + 1, end - k - 1);
    k = end + 1;
    return n;
  };
  skip();
  while (k + 1 < spec.size()) {
    std::vector<std::string> e;
    if (spec.compare(k, 4, "None") == 0) {
      k += 4;
    } else if (spec[k] == '(') {
      ++k;
      skip();
      while (spec[k] != ')') {
        e.push_back(name());
        skip();
        if (spec[k] == ',') ++k;
        skip();
        if (k + 1 >= spec.size()) throw Error(fmt::format("{}: unbalanced parentheses", what));
      }
      ++k;
    } else {
      e.push_back(name());
    }
    entries.push_back(e);
    skip();
    if (k + 1 < spec.size()) {
      if (spec[k] != ',') throw Error(fmt::format("{}: expected ',' at position {}", what, k));
      ++k;
      skip();
    }
  }
  if (entries.size() > shape.size())
    throw Error(
        fmt::format("{}: {} entries for an array of {} dimensions (--shape)", what, entries.size(), shape.size()));
  // JAX lists a dimension's axes major first; p2v minor first. Entries missing at the end replicate.
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1) throw Error(fmt::format("--shape: dimension {} has size {}; sizes are positive", i, shape[i]));
    std::vector<std::string> ax = i < entries.size() ? entries[i] : std::vector<std::string>{};
    std::reverse(ax.begin(), ax.end());
    std::int64_t prod = 1;
    std::string names;
    for (const auto& a : ax) {
      const int idx = mesh.axis_index(a);
      if (idx < 0) throw Error(fmt::format("{}: unknown mesh axis '{}'", what, a));
      prod *= mesh.axes[static_cast<std::size_t>(idx)].size;
      names += (names.empty() ? "" : ",") + a;
    }
    if (shape[i] % prod != 0)
      throw Error(
          fmt::format("{}: dimension {} of size {} is not divisible by {} (the product of its axes' sizes); "
                      "JAX pads, p2v's types do not",
                      what, i, shape[i], prod));
    out += (i ? "," : "") +
           (ax.empty() ? std::to_string(shape[i]) : fmt::format("{}{{{}}}{}", shape[i] / prod, names, shape[i]));
  }
  return out + "]";
}

}  // namespace p2v::reshard
