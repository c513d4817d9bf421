#pragma once
// Size sweeps (docs/sweeps.md "Sizes"): the one parser of size lists and ranges every command's --bytes
// (and nccl-tests' -b/-e/-f/-i) goes through, and the crossover table of a sweep.
#include <cstddef>
#include <string>
#include <vector>

namespace p2v::engine {

// At most this many sizes in one sweep (a range that would produce more is refused).
inline constexpr std::size_t kMaxSweepSizes = 4096;

// One size ("64M"), a list ("1K,1M,1G") or a range: "MIN:MAX:xF" (MIN, MIN*F, ... up to MAX,
// F > 1, as nccl-tests -f), "MIN:MAX:+STEP" (MIN, MIN+STEP, ..., as nccl-tests -i) or "MIN:MAX"
// (factor 2). Items of a list may be ranges. Every size goes through parse_size (same units,
// same limit `max`); with `whole`, every size must be a whole number of bytes. The result is
// sorted and without duplicates. Throws p2v::Error naming `what` and the item that is wrong.
std::vector<double> parse_sizes(const std::string& text, const std::string& what, double max = 1e15,
                                bool whole = false);

// MIN, MIN*factor, ... (factor > 1) or MIN, MIN+step, ... (step > 0; factor ignored) up to MAX
// inclusive, as nccl-tests' -b/-e/-f/-i produce them (the last size is the largest <= MAX; sizes
// are rounded down to whole bytes when `whole`). Throws p2v::Error naming `what` on a bad range.
std::vector<double> size_range(double min, double max, double factor, double step, const std::string& what,
                               bool whole = false);

// A run of consecutive sweep sizes with the same winner.
struct SizeRange {
  double from = 0, to = 0;          // the first and last size of the run
  std::size_t first = 0, last = 0;  // their indices in the sweep
  std::string winner;
};

// The crossover table: consecutive sizes (ascending) whose winners are equal merged into one
// range, in size order. `winners[i]` is the best entry at `sizes[i]`; both have the same length
// (else p2v::Error). An empty winner (no answer at that size) forms its own ranges like any other.
std::vector<SizeRange> crossover(const std::vector<double>& sizes, const std::vector<std::string>& winners);

// A size as the sweep tables print it, in a form parse_size reads back: "8", "1K", "64M", "1.5G"
// (a binary unit that divides it, below 1024 of it), "25MB" (else a decimal one), else 4
// significant digits in binary units ("2.93K", approximate).
std::string format_size(double bytes);

}  // namespace p2v::engine
