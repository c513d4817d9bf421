#include "p2v/engine/synth.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <unordered_map>

#include "p2v/engine/error.hpp"
#include "p2v/engine/state.hpp"  // kMaxStateDevices
#include "state_kernel.hpp"
#include "state_runs.hpp"

namespace p2v::engine {

namespace {

// Device states are interned: a search state is one id per device (4 bytes), the device states
// themselves live once in a table, run-length encoded (state_runs.hpp): a state that holds its
// rows with one column set takes a few words whatever k is, instead of (k+1) w. Copying, hashing
// and comparing a search state is O(k) words, and the Hoare rule of a collective on a group is
// computed once per distinct tuple of member states (cached), however many search paths meet it.
class DeviceTable {
 public:
  explicit DeviceTable(int k)
      : layout_{k, (k + 63) / 64, static_cast<std::size_t>((k + 63) / 64) * (k + 1)},
        block_words_(std::max<std::size_t>(std::size_t{1} << 12, static_cast<std::size_t>(layout_.w) + 1 +
                                                                     static_cast<std::size_t>(k) * (layout_.w + 1))) {}
  const kernel::Layout& layout() const { return layout_; }
  // The record of a state; its first w words are the row mask.
  const std::uint64_t* record(std::uint32_t id) const { return records_[id]; }
  std::size_t runs(std::uint32_t id) const { return records_[id][layout_.w]; }
  // The column set of run i.
  const std::uint64_t* run_columns(std::uint32_t id, std::size_t i) const {
    return records_[id] + layout_.w + 2 + i * (layout_.w + 1);
  }
  // The id of the state that holds the rows of `mask`, each with the column set `cols`.
  std::uint32_t intern_uniform(const std::vector<std::uint64_t>& mask, const std::vector<std::uint64_t>& cols) {
    enc_.begin(layout_.w, mask.data());
    const int first = runs::next_held(mask.data(), layout_.w, 0);
    if (first >= 0) enc_.rows(first, layout_.k - 1, cols.data());  // mask: all rows from first on
    return intern(enc_.words());
  }
  // The id of a record.
  std::uint32_t intern(const std::vector<std::uint64_t>& rec) {
    const std::uint64_t* p = rec.data();
    const std::size_t n = rec.size();
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    // Chained by id: index_ holds the newest id of a hash, next_ the one before it.
    auto [it, fresh] = index_.try_emplace(h, kNone);
    for (std::uint32_t id = it->second; id != kNone; id = next_[id])
      if (runs::record_words(records_[id], layout_.w) == n && std::equal(p, p + n, records_[id])) return id;
    if (blocks_.empty() || used_ + n > block_words_) {
      blocks_.push_back(std::make_unique_for_overwrite<std::uint64_t[]>(block_words_));
      used_ = 0;
    }
    std::uint64_t* dst = blocks_.back().get() + used_;
    std::copy(p, p + n, dst);
    used_ += n;
    const auto id = static_cast<std::uint32_t>(records_.size());
    records_.push_back(dst);
    next_.push_back(it->second);
    it->second = id;
    return id;
  }
  std::size_t size() const { return records_.size(); }

 private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  kernel::Layout layout_;
  std::size_t block_words_;                               // at least one record of the most runs
  std::vector<std::unique_ptr<std::uint64_t[]>> blocks_;  // records never move
  std::size_t used_ = 0;                                  // words used in the last block
  std::vector<const std::uint64_t*> records_;
  std::unordered_map<std::uint64_t, std::uint32_t> index_;
  std::vector<std::uint32_t> next_;
  runs::Builder enc_;  // scratch
};

// (collective, member ids...) -> offset of the members' new ids, or -1 if the step is invalid on
// the group. Open addressing over one slot array; keys of up to kInline ids (groups of up to
// kInline - 1 members: the common case) sit in the slot, so a lookup touches one cache line;
// longer keys live in an arena.
class GroupCache {
 public:
  GroupCache() : slots_(64) {}
  // The value for `key`, or nullptr. Valid until the next insert.
  const std::int32_t* find(const std::vector<std::uint32_t>& key, std::uint64_t h) const {
    for (std::size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.len == 0) return nullptr;
      if (s.hash == h && same(s, key)) return &s.value;
    }
  }
  void insert(const std::vector<std::uint32_t>& key, std::uint64_t h, std::int32_t value) {
    if (4 * (size_ + 1) > 3 * slots_.size()) grow();
    Slot s{h, value, static_cast<std::uint32_t>(key.size()), {}};
    if (key.size() <= kInline)
      std::copy(key.begin(), key.end(), s.ids);
    else {
      s.ids[0] = static_cast<std::uint32_t>(arena_.size());
      arena_.insert(arena_.end(), key.begin(), key.end());
    }
    place(s);
    ++size_;
  }
  std::size_t size() const { return size_; }
  static std::uint64_t hash(const std::vector<std::uint32_t>& v) {
    std::uint64_t h = 0xcbf29ce484222325ull ^ v.size();
    for (std::uint32_t x : v) h = (h ^ x) * 0x100000001b3ull;
    return h ^ (h >> 29);
  }

