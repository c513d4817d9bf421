#pragma once
// Device states run-length encoded, and the five Hoare rules on them (private to the engine; the
// synthesizer's interned states). The reference semantics is state_kernel.hpp, over the plain
// layout (a row mask, then k column sets of w words); the tests compare the two through the
// synthesizer (brute force, the shape engine, the SMT encodings).
//
// A record is: the row mask (w words), the number of runs n (one word), then n runs, each its
// first and last row (one word: first << 32 | last) and its column set (w words). A run is a
// maximal sequence of consecutive held rows with one column set (rows in [first, last] that are
// not held belong to no run). A state that holds its rows with one column set, as every live state
// does, is 2w + 2 words whatever k is; the rules cost O(runs) where they can, O(held rows) at most.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "p2v/engine/instruction.hpp"
#include "state_kernel.hpp"

namespace p2v::engine::runs {

inline bool held(const std::uint64_t* mask, int r) { return mask[r >> 6] >> (r & 63) & 1; }
inline void hold(std::uint64_t* mask, int r) { mask[r >> 6] |= std::uint64_t{1} << (r & 63); }

// The first held row >= r, or -1.
inline int next_held(const std::uint64_t* mask, int w, int r) {
  int wi = r >> 6;
  if (wi >= w) return -1;
  std::uint64_t m = mask[wi] & (~std::uint64_t{0} << (r & 63));
  while (!m) {
    if (++wi >= w) return -1;
    m = mask[wi];
  }
  return wi * 64 + std::countr_zero(m);
}

inline std::size_t record_words(const std::uint64_t* rec, int w) {
  return static_cast<std::size_t>(w) + 1 + rec[w] * (w + 1);
}

// The column sets of one record's held rows, asked for in ascending row order.
class Cursor {
 public:
  Cursor() = default;
  Cursor(const std::uint64_t* rec, int w) : run_(rec + w + 1), w_(w) {}
  // The run holding row r, as its header: r must be held, and rows asked for never decrease.
  const std::uint64_t* run_of(int r) {
    while (static_cast<int>(run_[0] & 0xffffffffu) < r) run_ += w_ + 1;
    return run_;
  }
  static int last(const std::uint64_t* run) { return static_cast<int>(run[0] & 0xffffffffu); }

 private:
  const std::uint64_t* run_ = nullptr;
  int w_ = 0;
};

// Builds a record from held rows appended in ascending order.
class Builder {
 public:
  // Starts a record; `mask` = nullptr: the rows appended set the mask.
  void begin(int w, const std::uint64_t* mask) {
    w_ = w;
    last_ = 0;
    words_.assign(w + 1, 0);
    if (mask)
      for (int i = 0; i < w; ++i) words_[i] = mask[i];
    own_mask_ = !mask;
  }
  // Held rows first..last (every held row in between) with column set c.
  void rows(int first, int last, const std::uint64_t* c) {
    if (own_mask_)
      for (int r = first; r <= last; ++r) hold(words_.data(), r);
    if (last_ && std::equal(c, c + w_, words_.begin() + static_cast<std::ptrdiff_t>(last_) + 1)) {
      words_[last_] = (words_[last_] & ~std::uint64_t{0xffffffffu}) | static_cast<std::uint32_t>(last);
      return;
    }
    last_ = words_.size();
    words_.push_back(static_cast<std::uint64_t>(first) << 32 | static_cast<std::uint32_t>(last));
    words_.insert(words_.end(), c, c + w_);
    ++words_[w_];
  }
  const std::vector<std::uint64_t>& words() const { return words_; }

 private:
  int w_ = 0;
  std::size_t last_ = 0;  // offset of the last run's header, 0 if none
  bool own_mask_ = false;
  std::vector<std::uint64_t> words_;
};

// The five rules on records. apply() checks the precondition on the members' records and, if it
// holds, leaves their new records in out(a) (members may share one: see out_index).
class Rules {
 public:
  Rules(int k, int w) : k_(k), w_(w), acc_(w), owner_(k) {}

  // Member a's new record is out(out_index(c, a)). Broadcast writes none: every member gets the
  // root's record.
  static int out_index(Collective c, int a) {
    switch (c) {
      case Collective::ReduceScatter:
        return a;
      case Collective::Reduce:
        return a == 0 ? 0 : 1;
      default:
        return 0;
    }
  }
  const std::vector<std::uint64_t>& out(int i) const { return out_[i].words(); }

  // ids: the members' state ids (equal ids, equal states); P: their records.
  bool apply(Collective c, const std::uint32_t* ids, const std::uint64_t* const* P, int g) {
    switch (c) {
      case Collective::AllReduce:
      case Collective::ReduceScatter:
      case Collective::Reduce:
        return reduce(c, P, g);
      case Collective::AllGather:
        return all_gather(P, g);
      case Collective::Broadcast:
        return broadcast(ids, P, g);
    }
    return false;
  }

