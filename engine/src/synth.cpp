#include "p2v/engine/synth.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <unordered_map>

#include "p2v/engine/error.hpp"
#include "p2v/engine/state.hpp"
#include "state_kernel.hpp"

namespace p2v::engine {

namespace {

// Device states are interned: a search state is one id per device (4 bytes), the device states
// themselves (k+1 bitset rows of k bits) live once in a table. Copying, hashing and comparing a
// search state is then O(k) instead of O(k^2) words, and the Hoare rule of a collective on a
// group is computed once per distinct tuple of member states (cached), however many search
// paths meet it.
class DeviceTable {
 public:
  explicit DeviceTable(int k) : layout_{k, (k + 63) / 64, static_cast<std::size_t>((k + 63) / 64) * (k + 1)} {}
  const kernel::Layout& layout() const { return layout_; }
  const std::uint64_t* get(std::uint32_t id) const {
    return blocks_[id / kPerBlock].get() + static_cast<std::size_t>(id % kPerBlock) * layout_.stride;
  }
  std::uint32_t intern(const std::uint64_t* p) {
    const std::size_t n = layout_.stride;
    // Four independent lanes so the multiplies overlap.
    std::uint64_t h[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (int l = 0; l < 4; ++l) h[l] = (h[l] ^ p[i + l]) * 0xff51afd7ed558ccdull;
    for (; i < n; ++i) h[0] = (h[0] ^ p[i]) * 0xff51afd7ed558ccdull;
    const std::uint64_t key = h[0] ^ (h[1] >> 17) ^ (h[2] << 13) ^ (h[3] >> 29);
    // Chained by id: index_ holds the newest id of a hash, next_ the one before it.
    auto [it, fresh] = index_.try_emplace(key, kNone);
    for (std::uint32_t id = it->second; id != kNone; id = next_[id])
      if (std::memcmp(get(id), p, n * sizeof(std::uint64_t)) == 0) return id;
    const auto id = static_cast<std::uint32_t>(size_);
    if (id % kPerBlock == 0) blocks_.push_back(std::make_unique_for_overwrite<std::uint64_t[]>(kPerBlock * n));
    std::memcpy(blocks_.back().get() + static_cast<std::size_t>(id % kPerBlock) * n, p, n * sizeof(std::uint64_t));
    ++size_;
    next_.push_back(it->second);
    it->second = id;
    return id;
  }
  std::size_t size() const { return size_; }

 private:
  static constexpr std::size_t kPerBlock = 64;  // device states per block; blocks never move
  kernel::Layout layout_;
  std::vector<std::unique_ptr<std::uint64_t[]>> blocks_;
  std::size_t size_ = 0;
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  std::unordered_map<std::uint64_t, std::uint32_t> index_;
  std::vector<std::uint32_t> next_;
};

// (collective, member ids...) -> offset of the members' new ids, or -1 if the step is invalid on
// the group. Open addressing over one slot array; keys of up to kInline ids (groups of up to
// kInline - 1 members: the common case) sit in the slot, so a lookup touches one cache line;
// longer keys live in an arena.
class GroupCache {
 public:
  GroupCache() : slots_(1024) {}
  // The value for `key`, or nullptr. Valid until the next insert.
  const std::int64_t* find(const std::vector<std::uint32_t>& key, std::uint64_t h) const {
    for (std::size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.len == 0) return nullptr;
      if (s.hash == h && same(s, key)) return &s.value;
    }
  }
  void insert(const std::vector<std::uint32_t>& key, std::uint64_t h, std::int64_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
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
    std::int64_t value = 0;
    std::uint32_t len = 0;  // 0: empty (keys have at least two ids: collective and a member)
    std::uint32_t ids[kInline];
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
  std::vector<std::uint64_t*> out_ptrs;
  std::vector<std::uint64_t> out_buf;
  std::vector<char> can_finish;  // per instruction: may it be the last step?

  // Last-step filter (remaining == 1): cheap necessary conditions for a step to land on the goal,
  // checked before any group is looked up. Most leaf attempts fail them.
  std::vector<std::vector<std::uint64_t>> changed;  // per instruction: devices in a group of >= 2
  std::vector<std::vector<int>> roots;              // per instruction: each such group's root
  // Per interned device state: a fingerprint of its one column set (kMixed if the held rows'
  // column sets differ or it holds none).
  static constexpr std::uint64_t kMixed = 1;
  std::vector<std::uint64_t> col_print;
  std::vector<std::uint64_t> not_goal;  // scratch: devices not at the goal
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

  Search(const std::vector<Instruction>& in, int k) : ins(in), table(k) {}

  // The members' new ids for collective c on a group, or nullptr if the precondition fails.
  const std::uint32_t* group_result(Collective c, const IdState& cur, const std::vector<int>& grp) {
    const int g = static_cast<int>(grp.size());
    key.resize(g + 1);
    key[0] = static_cast<std::uint32_t>(c);
    for (int a = 0; a < g; ++a) key[a + 1] = cur[grp[a]];
    const std::uint64_t h = GroupCache::hash(key);
    const std::int64_t* found = group_cache.find(key, h);
    if (!found) {
      const auto& L = table.layout();
      in_ptrs.resize(g);
      for (int a = 0; a < g; ++a) in_ptrs[a] = table.get(key[a + 1]);
      std::int64_t off = -1;
      if (kernel::group_check(c, in_ptrs.data(), grp.data(), g, L, nullptr)) {
        // Equal results share a buffer: one for AllReduce/AllGather/Broadcast, root + rest for
        // Reduce, one per member for ReduceScatter.
        const int distinct = c == Collective::ReduceScatter ? g : c == Collective::Reduce ? 2 : 1;
        out_buf.resize(static_cast<std::size_t>(distinct) * L.stride);
        out_ptrs.resize(g);
        for (int a = 0; a < g; ++a)
          out_ptrs[a] = out_buf.data() + static_cast<std::size_t>(std::min(a, distinct - 1)) * L.stride;
        kernel::group_apply(c, in_ptrs.data(), out_ptrs.data(), g, L);
        off = static_cast<std::int64_t>(results.size());
        std::uint32_t prev = 0;
        for (int a = 0; a < g; ++a) {
          const bool same = a > 0 && out_ptrs[a] == out_ptrs[a - 1];
          prev = same ? prev : table.intern(out_ptrs[a]);
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
    const std::uint64_t* m0 = table.get(id0);
    switch (c) {
      case Collective::AllReduce:
      case Collective::ReduceScatter:
      case Collective::Reduce:
        for (std::size_t a = 1; a < grp.size(); ++a) {
          const std::uint32_t id = cur[grp[a]];
          if (id == id0) return true;  // identical non-empty states overlap (or both are empty)
          if (std::memcmp(table.get(id), m0, w * sizeof(std::uint64_t)) != 0) return true;  // rows differ
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

  void describe(std::uint32_t id) {
    if (id < col_print.size()) return;
    const auto& L = table.layout();
    for (auto i = static_cast<std::uint32_t>(col_print.size()); i <= id; ++i) {
      const std::uint64_t* p = table.get(i);
      std::uint64_t print = 0, first = 0;
      bool mixed = false, any = false;
      for (int r = 0; r < L.k && !mixed; ++r) {
        if (!(p[r >> 6] >> (r & 63) & 1)) continue;
        const std::uint64_t* c = p + L.w + static_cast<std::size_t>(r) * L.w;
        std::uint64_t h = 0x9E3779B97F4A7C15ull;
        for (int a = 0; a < L.w; ++a) h = (h ^ c[a]) * 0xff51afd7ed558ccdull;
        if (!any) first = r;
        mixed = any && (h != print || std::memcmp(c, p + L.w + first * L.w, L.w * sizeof(std::uint64_t)) != 0);
        print = h;
        any = true;
      }
      col_print.push_back(mixed || !any || print == kMixed ? kMixed : print);
    }
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
      not_goal[d >> 6] |= std::uint64_t{1} << (d & 63);
      describe(std::max(cur[d], goal[d]));
      f.rows = f.rows && std::memcmp(table.get(cur[d]), table.get(goal[d]), w * sizeof(std::uint64_t)) == 0;
      f.columns = f.columns && col_print[cur[d]] != kMixed && col_print[cur[d]] == col_print[goal[d]];
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
        // The goal admits no further rule (SPEC §5), so a valid program is never extended.
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
  const StateSet goal = StateSet::goal(k, goal_groups);
  const StateSet init = StateSet::initial(k);
  Search s(r.instructions, k);
  IdState init_ids(k);
  s.goal.resize(k);
  for (int d = 0; d < k; ++d) {
    init_ids[d] = s.table.intern(init.dev(d));
    s.goal[d] = s.table.intern(goal.dev(d));
  }
  for (const auto& in : r.instructions) {
    std::size_t covered = 0;
    for (const auto& g : in.grouping.groups) covered += g.size();
    s.covers_all.push_back(covered == static_cast<std::size_t>(k));
  }
  const int w = s.table.layout().w;
  s.not_goal.assign(w, 0);
  for (const auto& in : r.instructions) {
    auto& ch = s.changed.emplace_back(w, 0);
    auto& roots = s.roots.emplace_back();
    for (const auto& g : in.grouping.groups) {
      if (g.size() < 2) continue;
      roots.push_back(g[0]);
      for (int d : g) ch[d >> 6] |= std::uint64_t{1} << (d & 63);
    }
  }
  for (const auto& in : r.instructions) {
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
