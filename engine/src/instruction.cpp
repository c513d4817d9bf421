#include "p2v/engine/instruction.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>

#include "p2v/engine/error.hpp"

namespace p2v::engine {

const char* to_string(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "AllReduce";
    case Collective::ReduceScatter:
      return "ReduceScatter";
    case Collective::AllGather:
      return "AllGather";
    case Collective::Reduce:
      return "Reduce";
    case Collective::Broadcast:
      return "Broadcast";
  }
  return "?";
}

Collective parse_collective(const std::string& s) {
  for (Collective c : kAllCollectives)
    if (s == to_string(c)) return c;
  throw Error(
      fmt::format("unknown collective '{}' (expected AllReduce, ReduceScatter, AllGather, Reduce or Broadcast)", s));
}

MasterCollectives parse_master_collectives(const std::string& s) {
  if (s == "allreduce") return MasterCollectives::AllReduceOnly;
  if (s == "all") return MasterCollectives::All;
  throw Error(fmt::format("--master-collectives '{}': expected allreduce or all", s));
}

const char* to_string(MasterCollectives m) { return m == MasterCollectives::All ? "all" : "allreduce"; }

Groups form_groups(const SynthesisHierarchy& h, int slice, FormKind form, int e) {
  const int n = h.num_levels();
  if (slice < 0 || slice >= n - 1)
    throw Error(fmt::format("slice level {} is out of range (0..{}; the leaf level is never a slice)", slice, n - 2));
  if (form != FormKind::Inside && (e < 0 || e >= slice))
    throw Error(fmt::format("form level {} must be a strict ancestor of slice level {}", e, slice));
  std::map<std::vector<int>, std::size_t> key_to_group;
  Groups groups;
  for (int l = 0; l < h.num_local(); ++l) {
    const auto& c = h.coords[l];
    std::vector<int> key;
    if (form == FormKind::Inside) {
      key.assign(c.begin(), c.begin() + slice + 1);
    } else {
      key.assign(c.begin(), c.begin() + e + 1);
      key.insert(key.end(), c.begin() + slice + 1, c.end());
      if (form == FormKind::Master && std::any_of(key.begin(), key.end(), [](int v) { return v != 0; }))
        continue;  // Master: only the group of the first device
    }
    auto [it, fresh] = key_to_group.emplace(std::move(key), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(l);
  }
  // Local order is system order within a copy, so each group is ascending already; order
  // groups by first member.
  std::sort(groups.begin(), groups.end());
  return groups;
}

std::vector<Grouping> groupings(const SynthesisHierarchy& h) {
  std::vector<Grouping> out;
  std::set<Groups> seen;
  auto consider = [&](int s, FormKind f, int e) {
    Groups g = form_groups(h, s, f, e);
    if (g.empty() || g[0].size() < 2) return;  // all singletons (groups are equal-sized)
    bool all_single = std::all_of(g.begin(), g.end(), [](const auto& v) { return v.size() < 2; });
    if (all_single) return;
    if (!seen.insert(g).second) return;
    out.push_back({s, f, f == FormKind::Inside ? -1 : e, std::move(g)});
  };
  for (int s = 0; s + 1 < h.num_levels(); ++s) {
    consider(s, FormKind::Inside, -1);
    for (int e = s - 1; e >= 0; --e) consider(s, FormKind::Parallel, e);
    for (int e = s - 1; e >= 0; --e) consider(s, FormKind::Master, e);
  }
  return out;
}

std::vector<Instruction> instructions(const SynthesisHierarchy& h, MasterCollectives mc) {
  std::vector<Instruction> out;
  // Identity is (collective, groups). A Master grouping whose single group equals a grouping
  // that came first is already dropped by groupings(); the remaining groupings are distinct.
  for (const auto& g : groupings(h)) {
    for (Collective c : kAllCollectives) {
      if (g.form == FormKind::Master && mc == MasterCollectives::AllReduceOnly && c != Collective::AllReduce) continue;
      out.push_back({c, g});
    }
  }
  return out;
}

std::string form_name(const SynthesisHierarchy& h, const Grouping& g) {
  switch (g.form) {
    case FormKind::Inside:
      return "Inside";
    case FormKind::Parallel:
      return fmt::format("Parallel({})", h.names[g.e]);
    case FormKind::Master:
      return fmt::format("Master({})", h.names[g.e]);
  }
  return "?";
}

std::string grouping_name(const SynthesisHierarchy& h, const Grouping& g) {
  return fmt::format("({},{})", h.names[g.slice], form_name(h, g));
}

std::string instruction_name(const SynthesisHierarchy& h, const Instruction& in) {
  return fmt::format("{}@{}", to_string(in.collective), grouping_name(h, in.grouping));
}

Groups lower_groups(const SynthesisHierarchy& h, const Groups& local) {
  Groups out;
  out.reserve(local.size() * h.to_system.size());
  for (const auto& copy : h.to_system)
    for (const auto& g : local) {
      std::vector<int> sys;
      sys.reserve(g.size());
      for (int l : g) sys.push_back(copy[l]);
      std::sort(sys.begin(), sys.end());
      out.push_back(std::move(sys));
    }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace p2v::engine
