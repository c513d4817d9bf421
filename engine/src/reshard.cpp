// docs/model.md §10: meshes, array types, offset tables, the collectives' rules and their lowering.
#include "p2v/engine/reshard.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>

#include "p2v/engine/error.hpp"
#include "p2v/engine/text_util.hpp"

namespace p2v::engine::reshard {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::int64_t parse_positive(const std::string& s, const std::string& what) {
  if (s.empty() ||
      !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
      s.size() > 15)
    throw Error(fmt::format("{}: expected a positive integer, got '{}'", what, s));
  const std::int64_t v = std::stoll(s);
  if (v < 1) throw Error(fmt::format("{}: must be at least 1, got {}", what, v));
  return v;
}

std::vector<int> prime_factors(int n) {
  std::vector<int> f;
  for (int p = 2; static_cast<std::int64_t>(p) * p <= n; ++p)
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  if (n > 1) f.push_back(n);
  return f;
}

std::int64_t axes_product(const std::vector<int>& axes, const Mesh& mesh) {
  std::int64_t k = 1;
  for (int a : axes) k *= mesh.primes[a].size;
  return k;
}

std::string dim_name(int i) { return fmt::format("dimension {}", i); }

// Where each prime axis is used: dimension index or -1.
std::vector<int> axis_owner(const Type& t, const Mesh& mesh) {
  std::vector<int> owner(mesh.primes.size(), -1);
  for (std::size_t i = 0; i < t.dims.size(); ++i)
    for (int a : t.dims[i].axes) owner[a] = static_cast<int>(i);
  return owner;
}

void require_dim(const Type& t, int i, Op op) {
  if (i < 0 || i >= static_cast<int>(t.dims.size()))
    throw Error(
        fmt::format("{}: dimension {} does not exist (the type has {} dimensions)", to_string(op), i, t.dims.size()));
}

// The condition shared by allgather and alltoall: `axes` are the minor-most axes of dimension i.
void require_minor_most(const Type& t, int i, const std::vector<int>& axes, const Mesh& mesh, Op op) {
  if (axes.empty()) throw Error(fmt::format("{}({}): no axis given", to_string(op), i));
  const auto& d = t.dims[i].axes;
  for (std::size_t k = 0; k < axes.size(); ++k)
    if (k >= d.size() || d[k] != axes[k])
      throw Error(fmt::format("{}({}): axis {} is not the {} minor-most axis of {} (its axes are {{{}}})",
                              to_string(op), i, mesh.primes[axes[k]].name, k == 0 ? "first" : fmt::format("#{}", k + 1),
                              dim_name(i), axes_to_string(d, mesh)));
}

}  // namespace

// ---- mesh ----

std::int64_t Mesh::num_devices() const {
  std::int64_t n = 1;
  for (const auto& a : axes) n *= a.size;
  return n;
}

