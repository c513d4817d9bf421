// Meshes and their prime split (see p2v/reshard/mesh.hpp).
#include "p2v/reshard/mesh.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>

#include "detail.hpp"
#include "p2v/engine/error.hpp"
#include "p2v/engine/system.hpp"
#include "p2v/engine/text_util.hpp"

namespace p2v::reshard {

using namespace detail;
namespace text = engine::text;

// ---- mesh ----

std::int64_t Mesh::num_devices() const {
  return std::accumulate(axes.begin(), axes.end(), std::int64_t{1},
                         [](std::int64_t n, const Axis& a) { return n * a.size; });
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
    if (size > engine::kMaxSystemDevices)
      throw Error(fmt::format("--mesh: axis {} has size {} (at most {})", name, size, engine::kMaxSystemDevices));
    m.axes.push_back({name, static_cast<int>(size)});
    if (m.num_devices() > engine::kMaxSystemDevices)
      throw Error(
          fmt::format("--mesh: {} devices, more than the {} supported", m.num_devices(), engine::kMaxSystemDevices));
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

}  // namespace p2v::reshard
