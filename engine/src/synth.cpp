#include "p2v/engine/synth.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <unordered_map>

#include "p2v/engine/error.hpp"
#include "p2v/engine/state.hpp"

namespace p2v::engine {

namespace {

// Depth-first search with memoization: suffixes(state, t) is the list of every valid suffix of at
// most t steps from `state` (each ending exactly at the goal), in instruction order. Different
// prefixes often reach the same state (commuting steps), so suffix lists are shared.
struct Search {
  const std::vector<Instruction>& ins;
  const StateSet& goal;
  const SynthOptions& opt;
  std::int64_t nodes = 0, applied = 0, memo_hits = 0;

  struct Entry {
    StateSet state;
    int remaining;
    std::shared_ptr<const std::vector<Program>> suffixes;
  };
  std::unordered_map<std::uint64_t, std::vector<Entry>> memo;

  std::vector<StateSet> scratch;  // scratch[t]: the successor state while exploring with t steps left

  std::shared_ptr<const std::vector<Program>> suffixes(const StateSet& cur, int remaining) {
    // Memoize where it pays: with one step left the test is cheap and writes nothing.
    const bool use_memo = remaining >= 2;
    std::uint64_t h = 0;
    if (use_memo) {
      h = cur.hash() ^ (static_cast<std::uint64_t>(remaining) * 0x9E3779B97F4A7C15ull);
      auto it = memo.find(h);
      if (it != memo.end())
        for (const auto& e : it->second)
          if (e.remaining == remaining && e.state == cur) {
            ++memo_hits;
            return e.suffixes;
          }
    }
    auto out = std::make_shared<std::vector<Program>>();
    StateSet& next = scratch[remaining];
    for (std::size_t i = 0; i < ins.size(); ++i) {
      ++nodes;
      const int idx = static_cast<int>(i);
      if (remaining == 1) {
        // Last step: only a step that lands exactly on the goal matters; test without writing.
        if (cur.finishes(ins[i].collective, ins[i].grouping.groups, goal)) {
          ++applied;
          out->push_back({idx});
        }
        continue;
      }
      if (!cur.apply(ins[i].collective, ins[i].grouping.groups, next)) continue;
      ++applied;
      if (next == goal) {
        // The goal admits no further rule (SPEC §5), so a valid program is never extended.
        out->push_back({idx});
        continue;
      }
      auto rest = suffixes(next, remaining - 1);
      for (const auto& r : *rest) {
        Program p;
        p.reserve(r.size() + 1);
        p.push_back(idx);
        p.insert(p.end(), r.begin(), r.end());
        out->push_back(std::move(p));
      }
    }
    if (use_memo) memo[h].push_back({cur, remaining, out});
    return out;
  }
};

}  // namespace

SynthResult synthesize(const SynthesisHierarchy& h, const Groups& goal_groups, const SynthOptions& opt) {
  if (opt.max_size < 1 || opt.max_size > kMaxProgramSize)
    throw Error(fmt::format("--max-size {}: must be between 1 and {} (the search grows exponentially with it)",
                            opt.max_size, kMaxProgramSize));
  SynthResult r;
  r.hierarchy = h;
  r.instructions = instructions(h, opt.master);
  const int k = h.num_local();
  const StateSet goal = StateSet::goal(k, goal_groups);
  Search s{r.instructions, goal, opt, 0, 0, 0, {}, {}};
  s.scratch.assign(opt.max_size + 1, StateSet(k));
  const StateSet init = StateSet::initial(k);
  if (!(init == goal)) r.programs = *s.suffixes(init, opt.max_size);
  if (opt.max_programs > 0 && static_cast<std::int64_t>(r.programs.size()) > opt.max_programs) {
    r.programs.resize(opt.max_programs);
    r.truncated = true;
  }
  std::stable_sort(r.programs.begin(), r.programs.end(),
                   [](const Program& a, const Program& b) { return a.size() < b.size(); });
  r.nodes = s.nodes;
  r.applied = s.applied;
  return r;
}

Groups local_goal_groups(const SynthesisHierarchy& h, const Placement& p) {
  if (h.kind == HierarchyKind::ReductionAxes || h.kind == HierarchyKind::ReductionUncollapsed) {
    std::vector<int> all(h.num_local());
    for (int i = 0; i < h.num_local(); ++i) all[i] = i;
    return {all};
  }
  return p.reduction_groups();  // (a)-(c): local = system devices
}

SynthResult synthesize(const Placement& p, const std::vector<std::string>& level_names, HierarchyKind kind,
                       const SynthOptions& opt) {
  SynthesisHierarchy h = make_hierarchy(p, level_names, kind);
  if (h.num_local() > kMaxStateDevices)
    throw Error(fmt::format("hierarchy ({}) covers {} devices; the synthesizer handles at most {} (use hierarchy (d), "
                            "whose states cover one reduction group)",
                            to_string(kind), h.num_local(), kMaxStateDevices));
  return synthesize(h, local_goal_groups(h, p), opt);
}

std::string program_name(const SynthResult& r, const Program& prog) {
  std::string s;
  for (std::size_t i = 0; i < prog.size(); ++i) {
    if (i) s += " ; ";
    s += instruction_name(r.hierarchy, r.instructions[prog[i]]);
  }
  return s;
}

LoweredProgram lower(const SynthResult& r, const Program& prog) {
  LoweredProgram lp;
  for (int i : prog) {
    const auto& in = r.instructions[i];
    lp.push_back({in.collective, lower_groups(r.hierarchy, in.grouping.groups)});
  }
  return lp;
}

}  // namespace p2v::engine
