#include "p2v/runtime/rows.hpp"

#include <fmt/core.h>
#include <algorithm>
#include <numeric>

namespace p2v::runtime {

std::int64_t total_units(const Intervals& v) {
  std::int64_t n = 0;
  for (const auto& i : v) n += i.size();
  return n;
}

std::string format_intervals(const Intervals& v) {
  if (v.empty()) return "{}";
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ",";
    s += v[i].size() == 1 ? fmt::format("{}", v[i].begin) : fmt::format("{}-{}", v[i].begin, v[i].end - 1);
  }
  return s + "}";
}

RowSet::RowSet(Intervals v) : flat_(std::move(v)) {}

std::optional<RowSet> RowSet::box(std::int64_t begin, std::int64_t len, std::vector<Dim> dims) {
  if (len <= 0) return RowSet{};
  std::erase_if(dims, [](const Dim& d) { return d.count == 1; });
  for (const Dim& d : dims) {
    if (d.count < 1) return RowSet{};
    if (d.stride <= 0) return std::nullopt;
  }
  std::stable_sort(dims.begin(), dims.end(), [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  for (bool changed = true; changed;) {
    changed = false;
    if (!dims.empty() && dims.back().stride == len) {
      len *= dims.back().count;
      dims.pop_back();
      changed = true;
    }
    for (std::size_t i = 0; i + 1 < dims.size(); ++i)
      if (dims[i].stride == dims[i + 1].count * dims[i + 1].stride) {
        dims[i + 1].count *= dims[i].count;
        dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
        break;
      }
  }
  // Strictly nested: every stride exceeds the extent of everything inside it.
  std::int64_t extent = len;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    if (it->stride <= extent) return std::nullopt;
    extent += (it->count - 1) * it->stride;
  }
  if (dims.empty()) return RowSet{Intervals{{begin, begin + len}}};
  RowSet r;
  r.boxed_ = true;
  r.begin_ = begin;
  r.len_ = len;
  r.dims_ = std::move(dims);
  return r;
}

std::int64_t RowSet::total() const {
  if (!boxed_) return total_units(flat_);
  std::int64_t n = len_;
  for (const Dim& d : dims_) n *= d.count;
  return n;
}

std::int64_t RowSet::runs() const {
  if (!boxed_) return static_cast<std::int64_t>(flat_.size());
  std::int64_t n = 1;
  for (const Dim& d : dims_) n *= d.count;
  return n;
}

std::int64_t RowSet::first() const { return boxed_ ? begin_ : flat_.at(0).begin; }

std::int64_t RowSet::end() const {
  if (!boxed_) return flat_.at(flat_.size() - 1).end;
  std::int64_t e = begin_ + len_;
  for (const Dim& d : dims_) e += (d.count - 1) * d.stride;
  return e;
}

bool RowSet::contains(std::int64_t u) const {
  if (!boxed_)
    return std::any_of(flat_.begin(), flat_.end(), [&](const Interval& i) { return i.begin <= u && u < i.end; });
  std::int64_t off = u - begin_;
  if (off < 0) return false;
  for (const Dim& d : dims_) {
    const std::int64_t a = off / d.stride;
    if (a >= d.count) return false;
    off -= a * d.stride;
  }
  return off < len_;
}

Intervals RowSet::intervals() const {
  if (!boxed_) return flat_;
  Intervals v;
  v.reserve(static_cast<std::size_t>(runs()));
  Copy c{{Space::Main, begin_}, {Space::Main, 0}, len_, {}};
  for (const Dim& d : dims_) c.repeat.push_back({d.count, d.stride, 0});
  for_each_block(c, [&](std::int64_t s, std::int64_t) { v.push_back({s, s + len_}); });
  return v;
}

RowSet RowSet::translated(std::int64_t by) const {
  RowSet r = *this;
  r.begin_ += by;
  for (auto& i : r.flat_) i = {i.begin + by, i.end + by};
  return r;
}

RowSet RowSet::scaled_down(std::int64_t u) const {
  RowSet r = *this;
  r.begin_ /= u;
  r.len_ /= u;
  for (auto& d : r.dims_) d.stride /= u;
  for (auto& i : r.flat_) i = {i.begin / u, i.end / u};
  return r;
}

RowSet RowSet::scaled_up(std::int64_t u) const {
  RowSet r = *this;
  r.begin_ *= u;
  r.len_ *= u;
  for (auto& d : r.dims_) d.stride *= u;
  for (auto& i : r.flat_) i = {i.begin * u, i.end * u};
  return r;
}

std::int64_t RowSet::gcd(std::int64_t g) const {
  if (!boxed_) {
    for (const auto& i : flat_) g = std::gcd(g, std::gcd(i.begin, i.end));
    return g;
  }
  // Every boundary is begin + sum a_i stride_i (+ len), and every stride occurs (counts >= 2).
  g = std::gcd(g, std::gcd(begin_, len_));
  for (const Dim& d : dims_) g = std::gcd(g, d.stride);
  return g;
}

namespace {

Intervals slice_intervals(const Intervals& rows, std::int64_t from, std::int64_t n) {
  Intervals o;
  std::int64_t pos = 0;
  for (const auto& i : rows) {
    const std::int64_t b = std::max(i.begin, i.begin + (from - pos));
    const std::int64_t e = std::min(i.end, i.begin + (from + n - pos));
    if (b < e) o.push_back({b, e});
    pos += i.size();
  }
  return o;
}

}  // namespace

RowSet RowSet::slice(std::int64_t from, std::int64_t n) const {
  if (n <= 0) return RowSet{};
  if (boxed_ && from % n == 0 && total() % n == 0)
    if (auto sp = split({total() / n})) return sp->first.translated(digit_offset(sp->parts[0], from / n));
  return RowSet{slice_intervals(intervals(), from, n)};
}

std::optional<RowSet::Split> RowSet::split(const std::vector<std::int64_t>& factors) const {
  if (!boxed_ && flat_.size() != 1) return std::nullopt;
  std::int64_t len = box_len();
  std::vector<Dim> dims = dims_;
  Split out;
  std::size_t i = 0;
  for (const std::int64_t f : factors) {
    auto& parts = out.parts.emplace_back();
    for (std::int64_t rest = f; rest > 1;) {
      while (i < dims.size() && dims[i].count == 1) ++i;
      std::int64_t& count = i < dims.size() ? dims[i].count : len;
      const std::int64_t stride = i < dims.size() ? dims[i].stride : 1;
      if (count % rest == 0) {  // the factor's share of this dim
        count /= rest;
        parts.push_back({rest, count * stride});
        rest = 1;
      } else if (rest % count == 0 && i < dims.size()) {  // the whole dim, then the next
        parts.push_back({count, stride});
        rest /= count;
        count = 1;
      } else {
        return std::nullopt;
      }
    }
  }
  auto b = box(box_begin(), len, std::move(dims));
  if (!b) return std::nullopt;
  out.first = std::move(*b);
  return out;
}

std::int64_t digit_offset(const std::vector<Dim>& parts, std::int64_t v) {
  std::int64_t off = 0;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    off += (v % it->count) * it->stride;
    v /= it->count;
  }
  return off;
}

