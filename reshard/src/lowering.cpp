// Lowering to device groups, relabelling (see p2v/reshard/lowering.hpp).
#include "p2v/reshard/lowering.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>

#include "detail.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/text_util.hpp"

namespace p2v::reshard {

using namespace detail;
namespace text = engine::text;

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

Type relabel(const Type& t, const Type& to, const Mesh& mesh, std::vector<std::int64_t>& sigma) {
  if (to.localtype() != t.localtype())
    throw Error(fmt::format("relabel: local types differ ({} vs {})", to_string(t, mesh), to_string(to, mesh)));
  validate(to, mesh);
  const std::int64_t n = mesh.num_devices();
  if (sigma.empty())
    for (std::int64_t d = 0; d < n; ++d) sigma.push_back(d);
  // Every physical device keeps its tile: it takes a logical point of `to` holding that tile, its
  // own point when that one does, else the lowest free one.
  std::map<std::vector<std::int64_t>, std::vector<std::int64_t>> points;
  std::vector<char> taken(static_cast<std::size_t>(n), 0);
  std::vector<std::int64_t> next(static_cast<std::size_t>(n), -1);
  for (std::int64_t d = 0; d < n; ++d) {
    const auto ld = sigma[static_cast<std::size_t>(d)];
    if (offsets(t, mesh, ld) == offsets(to, mesh, ld)) {
      next[static_cast<std::size_t>(d)] = ld;
      taken[static_cast<std::size_t>(ld)] = 1;
    }
  }
  for (std::int64_t ld = 0; ld < n; ++ld)
    if (!taken[static_cast<std::size_t>(ld)]) points[offsets(to, mesh, ld)].push_back(ld);
  for (auto& v : points) std::reverse(v.second.begin(), v.second.end());
  for (std::int64_t d = 0; d < n; ++d) {
    if (next[static_cast<std::size_t>(d)] >= 0) continue;
    auto it = points.find(offsets(t, mesh, sigma[static_cast<std::size_t>(d)]));
    if (it == points.end() || it->second.empty())
      throw Error("relabel: the two layouts hold a tile a different number of times");
    next[static_cast<std::size_t>(d)] = it->second.back();
    it->second.pop_back();
  }
  sigma = std::move(next);
  return to;
}

Type relabel(const Type& t, int dim, const std::vector<int>& new_axes, const Mesh& mesh,
             std::vector<std::int64_t>& sigma) {
  Type r = t;
  auto a = t.dims[dim].axes, b = new_axes;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b) throw Error(fmt::format("relabel({}): the new axes are not a reordering of the old ones", dim));
  r.dims[dim].axes = new_axes;
  return relabel(t, r, mesh, sigma);
}

}  // namespace p2v::reshard
