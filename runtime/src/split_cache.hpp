#pragma once
// Bookkeeping shared by backends whose communicators come from a collective split of the world
// (MPI_Comm_split, ncclCommSplit): which groups exist already, which of a step's groups are new,
// this rank's color among them, and the communicator slot of each group this rank belongs to.
#include <map>
#include <set>
#include <vector>

namespace p2v::runtime::detail {

template <class Comm>
class SplitCache {
 public:
  using Group = std::vector<int>;

  // The groups of two or more members not split yet (every rank computes the same list, so all
  // agree whether a split call is needed).
  std::vector<Group> fresh(const std::vector<Group>& groups) const {
    std::vector<Group> out;
    for (const auto& g : groups)
      if (g.size() >= 2 && !created_.count(g)) out.push_back(g);
    return out;
  }
  // This rank's index among `fresh`, or `none` when it is in none of them.
  static int color(const std::vector<Group>& fresh, int rank, int none) {
    for (std::size_t i = 0; i < fresh.size(); ++i)
      for (int d : fresh[i])
        if (d == rank) return static_cast<int>(i);
    return none;
  }
  // Records one split: `c` is this rank's communicator (for fresh[color]) unless color == none.
  void record(const std::vector<Group>& fresh, int color, int none, Comm c) {
    ++splits_;
    for (const auto& g : fresh) created_.insert(g);
    if (color != none) {
      slots_[fresh[color]] = static_cast<int>(comms_.size());
      comms_.push_back(c);
    }
  }
  int splits() const { return splits_; }
  int slot(const Group& g) const {
    auto it = slots_.find(g);
    return it == slots_.end() ? -1 : it->second;
  }
  const std::vector<Comm>& comms() const { return comms_; }
  std::vector<Comm>& comms() { return comms_; }

 private:
  int splits_ = 0;
  std::set<Group> created_;
  std::map<Group, int> slots_;
  std::vector<Comm> comms_;
};

}  // namespace p2v::runtime::detail
