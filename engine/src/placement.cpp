#include "p2v/engine/placement.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "p2v/engine/error.hpp"
#include "p2v/engine/system.hpp"

namespace p2v::engine {

namespace {

std::int64_t product(const std::vector<int>& v) {
  std::int64_t p = 1;
  for (int x : v) p *= x;
  return p;
}

// Column j: distribute h = levels[j] over the axes, x[i][j] | remaining[i].
void enum_column(const std::vector<int>& levels, std::size_t j, std::size_t i, int left, std::vector<int>& remaining,
                 ParallelismMatrix& x, std::vector<ParallelismMatrix>& out) {
  const std::size_t m = remaining.size();
  if (j == levels.size()) {
    for (int r : remaining)
      if (r != 1) return;
    out.push_back(x);
    return;
  }
  if (i + 1 == m) {
    // Last axis takes what is left of this column.
    if (remaining[i] % left != 0) return;
    x[i][j] = left;
    remaining[i] /= left;
    int next = j + 1 < levels.size() ? levels[j + 1] : 1;
    enum_column(levels, j + 1, 0, next, remaining, x, out);
    remaining[i] *= left;
    return;
  }
  for (int f = 1; f <= left; ++f) {
    if (left % f != 0 || remaining[i] % f != 0) continue;
    x[i][j] = f;
    remaining[i] /= f;
    enum_column(levels, j, i + 1, left / f, remaining, x, out);
    remaining[i] *= f;
  }
}

}  // namespace

std::vector<ParallelismMatrix> enumerate_matrices(const std::vector<int>& levels, const std::vector<int>& axes) {
  check_axes(levels, axes);
  std::vector<ParallelismMatrix> out;
  ParallelismMatrix x(axes.size(), std::vector<int>(levels.size(), 1));
  std::vector<int> remaining = axes;
  enum_column(levels, 0, 0, levels[0], remaining, x, out);
  return out;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) throw Error(fmt::format("{} '{}': empty entry", what, text));
    std::size_t pos = 0;
    long long v = 0;
    try {
      v = std::stoll(cur, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos != cur.size()) throw Error(fmt::format("{} '{}': '{}' is not an integer", what, text, cur));
    if (v < 1 || v > kMaxSystemDevices)
      throw Error(fmt::format("{} '{}': {} must be between 1 and {}", what, text, cur, kMaxSystemDevices));
    out.push_back(static_cast<int>(v));
    cur.clear();
  };
  std::string t = text;
  // Accept "4,16", "4 16", "[4 16]".
  t.erase(std::remove(t.begin(), t.end(), '['), t.end());
  t.erase(std::remove(t.begin(), t.end(), ']'), t.end());
  bool any = false;
  for (char c : t) {
    if (c == ',' || c == ' ') {
      if (!cur.empty() || c == ',') flush();
    } else {
      cur += c;
      any = true;
    }
  }
  if (!cur.empty()) flush();
  if (!any || out.empty()) throw Error(fmt::format("{}: expected a list of positive integers, got '{}'", what, text));
  return out;
}

std::vector<int> parse_axis_indices(const std::string& text, const std::string& what) {
  std::vector<int> out;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) throw Error(fmt::format("{} '{}': empty axis index", what, text));
    std::size_t pos = 0;
    long v = -1;
    try {
      v = std::stol(cur, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos != cur.size() || v < 0 || v > 1000000)
      throw Error(fmt::format("{} '{}': '{}' is not an axis index", what, text, cur));
    out.push_back(static_cast<int>(v));
    cur.clear();
  };
  for (char c : text) {
    if (c == ',' || c == ' ')
      flush();
    else
      cur += c;
  }
  flush();
  return out;
}

void check_axes(const std::vector<int>& levels, const std::vector<int>& axes) {
  if (axes.empty()) throw Error("--axes: give at least one parallelism axis");
  if (axes.size() > 16) throw Error(fmt::format("--axes: {} axes is more than p2v handles (16)", axes.size()));
  const auto n = product(levels);
  std::int64_t p = 1;
  for (int a : axes) {
    if (a < 1) throw Error(fmt::format("--axes: axis sizes must be positive, got {}", a));
    p *= a;
    if (p > kMaxSystemDevices) break;
  }
  if (p != n) {
    std::vector<std::string> parts;
    for (int a : axes) parts.push_back(std::to_string(a));
    throw Error(
        fmt::format("--axes {}: their product is {} but the system has {} devices; the axes must "
                    "multiply to the device count",
                    fmt::join(parts, ","), p, n));
  }
}

std::vector<int> check_reduce(const std::vector<int>& reduce, std::size_t num_axes) {
  if (reduce.empty()) throw Error("--reduce: give at least one reduction axis index");
  std::vector<int> r = reduce;
  std::sort(r.begin(), r.end());
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r[i] < 0 || static_cast<std::size_t>(r[i]) >= num_axes)
      throw Error(fmt::format("--reduce: axis index {} is out of range (there are {} axes, indices 0..{})", r[i],
                              num_axes, num_axes - 1));
    if (i > 0 && r[i] == r[i - 1]) throw Error(fmt::format("--reduce: axis index {} is given twice", r[i]));
  }
  return r;
}