std::string RowSet::format() const {
  if (!boxed_ || runs() <= 16) return format_intervals(intervals());
  std::string s = fmt::format("{{{} runs of {} from {}:", runs(), len_, begin_);
  for (const Dim& d : dims_) s += fmt::format(" {}x every {}", d.count, d.stride);
  return s + "}";
}

bool RowSet::operator==(const RowSet& o) const {
  if (boxed_ && o.boxed_ && begin_ == o.begin_ && len_ == o.len_ && dims_ == o.dims_) return true;
  if (total() != o.total() || runs() != o.runs()) return false;
  return intervals() == o.intervals();
}

const char* to_string(Space s) {
  switch (s) {
    case Space::Main:
      return "main";
    case Space::Stage0:
      return "stage0";
    case Space::Stage1:
      return "stage1";
  }
  return "?";
}

std::int64_t Copy::blocks() const {
  std::int64_t n = 1;
  for (const Stride& r : repeat) n *= r.count;
  return n;
}

std::vector<Copy> expand_copies(const std::vector<Copy>& cs) {
  std::vector<Copy> out;
  for (const Copy& c : cs)
    for_each_block(c, [&](std::int64_t s, std::int64_t d) {
      out.push_back({{c.src.space, s}, {c.dst.space, d}, c.units, {}});
    });
  return out;
}

std::int64_t total_blocks(const std::vector<Copy>& cs) {
  std::int64_t n = 0;
  for (const Copy& c : cs) n += c.blocks();
  return n;
}

namespace {

// Between home positions (main) and a packed region: `to_packed` packs, else unpacks.
std::vector<Copy> home_copies(const RowSet& rows, Region packed, bool to_packed) {
  std::vector<Copy> cs;
  if (rows.boxed()) {
    Copy c{{Space::Main, rows.box_begin()}, packed, rows.box_len(), {}};
    std::int64_t inner = rows.box_len();
    for (auto it = rows.dims().rbegin(); it != rows.dims().rend(); ++it) {
      c.repeat.insert(c.repeat.begin(), Stride{it->count, it->stride, inner});
      inner *= it->count;
    }
    if (!to_packed) {
      std::swap(c.src, c.dst);
      for (auto& r : c.repeat) std::swap(r.src, r.dst);
    }
    cs.push_back(std::move(c));
    return cs;
  }
  std::int64_t off = packed.offset;
  for (const auto& i : rows.intervals()) {
    const Region home{Space::Main, i.begin}, p{packed.space, off};
    cs.push_back(to_packed ? Copy{home, p, i.size(), {}} : Copy{p, home, i.size(), {}});
    off += i.size();
  }
  return cs;
}

}  // namespace

std::vector<Copy> pack_copies(const RowSet& rows, Region dst) { return home_copies(rows, dst, true); }
std::vector<Copy> unpack_copies(const RowSet& rows, Region src) { return home_copies(rows, src, false); }

}  // namespace p2v::runtime
