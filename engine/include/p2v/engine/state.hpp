#pragma once
// State matrices and the five Hoare rules (docs/model.md §4), as bitsets.
#include <cstdint>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"

namespace p2v::engine {

// The states of k devices over k chunks. Device d's state is a k×k boolean matrix s with
// s[r][j] = 1 iff device j's original chunk r is summed into the chunk r that d holds.
// Stored per device as a row-presence mask (k bits) followed by k column sets (k bits each).
class StateSet {
 public:
  StateSet() = default;
  explicit StateSet(int k);  // all empty

  static StateSet initial(int k);
  // Goal for reduction groups `groups` (a partition of 0..k-1): every device holds every row,
  // each with exactly its group's columns.
  static StateSet goal(int k, const Groups& groups);

  int k() const { return k_; }
  int words() const { return w_; }
  bool get(int device, int row, int col) const;
  void set(int device, int row, int col, bool v = true);
  bool has_row(int device, int row) const;
  // Columns of (device,row), ascending.
  std::vector<int> columns(int device, int row) const;
  std::vector<int> rows(int device) const;

  bool operator==(const StateSet& o) const { return k_ == o.k_ && bits_ == o.bits_; }
  bool same_device(int d, const StateSet& o, int od) const;

  // Checks the precondition of `c` on every group; on success writes the postcondition into
  // `out` (devices outside every group keep their state) and returns true. On failure returns
  // false and, if `why` is non-null, says which precondition failed for which group.
  bool apply(Collective c, const Groups& groups, StateSet& out, std::string* why = nullptr) const;
  // Precondition only.
  bool check(Collective c, const Groups& groups, std::string* why = nullptr) const;

  // Compact text: per device, "d: {rows}->{cols}" runs. For certificates and messages.
  std::string describe_device(int d) const;

  // Raw read access: device d's row mask (words()) then its k column sets (words() each).
  const std::uint64_t* dev(int d) const { return bits_.data() + static_cast<std::size_t>(d) * stride_; }

 private:
  std::uint64_t* dev(int d) { return bits_.data() + static_cast<std::size_t>(d) * stride_; }

  bool check_group(Collective c, const int* m, int g, std::string* why) const;
  void apply_group(Collective c, const int* m, int g, StateSet& out) const;

  int k_ = 0, w_ = 0;
  std::size_t stride_ = 0;  // words per device: w_ (mask) + k_*w_ (columns)
  std::vector<std::uint64_t> bits_;
};

// Largest k the bitset engine accepts (k^3/8 bytes per state).
inline constexpr int kMaxStateDevices = 512;

}  // namespace p2v::engine
