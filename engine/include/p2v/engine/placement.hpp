#pragma once
// Parallelism axes, parallelism matrices and the device <-> axis coordinates (docs/model.md §2).
#include <cstdint>
#include <string>
#include <vector>

namespace p2v::engine {

// x[i][j]: how many instances of level j axis i is split across. Rows = axes, columns = levels
// the user wrote.
using ParallelismMatrix = std::vector<std::vector<int>>;

// All parallelism matrices with column products `levels` and row products `axes`, in a
// deterministic order (column by column, smaller factors of earlier axes first).
std::vector<ParallelismMatrix> enumerate_matrices(const std::vector<int>& levels, const std::vector<int>& axes);

// "1 4;4 4" -> {{1,4},{4,4}}. Throws p2v::Error on malformed text.
ParallelismMatrix parse_matrix(const std::string& text);
// {{1,4},{4,4}} -> "1 4;4 4"
std::string format_matrix(const ParallelismMatrix& x);
// "[[1 4] [4 4]]"
std::string format_matrix_brackets(const ParallelismMatrix& x);

// "4,16" -> {4,16}; throws on empty, non-numeric or non-positive entries.
std::vector<int> parse_int_list(const std::string& text, const std::string& what);

// "0,2" -> {0,2}: axis indices (0 allowed), unchecked against the number of axes.
std::vector<int> parse_axis_indices(const std::string& text, const std::string& what);

// Checks that `axes` factor the device count of `levels` (throws p2v::Error naming the mismatch).
void check_axes(const std::vector<int>& levels, const std::vector<int>& axes);
// Checks reduction axis indices (non-empty, in range, no duplicates); returns them sorted.
std::vector<int> check_reduce(const std::vector<int>& reduce, std::size_t num_axes);
// Checks that `x` is a parallelism matrix for (levels, axes).
void check_matrix(const ParallelismMatrix& x, const std::vector<int>& levels, const std::vector<int>& axes);

// A placement: a system's level cardinalities, axes, one matrix and the reduction axes.
class Placement {
 public:
  Placement(std::vector<int> levels, std::vector<int> axes, ParallelismMatrix x, std::vector<int> reduce);

  const std::vector<int>& levels() const { return levels_; }
  const std::vector<int>& axes() const { return axes_; }
  const ParallelismMatrix& matrix() const { return x_; }
  const std::vector<int>& reduce() const { return reduce_; }
  int num_devices() const { return n_; }
  bool is_reduction_axis(int axis) const;

  // digit(d, i, j): device d's digit on axis i at level j (0 <= digit < x[i][j]).
  int digit(int device, int axis, int level) const;
  // Device d's coordinate on axis i (mixed radix of its digits over levels, level 0 first).
  int axis_coord(int device, int axis) const;
  // Reduction groups, each ascending, ordered by first device.
  const std::vector<std::vector<int>>& reduction_groups() const { return groups_; }
  // Index into reduction_groups() of device d's group.
  int reduction_group_of(int device) const { return group_of_[device]; }

 private:
  std::vector<int> levels_, axes_;
  ParallelismMatrix x_;
  std::vector<int> reduce_;
  int n_ = 0;
  std::vector<int> digits_;  // [device][axis][level]
  std::vector<std::vector<int>> groups_;
  std::vector<int> group_of_;
};

}  // namespace p2v::engine
