#pragma once
// The counting semantics of collectives (docs/rules.md): a device's state is a k×k matrix of integer
// multiplicities, m[r][j] = how many times device j's original chunk r is summed into the chunk r
// this device holds, plus the set of chunks (rows) it owns; rows it does not own are "don't care"
// (their buffer is kept, and is what a later collective reads if a program reads it anyway).
//
// Every collective is an exact linear map, defined for every program (also those that break the
// boolean preconditions of docs/model.md §4). A group is an ordered member list; member 0 is the root and
// member i gets block i (ReduceScatter):
//   H = rows owned by the root.
//   AllReduce:     every member's rows H become the sum over members; every member owns H.
//   Reduce:        the root's rows H become the sum; the root owns H, the others own nothing.
//   Broadcast:     every member's rows H become the root's; every member owns H.
//   ReduceScatter: H (ascending) cut into g consecutive blocks (block i = positions
//                  [i*|H|/g, (i+1)*|H|/g)); member i's block rows become the sum; it owns block i.
//   AllGather:     U = union of the members' rows; every member's row r in U becomes the row r of
//                  the first member owning it; every member owns U.
// Under the boolean preconditions multiplicities stay 0/1 and their support is the boolean state.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "p2v/engine/instruction.hpp"

namespace p2v::engine {

// What one step does to one device: its rows `rows` (ascending) become the sum of `sources`' rows
// (Sum) or a copy of sources[0]'s rows (Copy), all read from the state before the step.
struct CountUpdate {
  enum Kind : std::uint8_t { Sum, Copy };
  int device = 0;
  Kind kind = Sum;
  std::vector<int> sources;
  std::vector<int> rows;
};

// One step, as updates and the devices' new ownership (devices not listed keep theirs).
struct CountPlan {
  std::vector<CountUpdate> updates;
  std::vector<std::pair<int, std::vector<int>>> owns;
};

class CountState {
 public:
  CountState() = default;
  // Initial state: every device owns every row, m[r][j] = [j == device].
  explicit CountState(int k);

  int k() const { return k_; }
  bool owns(int d, int r) const { return own_[idx(d, r)] != 0; }
  std::vector<int> rows(int d) const;
  std::int64_t mult(int d, int r, int j) const { return m_[idx(d, r) * k_ + j]; }

  // The step's plan on this state (throws p2v::Error on a device outside 0..k-1 or a device in
  // two groups).
  CountPlan plan(const LoweredStep& s) const;
  void apply(const LoweredStep& s);
  void apply(const CountPlan& p);
  // Every multiplicity back to the identity (m[r][j] = [j == device]); ownership kept.
  void reset_multiplicities();

 private:
  std::size_t idx(int d, int r) const { return static_cast<std::size_t>(d) * k_ + r; }
  int k_ = 0;
  std::vector<std::uint8_t> own_;  // k*k
  std::vector<std::int64_t> m_;    // k*k*k
};

CountState run_counting(int k, const LoweredProgram& p);

// The first (device, row, source) — in that order — where two states differ: ownership differs, or
// both own the row and the multiplicities differ. Empty when they are equal (up to rows neither
// owns). Multiplicities are empty where the side does not own the row.
struct CountDifference {
  int device = 0, row = 0, source = 0;
  std::optional<std::int64_t> lhs, rhs;
  std::string describe() const;  // "device 3, chunk 1, source 2: 2 vs 1"
};
std::optional<CountDifference> first_difference(const CountState& a, const CountState& b);

// Largest multiplicity any device can reach with program p on k devices (a bound: product over
// steps of the largest group size), for sizing solver encodings.
std::int64_t multiplicity_bound(const LoweredProgram& p);

}  // namespace p2v::engine
