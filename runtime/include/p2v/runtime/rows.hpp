#pragma once
// Sets of rows (or units of rows) and copies between buffers, at any size: a rank's rows and the
// copies that move them are stored as strided boxes where they are one (O(levels) whatever the
// number of runs), and as explicit intervals otherwise. docs/runtime.md "Plans at any size".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace p2v::runtime {

// A run of units [begin, end).
struct Interval {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
  bool operator==(const Interval&) const = default;
};
using Intervals = std::vector<Interval>;
std::int64_t total_units(const Intervals& v);
std::string format_intervals(const Intervals& v);

// One dimension of a strided box: `count` runs `stride` units apart.
struct Dim {
  std::int64_t count = 1, stride = 0;
  bool operator==(const Dim&) const = default;
};

// A set of units, ascending. Either explicit intervals (sorted, disjoint, none adjacent) or a
// strided box { begin + sum_i a_i * dims[i].stride + t : a_i < dims[i].count, t < len }, dims
// outermost first and strictly nested (each run ends before the next one begins, none adjacent),
// so the box's runs in lexicographic order of (a_0, a_1, ...) are its intervals in ascending order.
// A single interval is always stored explicitly.
class RowSet {
 public:
  RowSet() = default;
  RowSet(Intervals v);  // NOLINT(google-explicit-constructor): explicit intervals are a row set
  // The box, normalized (dims of count 1 dropped, dims sorted by stride, adjacent dims merged);
  // nullopt when its runs overlap or touch, i.e. when it is not a strictly nested box.
  static std::optional<RowSet> box(std::int64_t begin, std::int64_t len, std::vector<Dim> dims);

  bool boxed() const { return boxed_; }
  bool empty() const { return !boxed_ && flat_.empty(); }
  std::int64_t total() const;
  std::int64_t runs() const;   // number of intervals
  std::int64_t first() const;  // first unit (not empty)
  std::int64_t end() const;    // one past the last unit (not empty)
  bool contains(std::int64_t u) const;
  Intervals intervals() const;  // expanded: O(runs)
  // The box's (or single interval's) parts; dims() is empty for explicit intervals.
  std::int64_t box_begin() const { return boxed_ ? begin_ : flat_.at(0).begin; }
  std::int64_t box_len() const { return boxed_ ? len_ : flat_.at(0).size(); }
  const std::vector<Dim>& dims() const { return dims_; }

  RowSet translated(std::int64_t by) const;
  // Every boundary divided by u (u divides them all: see gcd).
  RowSet scaled_down(std::int64_t u) const;
  RowSet scaled_up(std::int64_t u) const;
  // The gcd of g and every run boundary.
  std::int64_t gcd(std::int64_t g) const;
  // The units at positions [from, from + n) in ascending order; a box when the slice is one.
  RowSet slice(std::int64_t from, std::int64_t n) const;
  // Splits a box (or one interval) into equal consecutive parts indexed by mixed-radix digits of
  // these factors (outermost first), as a ReduceScatter does: the dims are taken outermost first
  // (the run length last); a factor that divides a dim's count takes its share of that dim, one
  // that is a multiple of it takes the whole dim and goes on with the next. The part of digits
  // v_0, v_1, ... is `first` translated by sum_i digit_offset(parts[i], v_i). nullopt when a
  // factor neither divides nor is a multiple of the count it meets, or for explicit intervals.
  struct Split;
  std::optional<Split> split(const std::vector<std::int64_t>& factors) const;
  // Intervals as format_intervals, a box with many runs as "{8x[0-1] every 16, from 4}".
  std::string format() const;
  // Equal sets (as sets of units).
  bool operator==(const RowSet& o) const;

 private:
  bool boxed_ = false;
  Intervals flat_;
  std::int64_t begin_ = 0, len_ = 0;
  std::vector<Dim> dims_;
};

struct RowSet::Split {
  RowSet first;                         // the part of digits (0, 0, ...)
  std::vector<std::vector<Dim>> parts;  // per factor: (count, stride) of its digit's sub-digits
};
// The offset of digit value v over parts (its mixed-radix sub-digits, outermost first).
std::int64_t digit_offset(const std::vector<Dim>& parts, std::int64_t v);

enum class Space : std::uint8_t { Main, Stage0, Stage1 };
const char* to_string(Space s);

// A position in one of the three buffers, in units.
struct Region {
  Space space = Space::Main;
  std::int64_t offset = 0;
  bool operator==(const Region&) const = default;
};

// One dimension of a strided copy: `count` blocks, `src` and `dst` units apart.
struct Stride {
  std::int64_t count = 1, src = 0, dst = 0;
  bool operator==(const Stride&) const = default;
};

// Copies `units` units from src to dst, repeated over `repeat` (outermost first): one block per
// index tuple, in lexicographic order, at src + sum_i a_i * repeat[i].src (likewise dst).
struct Copy {
  Region src, dst;
  std::int64_t units = 0;
  std::vector<Stride> repeat;
  std::int64_t blocks() const;
};
// Calls f(src offset, dst offset) for every block of c, in order.
template <class F>
void for_each_block(const Copy& c, F&& f) {
  const std::size_t n = c.repeat.size();
  std::vector<std::int64_t> idx(n, 0);
  std::int64_t s = c.src.offset, d = c.dst.offset;
  for (;;) {
    f(s, d);
    std::size_t i = n;
    for (;;) {
      if (i == 0) return;
      --i;
      const Stride& r = c.repeat[i];
      if (++idx[i] < r.count) {
        s += r.src;
        d += r.dst;
        break;
      }
      s -= (r.count - 1) * r.src;
      d -= (r.count - 1) * r.dst;
      idx[i] = 0;
    }
  }
}
// Every block as a copy of its own (for comparisons on small systems).
std::vector<Copy> expand_copies(const std::vector<Copy>& cs);
std::int64_t total_blocks(const std::vector<Copy>& cs);

// Copies packing `rows` (home positions in main) ascending and contiguous at dst, and back.
std::vector<Copy> pack_copies(const RowSet& rows, Region dst);
std::vector<Copy> unpack_copies(const RowSet& rows, Region src);

}  // namespace p2v::runtime