 private:
  static constexpr std::size_t kInline = 4;
  struct Slot {
    std::uint64_t hash = 0;
    std::int32_t value = 0;
    std::uint32_t len = 0;       // 0: empty (keys have at least two ids: collective and a member)
    std::uint32_t ids[kInline];  // 32 bytes a slot
  };
  bool same(const Slot& s, const std::vector<std::uint32_t>& key) const {
    if (s.len != key.size()) return false;
    const std::uint32_t* p = s.len <= kInline ? s.ids : arena_.data() + s.ids[0];
    return std::equal(key.begin(), key.end(), p);
  }
  void place(const Slot& s) {
    std::size_t i = s.hash & (slots_.size() - 1);
    while (slots_[i].len != 0) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.len != 0) place(s);
  }
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> arena_;
  std::size_t size_ = 0;
};

using IdState = std::vector<std::uint32_t>;

struct IdHash {
  std::size_t operator()(const std::vector<std::uint32_t>& v) const {
    std::uint64_t h = 0xcbf29ce484222325ull ^ v.size();
    for (std::uint32_t x : v) h = (h ^ x) * 0x100000001b3ull;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

struct Search {
  const std::vector<Instruction>& ins;
  DeviceTable table;
  IdState goal;
  std::vector<char> covers_all;  // per instruction: do its groups cover every device?
  std::int64_t nodes = 0, applied = 0, memo_hits = 0;

  GroupCache group_cache;  // offsets into `results`
  std::vector<std::uint32_t> results;
  std::vector<std::uint32_t> key;
  std::vector<const std::uint64_t*> in_ptrs;
  runs::Rules rules;
  std::vector<char> can_finish;  // per instruction: may it be the last step?

  // Last-step filter (remaining == 1): cheap necessary conditions for a step to land on the goal,
  // checked before any group is looked up. Most leaf attempts fail them.
  std::vector<std::vector<std::uint64_t>> changed;  // per instruction: devices in a group of >= 2
  std::vector<std::vector<int>> roots;              // per instruction: each such group's root
  std::vector<std::uint64_t> not_goal;              // scratch: devices not at the goal
  std::int64_t leaf_skips = 0;

  // The valid suffixes of a state as a DAG: an edge (instruction, child) extends every suffix of
  // the child; child == nullptr means the step itself reaches the goal. Shared between all
  // prefixes that reach the same state, so memory is O(states x instructions), not O(programs).
  struct Node {
    std::vector<std::pair<int, const Node*>> edges;
    std::int64_t count = 0;  // programs below this node
  };
  std::deque<Node> nodes_store;
  struct Entry {
    int remaining;
    const Node* node;
  };
  std::unordered_map<IdState, std::vector<Entry>, IdHash> memo;
  std::vector<IdState> scratch;  // scratch[t]: the successor while exploring with t steps left

  Search(const std::vector<Instruction>& in, int k) : ins(in), table(k), rules(k, table.layout().w) {}

  // The members' new ids for collective c on a group, or nullptr if the precondition fails.
  const std::uint32_t* group_result(Collective c, const IdState& cur, const std::vector<int>& grp) {
    const int g = static_cast<int>(grp.size());
    key.resize(g + 1);
    key[0] = static_cast<std::uint32_t>(c);
    for (int a = 0; a < g; ++a) key[a + 1] = cur[grp[a]];
    const std::uint64_t h = GroupCache::hash(key);
    const std::int32_t* found = group_cache.find(key, h);
    if (!found) {
      in_ptrs.resize(g);
      for (int a = 0; a < g; ++a) in_ptrs[a] = table.record(key[a + 1]);
      std::int32_t off = -1;
      if (rules.apply(c, key.data() + 1, in_ptrs.data(), g)) {
        if (results.size() + g > static_cast<std::size_t>(INT32_MAX))
          throw Error("synthesis: the cache of group results exceeds 2^31 entries; lower --max-size");
        off = static_cast<std::int32_t>(results.size());
        // Members whose new records are one (AllReduce, AllGather; the non-roots of Reduce) share
        // an id; Broadcast gives every member the root's.
        std::uint32_t prev = 0;
        for (int a = 0; a < g; ++a) {
          const int o = runs::Rules::out_index(c, a);
          if (c == Collective::Broadcast)
            prev = key[1];
          else if (a == 0 || o != runs::Rules::out_index(c, a - 1))
            prev = table.intern(rules.out(o));
          results.push_back(prev);
        }
      }
      group_cache.insert(key, h, off);
      return off < 0 ? nullptr : results.data() + off;
    }
    return *found < 0 ? nullptr : results.data() + *found;
  }

  // Cheap necessary conditions on one group, from the members' ids and row masks alone (equal ids
  // mean equal states). Most rejected steps fail here, before the group cache is consulted.
  bool quick_reject(Collective c, const IdState& cur, const std::vector<int>& grp) const {
    const std::uint32_t id0 = cur[grp[0]];
    const int w = table.layout().w;
    const std::uint64_t* m0 = table.record(id0);
    switch (c) {
      case Collective::AllReduce:
      case Collective::ReduceScatter:
      case Collective::Reduce:
        for (std::size_t a = 1; a < grp.size(); ++a) {
          const std::uint32_t id = cur[grp[a]];
          if (id == id0) return true;  // identical non-empty states overlap (or both are empty)
          if (std::memcmp(table.record(id), m0, w * sizeof(std::uint64_t)) != 0) return true;  // rows differ
        }
        return false;
      case Collective::Broadcast:
        for (std::size_t a = 1; a < grp.size(); ++a)
          if (cur[grp[a]] != id0) return false;
        return true;  // every member equals the root: not strict
      case Collective::AllGather:
        for (std::size_t a = 1; a < grp.size(); ++a)
          if (cur[grp[a]] == id0) return true;  // same rows twice
        return false;
    }
    return false;
  }

  // Could instruction i, as the last step, turn `cur` into the goal? False only when it cannot:
  // a device outside its groups is not at the goal; AllReduce keeps rows, so every device not at
  // the goal must hold its goal's rows; AllGather keeps each row's columns, so every device not at
  // the goal must hold rows with its goal's one column set; Broadcast copies the root, so every
  // root must be at the goal.
  struct LastStep {
    bool rows = true;     // every device not at the goal holds its goal's rows
    bool columns = true;  // ... and holds them with its goal's one column set
  };
  // Fills not_goal too.
  LastStep last_step(const IdState& cur) {
    LastStep f;
    const int w = table.layout().w;
    std::fill(not_goal.begin(), not_goal.end(), 0);
    for (std::size_t d = 0; d < cur.size(); ++d) {
      if (cur[d] == goal[d]) continue;
      runs::hold(not_goal.data(), static_cast<int>(d));
      f.rows = f.rows && std::memcmp(table.record(cur[d]), table.record(goal[d]), w * sizeof(std::uint64_t)) == 0;
      f.columns =
          f.columns && table.runs(cur[d]) == 1 && table.runs(goal[d]) == 1 &&
          std::memcmp(table.run_columns(cur[d], 0), table.run_columns(goal[d], 0), w * sizeof(std::uint64_t)) == 0;
    }
    return f;
  }

  bool may_finish(std::size_t i, const IdState& cur, const LastStep& last) {
    const auto& ch = changed[i];
    for (std::size_t a = 0; a < ch.size(); ++a)
      if (not_goal[a] & ~ch[a]) return false;
    switch (ins[i].collective) {
      case Collective::AllReduce:
        return last.rows;
      case Collective::AllGather:
        return last.columns;
      case Collective::Broadcast:
        for (int r : roots[i])
          if (cur[r] != goal[r]) return false;
        return true;
      default:
        return true;
    }
  }

  bool apply(const Instruction& in, bool all, const IdState& cur, IdState& next) {
    const auto& g0 = in.grouping.groups.front();
    if (g0.size() > 1 && quick_reject(in.collective, cur, g0)) return false;
    if (!all)
      next = cur;  // Master: devices outside the group keep their state
    else
      next.resize(cur.size());
    for (const auto& grp : in.grouping.groups) {
      const std::uint32_t* r = group_result(in.collective, cur, grp);
      if (!r) return false;
      for (std::size_t a = 0; a < grp.size(); ++a) next[grp[a]] = r[a];
    }
    return true;
  }

  const Node* suffixes(const IdState& cur, int remaining) {
    const bool use_memo = remaining >= 2;
    if (use_memo) {
      auto it = memo.find(cur);
      if (it != memo.end())
        for (const auto& e : it->second)
          if (e.remaining == remaining) {
            ++memo_hits;
            return e.node;
          }
    }
    Node& out = nodes_store.emplace_back();
    IdState& next = scratch[remaining];
    const LastStep last = remaining == 1 ? last_step(cur) : LastStep{};
    for (std::size_t i = 0; i < ins.size(); ++i) {
      // With one step left only AllReduce, AllGather or Broadcast can land on the goal:
      // ReduceScatter and Reduce leave some member of a group of two or more without every row.
      if (remaining == 1 && !can_finish[i]) continue;
      if (remaining == 1 && !may_finish(i, cur, last)) {
        ++leaf_skips;
        continue;
      }
      ++nodes;
      const int idx = static_cast<int>(i);
      if (!apply(ins[i], covers_all[i], cur, next)) continue;
      ++applied;
      if (next == goal) {
        // The goal admits no further rule (docs/model.md §5), so a valid program is never extended.
        out.edges.push_back({idx, nullptr});
        ++out.count;
        continue;
      }
      if (remaining == 1) continue;
      const Node* child = suffixes(next, remaining - 1);
      if (child->count == 0) continue;
      out.edges.push_back({idx, child});
      out.count += child->count;
    }
    if (use_memo) memo[cur].push_back({remaining, &out});
    return &out;
  }

  // Every program below `n`, depth first in instruction order (the order of the plain search).
  void expand(const Node* n, Program& prefix, std::vector<Program>& out, std::int64_t limit) {
    for (const auto& [idx, child] : n->edges) {
      if (limit > 0 && static_cast<std::int64_t>(out.size()) >= limit) return;
      prefix.push_back(idx);
      if (!child)
        out.push_back(prefix);
      else
        expand(child, prefix, out, limit);
      prefix.pop_back();
    }
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
  Search s(r.instructions, k);
  // Initially device d holds every row with its own column; at the goal every member of a goal
  // group holds every row with the group's columns (docs/model.md §4), and a device in no group nothing.
  kernel::check_goal_groups(k, goal_groups);
  const int w = s.table.layout().w;
  std::vector<std::uint64_t> all_rows(w, 0), none(w, 0), cols(w);
  for (int r = 0; r < k; ++r) runs::hold(all_rows.data(), r);
  IdState init_ids(k);
  s.goal.assign(k, s.table.intern_uniform(none, none));
  for (int d = 0; d < k; ++d) {
    std::fill(cols.begin(), cols.end(), 0);
    runs::hold(cols.data(), d);
    init_ids[d] = s.table.intern_uniform(all_rows, cols);
  }
  for (const auto& g : goal_groups) {
    std::fill(cols.begin(), cols.end(), 0);
    for (int j : g) runs::hold(cols.data(), j);
    const std::uint32_t id = s.table.intern_uniform(all_rows, cols);
    for (int d : g) s.goal[d] = id;
  }
  // Per instruction: do its groups cover every device; which devices does it change and from
  // which roots; may it be the last step.
  s.not_goal.assign(w, 0);
  for (const auto& in : r.instructions) {
    std::size_t covered = 0;
    auto& ch = s.changed.emplace_back(w, 0);
    auto& roots = s.roots.emplace_back();
    for (const auto& g : in.grouping.groups) {
      covered += g.size();
      if (g.size() < 2) continue;
      roots.push_back(g[0]);
      for (int d : g) runs::hold(ch.data(), d);
    }
    s.covers_all.push_back(covered == static_cast<std::size_t>(k));
    const bool singletons = in.grouping.groups.empty() || in.grouping.groups[0].size() < 2;
    s.can_finish.push_back(singletons ||
                           (in.collective != Collective::ReduceScatter && in.collective != Collective::Reduce));
  }
  s.scratch.assign(opt.max_size + 1, IdState(k));
  if (init_ids != s.goal) {
    const auto* root = s.suffixes(init_ids, opt.max_size);
    if (root->count > kMaxPrograms && (opt.max_programs <= 0 || opt.max_programs > kMaxPrograms))
      throw Error(fmt::format("{} valid programs up to size {}: more than p2v lists ({}); lower --max-size",
                              root->count, opt.max_size, kMaxPrograms));
    if (opt.stats)
      std::fprintf(stderr,
                   "synth stats: attempts %lld last-step skips %lld applied %lld memo %zu hits %lld nodes %zu cache "
                   "%zu results %zu "
                   "devstates %zu\n",
                   (long long)s.nodes, (long long)s.leaf_skips, (long long)s.applied, s.memo.size(),
                   (long long)s.memo_hits, s.nodes_store.size(), s.group_cache.size(), s.results.size(),
                   s.table.size());
    Program prefix;
    r.programs.reserve(static_cast<std::size_t>(root->count));
    s.expand(root, prefix, r.programs, opt.max_programs);
    r.truncated = opt.max_programs > 0 && root->count > opt.max_programs;
  }
  std::stable_sort(r.programs.begin(), r.programs.end(),
                   [](const Program& a, const Program& b) { return a.size() < b.size(); });
  r.nodes = s.nodes;
  r.applied = s.applied;
  return r;
}

Groups local_goal_groups(const SynthesisHierarchy& h, const Placement& p) {
  if (is_reduction_kind(h.kind)) {
    std::vector<int> all(h.num_local());
    for (int i = 0; i < h.num_local(); ++i) all[i] = i;
    return {all};
  }
  return p.reduction_groups();  // (a)-(c): local = system devices
}

void check_concrete_size(HierarchyKind kind, const ParallelismMatrix& x, const std::vector<int>& reduce) {
  // Local devices: one reduction group for (d) (the reduction axes' factors), every device else.
  std::int64_t n = 1;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!is_reduction_kind(kind) || std::find(reduce.begin(), reduce.end(), static_cast<int>(i)) != reduce.end())
      for (int v : x[i]) n *= v;
  check_concrete_size(kind, n);
}

void check_concrete_size(HierarchyKind kind, std::int64_t local_devices) {
  if (local_devices <= kMaxStateDevices) return;
  if (is_reduction_kind(kind))
    throw Error(
        fmt::format("the concrete engine (--concrete) handles reduction groups of at most {} devices and this "
                    "placement's have {}; drop --concrete: synthesis on the shape (the default) works at any size",
                    kMaxStateDevices, local_devices));
  throw Error(
      fmt::format("hierarchy ({}) covers all {} devices and the concrete engine handles at most {}; use "
                  "hierarchy (d) (the default, --hierarchy d), which works at any size on the placement's shape",
                  to_string(kind), local_devices, kMaxStateDevices));
}

SynthResult synthesize(const Placement& p, const std::vector<std::string>& level_names, HierarchyKind kind,
                       const SynthOptions& opt) {
  SynthesisHierarchy h = make_hierarchy(p, level_names, kind);
  check_concrete_size(kind, h.num_local());
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