int Mesh::axis_index(const std::string& name) const {
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> Mesh::point(std::int64_t device) const {
  std::vector<std::int64_t> coord(axes.size());
  for (std::size_t i = axes.size(); i-- > 0;) {
    coord[i] = device % axes[i].size;
    device /= axes[i].size;
  }
  std::vector<int> p(primes.size());
  for (std::size_t a = 0; a < primes.size(); ++a)
    p[a] = static_cast<int>(coord[primes[a].parent] / primes[a].stride % primes[a].size);
  return p;
}

std::int64_t Mesh::device(const std::vector<int>& prime_point) const {
  std::vector<std::int64_t> coord(axes.size(), 0);
  for (std::size_t a = 0; a < primes.size(); ++a) coord[primes[a].parent] += primes[a].stride * prime_point[a];
  std::int64_t d = 0;
  for (std::size_t i = 0; i < axes.size(); ++i) d = d * axes[i].size + coord[i];
  return d;
}

Mesh parse_mesh(const std::string& spec0) {
  std::string spec = text::trim(spec0);
  if (!spec.empty() && spec.front() == '{' && spec.back() == '}') spec = spec.substr(1, spec.size() - 2);
  Mesh m;
  if (text::trim(spec).empty()) throw Error("--mesh: empty mesh; write axes as name=size, e.g. x=4,y=4");
  for (const auto& item : text::split_csv(spec)) {
    const auto eq = item.find_first_of("=:");
    if (eq == std::string::npos) throw Error(fmt::format("--mesh: '{}' is not name=size (e.g. x=4,y=4)", item));
    const std::string name = text::trim(item.substr(0, eq));
    if (!is_identifier(name))
      throw Error(fmt::format("--mesh: axis name '{}' must be an identifier (letters, digits, _)", name));
    if (m.axis_index(name) >= 0) throw Error(fmt::format("--mesh: axis {} is listed twice", name));
    const auto size = parse_positive(text::trim(item.substr(eq + 1)), fmt::format("--mesh: size of axis {}", name));
    if (size > kMaxSystemDevices)
      throw Error(fmt::format("--mesh: axis {} has size {} (at most {})", name, size, kMaxSystemDevices));
    m.axes.push_back({name, static_cast<int>(size)});
    if (m.num_devices() > kMaxSystemDevices)
      throw Error(fmt::format("--mesh: {} devices, more than the {} supported", m.num_devices(), kMaxSystemDevices));
  }
  m.factors.resize(m.axes.size());
  for (std::size_t i = 0; i < m.axes.size(); ++i) {
    const auto f = prime_factors(m.axes[i].size);
    std::int64_t stride = 1;
    for (std::size_t k = 0; k < f.size(); ++k) {
      m.factors[i].push_back(static_cast<int>(m.primes.size()));
      m.primes.push_back({f.size() == 1 ? m.axes[i].name : fmt::format("{}[{}]", m.axes[i].name, k), f[k],
                          static_cast<int>(i), stride});
      stride *= f[k];
    }
  }
  return m;
}

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
      d.local = parse_positive(text::trim(e.substr(0, open)), where + " local size");
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

// ---- rules ----

const char* to_string(Op op) {
  switch (op) {
    case Op::AllGather:
      return "allgather";
    case Op::DynSlice:
      return "dynslice";
    case Op::AllToAll:
      return "alltoall";
    case Op::AllPermute:
      return "allpermute";
  }
  return "?";
}

Type apply(const Type& t, const Step& s, const Mesh& mesh) {
  Type r = t;
  switch (s.op) {
    case Op::AllGather: {
      require_dim(t, s.dim, s.op);
      require_minor_most(t, s.dim, s.axes, mesh, s.op);
      auto& d = r.dims[s.dim];
      d.axes.erase(d.axes.begin(), d.axes.begin() + static_cast<std::ptrdiff_t>(s.axes.size()));
      d.local *= axes_product(s.axes, mesh);
      break;
    }
    case Op::DynSlice: {
      require_dim(t, s.dim, s.op);
      if (s.axes.empty()) throw Error(fmt::format("dynslice({}): no axis given", s.dim));
      const auto owner = axis_owner(t, mesh);
      for (std::size_t k = 0; k < s.axes.size(); ++k) {
        const int a = s.axes[k];
        if (owner[a] >= 0)
          throw Error(fmt::format("dynslice({}): axis {} is already used by {}; dynslice needs an unused axis", s.dim,
                                  mesh.primes[a].name, dim_name(owner[a])));
        if (std::find(s.axes.begin(), s.axes.begin() + static_cast<std::ptrdiff_t>(k), a) !=
            s.axes.begin() + static_cast<std::ptrdiff_t>(k))
          throw Error(fmt::format("dynslice({}): axis {} is given twice", s.dim, mesh.primes[a].name));
      }
      const auto k = axes_product(s.axes, mesh);
      auto& d = r.dims[s.dim];
      if (d.local % k != 0)
        throw Error(fmt::format("dynslice({}): local size {} of {} is not divisible by |{}| = {}", s.dim, d.local,
                                dim_name(s.dim), axes_to_string(s.axes, mesh), k));
      d.axes.insert(d.axes.begin(), s.axes.begin(), s.axes.end());
      d.local /= k;
      break;
    }
    case Op::AllToAll: {
      require_dim(t, s.dim, s.op);
      require_dim(t, s.dim2, s.op);
      if (s.dim == s.dim2) throw Error(fmt::format("alltoall({},{}): the two dimensions must differ", s.dim, s.dim2));
      require_minor_most(t, s.dim, s.axes, mesh, s.op);
      const auto k = axes_product(s.axes, mesh);
      auto& di = r.dims[s.dim];
      auto& dj = r.dims[s.dim2];
      if (dj.local % k != 0)
        throw Error(fmt::format("alltoall({},{}): local size {} of {} is not divisible by |{}| = {}", s.dim, s.dim2,
                                dj.local, dim_name(s.dim2), axes_to_string(s.axes, mesh), k));
      di.axes.erase(di.axes.begin(), di.axes.begin() + static_cast<std::ptrdiff_t>(s.axes.size()));
      di.local *= k;
      dj.axes.insert(dj.axes.begin(), s.axes.begin(), s.axes.end());
      dj.local /= k;
      break;
    }
    case Op::AllPermute: {
      if (s.target.localtype() != t.localtype())
        throw Error(fmt::format("allpermute: local types differ ({} vs {}); allpermute needs equal local types",
                                to_string(t, mesh), to_string(s.target, mesh)));
      for (std::size_t i = 0; i < t.dims.size(); ++i)
        if (t.dims[i].global != s.target.dims[i].global)
          throw Error(fmt::format("allpermute: global size of {} differs ({} vs {})", dim_name(static_cast<int>(i)),
                                  t.dims[i].global, s.target.dims[i].global));
      validate(s.target, mesh);
      r = s.target;
      break;
    }
  }
  return r;
}

Lowered lower(const Type& before, const Step& s, const Mesh& mesh, const std::vector<std::int64_t>* sigma) {
  Lowered low;
  const std::int64_t n = mesh.num_devices();
  auto logical = [&](std::int64_t d) { return sigma ? (*sigma)[static_cast<std::size_t>(d)] : d; };
  if (s.op == Op::DynSlice) {
    const Type after = apply(before, s, mesh);
    for (std::int64_t d = 0; d < n; ++d)
      low.slice.push_back((offsets(after, mesh, logical(d))[s.dim] - offsets(before, mesh, logical(d))[s.dim]) /
                          after.dims[s.dim].local);
    return low;
  }
  if (s.op == Op::AllPermute) {
    // Match devices by tile: fixed points first, then the remaining holders in device order.
    std::map<std::vector<std::int64_t>, std::vector<std::int64_t>> holders, wanting;
    for (std::int64_t d = 0; d < n; ++d) {
      holders[offsets(before, mesh, logical(d))].push_back(d);
      wanting[offsets(s.target, mesh, d)].push_back(d);
    }
    low.sources.assign(static_cast<std::size_t>(n), -1);
    for (auto& [tile, dst] : wanting) {
      auto& src = holders[tile];
      if (src.size() != dst.size()) throw Error("allpermute: the two layouts hold a tile a different number of times");
      std::vector<std::int64_t> rest_src, rest_dst;
      std::set_difference(src.begin(), src.end(), dst.begin(), dst.end(), std::back_inserter(rest_src));
      std::set_difference(dst.begin(), dst.end(), src.begin(), src.end(), std::back_inserter(rest_dst));
      for (auto d : dst)
        if (std::binary_search(src.begin(), src.end(), d)) low.sources[d] = d;
      for (std::size_t k = 0; k < rest_dst.size(); ++k) low.sources[rest_dst[k]] = rest_src[k];
    }
    return low;
  }
  // allgather / alltoall: devices that differ only in the step's (logical) axes, ordered by their
  // offset in the dimension the tiles are concatenated along; each group must hold adjacent tiles.
  const int dim = s.dim;
  std::map<std::vector<int>, std::vector<std::pair<std::int64_t, std::int64_t>>> by_rest;
  for (std::int64_t d = 0; d < n; ++d) {
    auto p = mesh.point(logical(d));
    for (int a : s.axes) p[a] = 0;
    by_rest[p].push_back({offsets(before, mesh, logical(d))[dim], d});
  }
  const std::int64_t c = before.dims[dim].local;
  for (auto& [rest, members] : by_rest) {
    std::sort(members.begin(), members.end());
    std::vector<std::int64_t> g;
    for (std::size_t k = 0; k < members.size(); ++k) {
      if (k && members[k].first != members[k - 1].first + c)
        throw Error(fmt::format("{}: devices {} and {} do not hold adjacent tiles", to_string(s.op),
                                members[k - 1].second, members[k].second));
      g.push_back(members[k].second);
    }
    low.groups.push_back(std::move(g));
  }
  std::sort(low.groups.begin(), low.groups.end());
  return low;
}

Type relabel(const Type& t, int dim, const std::vector<int>& new_axes, const Mesh& mesh,
             std::vector<std::int64_t>& sigma) {
  Type r = t;
  auto a = t.dims[dim].axes, b = new_axes;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b) throw Error(fmt::format("relabel({}): the new axes are not a reordering of the old ones", dim));
  r.dims[dim].axes = new_axes;
  if (sigma.empty())
    for (std::int64_t d = 0; d < mesh.num_devices(); ++d) sigma.push_back(d);
  for (auto& ld : sigma) {
    auto p = mesh.point(ld);
    std::int64_t o = offsets(t, mesh, ld)[dim] / t.dims[dim].local, w = 1;  // tile index in dim
    for (int ax : new_axes) {
      p[ax] = static_cast<int>(o / w % mesh.primes[ax].size);
      w *= mesh.primes[ax].size;
    }
    ld = mesh.device(p);
  }
  return r;
}

std::string step_to_string(const Step& s, const Mesh& mesh) {
  switch (s.op) {
    case Op::AllGather:
      return fmt::format("allgather({}){{{}}}", s.dim, axes_to_string(s.axes, mesh));
    case Op::DynSlice:
      return fmt::format("dynslice({}){{{}}}", s.dim, axes_to_string(s.axes, mesh));
    case Op::AllToAll:
      return fmt::format("alltoall({},{}){{{}}}", s.dim, s.dim2, axes_to_string(s.axes, mesh));
    case Op::AllPermute:
      return fmt::format("allpermute -> {}", to_string(s.target, mesh));
  }
  return "?";
}

int dtype_size(const std::string& dtype) {
  static const std::map<std::string, int> sizes = {{"f64", 8}, {"f32", 4}, {"f16", 2}, {"bf16", 2}, {"i64", 8},
                                                   {"i32", 4}, {"i16", 2}, {"i8", 1},  {"u8", 1},   {"u32", 4}};
  const auto it = sizes.find(dtype);
  if (it == sizes.end())
    throw Error(fmt::format("--dtype: unknown type '{}' (f64, f32, f16, bf16, i64, i32, u32, i16, i8, u8)", dtype));
  return it->second;
}

}  // namespace p2v::engine::reshard