 private:
  // AllReduce, ReduceScatter, Reduce: equal non-empty rows, pairwise-disjoint column sets per row
  // (ReduceScatter: rows divisible by g). Walks the segments where no member's run changes.
  bool reduce(Collective c, const std::uint64_t* const* P, int g) {
    const std::uint64_t* m0 = P[0];
    const int total = kernel::popcount_words(m0, w_);
    if (total == 0) return false;
    for (int a = 1; a < g; ++a)
      if (!std::equal(m0, m0 + w_, P[a])) return false;
    if (c == Collective::ReduceScatter && total % g != 0) return false;
    const int outs = c == Collective::ReduceScatter ? g : c == Collective::Reduce ? 2 : 1;
    if (static_cast<int>(out_.size()) < outs) out_.resize(outs);
    if (c == Collective::ReduceScatter)
      for (int a = 0; a < g; ++a) out_[a].begin(w_, nullptr);
    else
      out_[0].begin(w_, m0);
    if (c == Collective::Reduce) {
      zero_.assign(w_, 0);
      out_[1].begin(w_, zero_.data());
    }
    cursors_.resize(g);
    for (int a = 0; a < g; ++a) cursors_[a] = Cursor(P[a], w_);
    std::uint64_t* u = acc_.data();
    const int block = total / g;
    int index = 0;  // held rows before r
    for (int r = next_held(m0, w_, 0); r >= 0;) {
      int end = k_ - 1;
      std::fill(u, u + w_, 0);
      for (int a = 0; a < g; ++a) {
        const std::uint64_t* run = cursors_[a].run_of(r);
        end = std::min(end, Cursor::last(run));
        for (int i = 0; i < w_; ++i) {
          if (u[i] & run[1 + i]) return false;
          u[i] |= run[1 + i];
        }
      }
      if (c != Collective::ReduceScatter) {
        out_[0].rows(r, end, u);
        r = next_held(m0, w_, end + 1);
        continue;
      }
      for (; r >= 0 && r <= end; r = next_held(m0, w_, r + 1)) out_[index++ / block].rows(r, r, u);
    }
    return true;
  }

  // Non-empty, equally many, pairwise-disjoint rows; every member gets the union.
  bool all_gather(const std::uint64_t* const* P, int g) {
    const int n0 = kernel::popcount_words(P[0], w_);
    if (n0 == 0) return false;
    std::uint64_t* u = acc_.data();
    std::fill(u, u + w_, 0);
    for (int a = 0; a < g; ++a) {
      if (kernel::popcount_words(P[a], w_) != n0) return false;
      for (int i = 0; i < w_; ++i) {
        if (u[i] & P[a][i]) return false;
        u[i] |= P[a][i];
      }
    }
    cursors_.resize(g);
    for (int a = 0; a < g; ++a) {
      cursors_[a] = Cursor(P[a], w_);
      for (int r = next_held(P[a], w_, 0); r >= 0; r = next_held(P[a], w_, r + 1)) owner_[r] = a;
    }
    if (out_.empty()) out_.resize(1);
    out_[0].begin(w_, u);
    for (int r = next_held(u, w_, 0); r >= 0; r = next_held(u, w_, r + 1))
      out_[0].rows(r, r, cursors_[owner_[r]].run_of(r) + 1);
    return true;
  }

  // Strict (some member differs from the root) and every member's data inside the root's.
  bool broadcast(const std::uint32_t* ids, const std::uint64_t* const* P, int g) {
    bool strict = false;
    for (int a = 1; a < g; ++a) strict = strict || ids[a] != ids[0];
    if (!strict) return false;
    const std::uint64_t* m0 = P[0];
    for (int a = 1; a < g; ++a) {
      if (ids[a] == ids[0]) continue;
      const std::uint64_t* ma = P[a];
      for (int i = 0; i < w_; ++i)
        if (ma[i] & ~m0[i]) return false;
      Cursor ca(ma, w_), c0(m0, w_);
      for (int r = next_held(ma, w_, 0); r >= 0;) {
        const std::uint64_t* ra = ca.run_of(r);
        const std::uint64_t* r0 = c0.run_of(r);
        for (int i = 0; i < w_; ++i)
          if (ra[1 + i] & ~r0[1 + i]) return false;
        r = next_held(ma, w_, std::min(Cursor::last(ra), Cursor::last(r0)) + 1);
      }
    }
    return true;
  }

  int k_, w_;
  std::vector<std::uint64_t> acc_, zero_;
  std::vector<int> owner_;
  std::vector<Cursor> cursors_;
  std::vector<Builder> out_;
};

}  // namespace p2v::engine::runs