ParallelismMatrix parse_matrix(const std::string& text) {
  ParallelismMatrix x;
  std::string t = text;
  // Bracket form "[[1 4] [4 4]]" (or JSON "[[1,4],[4,4]]"): each inner bracket is a row.
  if (t.find('[') != std::string::npos) {
    std::string rows;
    int depth = 0;
    for (char c : t) {
      if (c == '[') {
        ++depth;
      } else if (c == ']') {
        if (depth == 2) rows += ';';
        --depth;
      } else if (depth == 2) {
        rows += c;
      } else if (!std::isspace(static_cast<unsigned char>(c)) && c != ',') {
        throw Error(fmt::format("--matrix '{}': unexpected '{}' outside a row", text, c));
      }
    }
    if (depth != 0) throw Error(fmt::format("--matrix '{}': unbalanced brackets", text));
    if (!rows.empty() && rows.back() == ';') rows.pop_back();
    t = rows;
    if (t.empty()) throw Error(fmt::format("--matrix '{}': no rows", text));
  }
  std::stringstream rows(t);
  std::string row;
  while (std::getline(rows, row, ';')) {
    std::stringstream cells(row);
    std::string cell;
    std::vector<int> r;
    while (cells >> cell) {
      for (char& c : cell)
        if (c == ',') c = ' ';
      std::stringstream sub(cell);
      std::string tok;
      while (sub >> tok) {
        std::size_t pos = 0;
        long long v = 0;
        try {
          v = std::stoll(tok, &pos);
        } catch (...) {
          pos = 0;
        }
        if (pos != tok.size() || v < 1 || v > kMaxSystemDevices)
          throw Error(fmt::format("--matrix '{}': '{}' is not a positive integer", text, tok));
        r.push_back(static_cast<int>(v));
      }
    }
    if (r.empty()) throw Error(fmt::format("--matrix '{}': empty row (rows are separated by ';')", text));
    x.push_back(std::move(r));
  }
  if (x.empty()) throw Error(fmt::format("--matrix '{}': no rows", text));
  for (const auto& r : x)
    if (r.size() != x[0].size()) throw Error(fmt::format("--matrix '{}': rows have different lengths", text));
  return x;
}

std::string format_matrix(const ParallelismMatrix& x) {
  std::string s;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i) s += ";";
    for (std::size_t j = 0; j < x[i].size(); ++j) s += (j ? " " : "") + std::to_string(x[i][j]);
  }
  return s;
}

std::string format_matrix_brackets(const ParallelismMatrix& x) {
  std::string s = "[";
  for (std::size_t i = 0; i < x.size(); ++i) {
    s += i ? " [" : "[";
    for (std::size_t j = 0; j < x[i].size(); ++j) s += (j ? " " : "") + std::to_string(x[i][j]);
    s += "]";
  }
  return s + "]";
}

void check_matrix(const ParallelismMatrix& x, const std::vector<int>& levels, const std::vector<int>& axes) {
  if (x.size() != axes.size())
    throw Error(fmt::format("--matrix '{}': has {} rows but there are {} axes (one row per axis)", format_matrix(x),
                            x.size(), axes.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i].size() != levels.size())
      throw Error(
          fmt::format("--matrix '{}': row {} has {} entries but the system has {} levels (one column per level)",
                      format_matrix(x), i, x[i].size(), levels.size()));
    std::int64_t p = 1;
    for (int v : x[i]) p *= v;
    if (p != axes[i])
      throw Error(fmt::format("--matrix '{}': row {} multiplies to {} but axis {} has size {}", format_matrix(x), i, p,
                              i, axes[i]));
  }
  for (std::size_t j = 0; j < levels.size(); ++j) {
    std::int64_t p = 1;
    for (std::size_t i = 0; i < x.size(); ++i) p *= x[i][j];
    if (p != levels[j])
      throw Error(fmt::format("--matrix '{}': column {} multiplies to {} but level {} has cardinality {}",
                              format_matrix(x), j, p, j, levels[j]));
  }
}

Placement::Placement(std::vector<int> levels, std::vector<int> axes, ParallelismMatrix x, std::vector<int> reduce)
    : levels_(std::move(levels)), axes_(std::move(axes)), x_(std::move(x)) {
  check_matrix(x_, levels_, axes_);
  if (!reduce.empty()) reduce_ = check_reduce(reduce, axes_.size());
  const auto n64 = product(levels_);
  if (n64 > kMaxSystemDevices) throw Error("system too large");
  n_ = static_cast<int>(n64);
  const std::size_t m = axes_.size(), L = levels_.size();
  digits_.assign(static_cast<std::size_t>(n_) * m * L, 0);
  for (int d = 0; d < n_; ++d) {
    int rest = d;
    for (std::size_t j = L; j-- > 0;) {
      int local = rest % levels_[j];
      rest /= levels_[j];
      for (std::size_t i = m; i-- > 0;) {
        digits_[(static_cast<std::size_t>(d) * m + i) * L + j] = local % x_[i][j];
        local /= x_[i][j];
      }
    }
  }
  // Reduction groups: devices agreeing on every non-reduction axis coordinate.
  group_of_.assign(n_, -1);
  std::map<std::vector<int>, int> key_to_group;
  for (int d = 0; d < n_; ++d) {
    std::vector<int> key;
    for (std::size_t i = 0; i < m; ++i)
      if (!is_reduction_axis(static_cast<int>(i))) key.push_back(axis_coord(d, static_cast<int>(i)));
    auto [it, fresh] = key_to_group.emplace(key, static_cast<int>(groups_.size()));
    if (fresh) groups_.emplace_back();
    groups_[it->second].push_back(d);
    group_of_[d] = it->second;
  }
}

bool Placement::is_reduction_axis(int axis) const { return std::binary_search(reduce_.begin(), reduce_.end(), axis); }

int Placement::digit(int device, int axis, int level) const {
  const std::size_t m = axes_.size(), L = levels_.size();
  return digits_[(static_cast<std::size_t>(device) * m + axis) * L + level];
}

int Placement::axis_coord(int device, int axis) const {
  int c = 0;
  for (std::size_t j = 0; j < levels_.size(); ++j) c = c * x_[axis][j] + digit(device, axis, static_cast<int>(j));
  return c;
}

}  // namespace p2v::engine
