#pragma once
// Bookkeeping shared by backends whose communicators come from a collective split of the world
// (MPI_Comm_split, ncclCommSplit): which steps' groups (keys) are split already, and this rank's
// communicator slot for each.
#include <map>
#include <string>
#include <vector>

#include "p2v/runtime/rank_plan.hpp"

namespace p2v::runtime::detail {

template <class Comm>
class SplitCache {
 public:
  // Whether m.key's groups exist already (every rank sees the same keys in the same order, so
  // all agree whether a split call is needed).
  bool known(const Membership& m) const { return slots_.count(m.key) > 0; }
  // The split color of this rank for m: its group id, or `none` when it is in no group.
  static int color(const Membership& m, int none) { return m.active() ? static_cast<int>(m.group) : none; }
  // Records one split: `c` is this rank's communicator unless it is in no group.
  void record(const Membership& m, Comm c) {
    ++splits_;
    slots_[m.key] = m.active() ? static_cast<int>(comms_.size()) : -1;
    if (m.active()) comms_.push_back(c);
  }
  int splits() const { return splits_; }
  int slot(const Membership& m) const {
    auto it = slots_.find(m.key);
    return it == slots_.end() ? -1 : it->second;
  }
  const std::vector<Comm>& comms() const { return comms_; }
  std::vector<Comm>& comms() { return comms_; }

 private:
  int splits_ = 0;
  std::map<std::string, int> slots_;
  std::vector<Comm> comms_;
};

}  // namespace p2v::runtime::detail
