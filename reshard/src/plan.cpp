// The pipeline, the plan's JSON and random problems (see p2v/reshard/plan.hpp).
#include "p2v/reshard/plan.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "p2v/engine/error.hpp"
#include "p2v/engine/sizes.hpp"

namespace p2v::reshard {

int dtype_size(const std::string& dtype) {
  static const std::map<std::string, int> sizes = {{"f64", 8}, {"f32", 4}, {"f16", 2}, {"bf16", 2}, {"i64", 8},
                                                   {"i32", 4}, {"i16", 2}, {"i8", 1},  {"u8", 1},   {"u32", 4}};
  const auto it = sizes.find(dtype);
  if (it == sizes.end())
    throw Error(fmt::format("--dtype: unknown type '{}' (f64, f32, f16, bf16, i64, i32, u32, i16, i8, u8)", dtype));
  return it->second;
}

double array_bytes(const Type& t, int dtype_bytes) {
  double n = dtype_bytes;
  for (const auto& d : t.dims) n *= static_cast<double>(d.global);
  return n;
}

void scale_leading(Type& from, Type& to, const Mesh& mesh, double bytes, int dtype_bytes) {
  auto split = [&](const Type& t) {
    std::int64_t k = 1;
    for (int a : t.dims[0].axes) k *= mesh.primes[a].size;
    return k;
  };
  const std::int64_t unit = std::lcm(split(from), split(to));
  double rest = dtype_bytes;  // bytes of one index of dimension 0
  for (std::size_t i = 1; i < from.dims.size(); ++i) rest *= static_cast<double>(from.dims[i].global);
  const double units = std::floor(bytes / (rest * static_cast<double>(unit)));
  if (units < 1)
    throw Error(
        fmt::format("--bytes {}: below the smallest array of this layout, {} bytes (dimension 0 must be a "
                    "multiple of {}; the other dimensions keep their sizes)",
                    engine::format_size(bytes), rest * static_cast<double>(unit), unit));
  if (units * static_cast<double>(unit) > 4e18) throw Error(fmt::format("--bytes {}: too large", bytes));
  const auto global = static_cast<std::int64_t>(units) * unit;
  for (Type* t : {&from, &to}) {
    t->dims[0].global = global;
    t->dims[0].local = global / split(*t);
  }
}

Plan plan(const Request& r) {
  Plan pl;
  pl.mesh = parse_mesh(r.mesh);
  pl.from = parse_type(r.from, pl.mesh);
  pl.to = parse_type(r.to, pl.mesh);
  if (pl.from.dims.size() != pl.to.dims.size())
    throw Error(fmt::format("global shapes differ: {} has {} dimensions, {} has {}", r.from, pl.from.dims.size(), r.to,
                            pl.to.dims.size()));
  for (std::size_t i = 0; i < pl.from.dims.size(); ++i)
    if (pl.from.dims[i].global != pl.to.dims[i].global)
      throw Error(
          fmt::format("global shapes differ: dimension {} has global size {} in {} but {} in {}; a "
                      "redistribution keeps the array's shape",
                      i, pl.from.dims[i].global, r.from, pl.to.dims[i].global, r.to));
  pl.dtype_bytes = dtype_size(r.dtype);
  if (r.array_bytes) scale_leading(pl.from, pl.to, pl.mesh, *r.array_bytes, pl.dtype_bytes);
  pl.cost_kind = r.cost;
  pl.bound = std::max(pl.from.localsize(), pl.to.localsize());
  pl.limit = pl.bound;
  if (r.memory_bytes) {
    pl.limit = *r.memory_bytes / pl.dtype_bytes;
    if (pl.limit < pl.bound)
      throw Error(
          fmt::format("--memory {} bytes is below the bound: the larger of the two local sizes is {} elements "
                      "({} bytes of {}); give at least that",
                      *r.memory_bytes, pl.bound, pl.bound * pl.dtype_bytes, r.dtype));
  }
  const System* sys = r.system ? &*r.system : nullptr;
  if (r.cost == CostKind::Topology && !sys)
    throw Error("--cost topology needs --system (a system file with interconnects)");
  const System* topo = r.cost == CostKind::Topology ? sys : nullptr;
  if (sys && sys->num_devices() != pl.mesh.num_devices())
    throw Error(fmt::format("--system {} has {} devices but the mesh has {}; they must be equal", sys->name,
                            sys->num_devices(), pl.mesh.num_devices()));
  pl.program = synthesize(pl.mesh, pl.from, pl.to, pl.limit, topo, pl.dtype_bytes, &pl.states);
  pl.baseline = naive(pl.mesh, pl.from, pl.to);
  price(pl.baseline, pl.mesh, pl.from, pl.dtype_bytes, topo);
  return pl;
}

nlohmann::json to_json(const Plan& p, bool full) {
  using nlohmann::json;
  const bool small = full || p.mesh.num_devices() <= 256;
  auto prog = [&](const Program& pr) {
    json steps = json::array();
    for (const auto& s : pr.steps) {
      json j = {{"op", to_string(s.step.op)},
                {"text", step_to_string(s.step, p.mesh)},
                {"type", to_string(s.after, p.mesh)},
                {"local", s.after.localtype()},
                {"cost", s.cost},
                {"bytes", s.bytes},
                {"group_size", s.group_size},
                {"num_groups", s.num_groups}};
      if (s.step.op != Op::AllPermute) {
        j["dims"] = s.step.op == Op::AllToAll ? json{s.step.dim, s.step.dim2} : json{s.step.dim};
        json axes = json::array();
        const auto names = axes_to_string(s.step.axes, p.mesh);
        std::size_t b = 0;
        for (std::size_t e; (e = names.find(',', b)) != std::string::npos; b = e + 1)
          axes.push_back(names.substr(b, e - b));
        axes.push_back(names.substr(b));
        j["axes"] = axes;
      }
      if (p.cost_kind == CostKind::Topology) {
        j["time_s"] = s.time_s;
        j["level"] = s.level;
      }
      if (s.relabelled) j["relabelled"] = true;
      if (full && s.step.op == Op::DynSlice) j["slice"] = s.lowered.slice;
      if (small && s.step.op != Op::DynSlice) {
        if (s.step.op == Op::AllPermute)
          j["sources"] = s.lowered.sources;
        else
          j["groups"] = s.lowered.groups;
      }
      steps.push_back(j);
    }
    json o = {{"steps", steps}, {"cost", pr.cost}, {"peak", pr.peak}, {"bound", p.bound}};
    if (!full) {  // not in the certificate (its format has no such field)
      o["peak_staged"] = pr.peak_staged;
      o["bound_staged"] = staged_bound(p.bound);
    }
    if (p.cost_kind == CostKind::Topology) o["time_s"] = pr.time_s;
    return o;
  };
  json mesh = json::object(), mesh_axes = json::array();
  for (const auto& a : p.mesh.axes) {
    mesh[a.name] = a.size;
    mesh_axes.push_back({a.name, a.size});
  }
  json out = prog(p.program);
  out["mesh"] = mesh;
  out["mesh_axes"] = mesh_axes;  // in order: devices are numbered in mixed radix, first axis most significant
  out["from"] = to_string(p.from, p.mesh);
  out["to"] = to_string(p.to, p.mesh);
  out["limit"] = p.limit;
  out["bytes_per_element"] = p.dtype_bytes;
  out["cost_model"] = p.cost_kind == CostKind::Paper ? "paper" : "topology";
  out["states"] = p.states;
  out["baseline"] = prog(p.baseline);
  return out;
}

RandomProblem random_problem(std::mt19937_64& rng, int kind, int max_rank, int max_shift) {
  static const std::vector<std::pair<std::string, int>> meshes[] = {
      {{"a", 2}, {"b", 2}, {"c", 2}}, {{"x", 4}, {"y", 6}}, {{"x", 3}, {"y", 5}}, {{"x", 4}, {"y", 4}}};
  static const int unit[] = {8, 24, 15, 16};  // every dimension's global size is a multiple of this
  const auto& axes = meshes[kind];
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int rank = pick(1, kind == 0 ? max_rank : std::min(max_rank, 4));
  std::vector<std::int64_t> global(static_cast<std::size_t>(rank));
  for (auto& n : global)
    n = static_cast<std::int64_t>(unit[kind]) << pick(0, kind == 0 ? max_shift : std::min(max_shift, 1));
  RandomProblem p;
  for (std::size_t i = 0; i < axes.size(); ++i)
    p.mesh += fmt::format("{}{}={}", i ? "," : "", axes[i].first, axes[i].second);
  auto type = [&] {
    std::vector<std::vector<std::size_t>> split(global.size());
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const int d = pick(-1, rank - 1);
      if (d >= 0) split[d].insert(split[d].begin() + pick(0, static_cast<int>(split[d].size())), a);
    }
    std::string s = "[";
    for (std::size_t i = 0; i < global.size(); ++i) {
      std::int64_t k = 1;
      std::string names;
      for (auto a : split[i]) {
        k *= axes[a].second;
        names += (names.empty() ? "" : ",") + axes[a].first;
      }
      s += (i ? "," : "") +
           (split[i].empty() ? std::to_string(global[i]) : fmt::format("{}{{{}}}{}", global[i] / k, names, global[i]));
    }
    return s + "]";
  };
  p.from = type();
  p.to = type();
  return p;
}

}  // namespace p2v::reshard
