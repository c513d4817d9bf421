// p2v export --format msccl (docs/export.md): a reduction program as an MSCCL algorithm file.
//
// The XML is the "old" MSCCL-IR format that msccl-tools writes (microsoft/msccl-tools @ 030a750,
// msccl/language/ir.py, ir_to_xml with old_format=True) and that MSCCL's executor reads
// (Azure/msccl-executor-nccl @ 3b40a2a, src/misc/msccl/msccl_parser.cc, mscclGetAlgoFromXmlFile):
// <algo name proto nchannels nchunksperloop ngpus coll inplace outofplace minBytes maxBytes>, per
// rank <gpu id i_chunks o_chunks s_chunks>, per thread block <tb id send recv chan> (one send and
// one receive peer per thread block), and per operation <step s type srcbuf srcoff dstbuf dstoff
// cnt depid deps hasdep>. The executor's limits (src/include/msccl/msccl_struct.h there): 256
// steps per thread block (MSCCL_MAX_NUM_STEPS), cnt below 72 (MSCCL_MAX_COUNT), 32 channels.
//
// Lowering (our own): the buffer is cut into the coarsest equal chunks on which every state of the
// program is aligned (p2v's rows, docs/step.md); each step of a group runs as NCCL's ring
// (ReduceScatter, AllGather, AllReduce = ReduceScatter then AllGather) or a chain (Reduce towards
// the group's first member, Broadcast from it), one thread block per rank and step on a channel of
// its own; the first operation of a step depends on the rank's last operation of its previous step.
#include "export_msccl.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

#include "p2v/engine/error.hpp"
#include "p2v/engine/replay.hpp"
#include "p2v/engine/state.hpp"
#include "p2v/engine/text_util.hpp"

namespace p2v::tools {
namespace {

using p2v::Error;

constexpr int kMaxStepsPerTb = 256;  // MSCCL_MAX_NUM_STEPS
constexpr int kMaxCount = 64;        // below MSCCL_MAX_COUNT (72)
constexpr int kMaxChannels = 32;     // MAXCHANNELS

// Over one of the executor's limits (retried with coarser chunks before it is reported).
struct TooLong : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Op {
  const char* type;
  int off = 0, cnt = 0;
  int depid = -1, deps = -1;
  bool hasdep = false;
};
struct Tb {
  int send = -1, recv = -1, chan = 0;
  std::vector<Op> ops;
};

struct Writer {
  std::vector<std::vector<Tb>> tbs;            // per local rank
  std::vector<std::pair<int, int>> last;       // per rank: (tb, op) of its last operation, or (-1,-1)
  std::vector<int> cur;                        // per rank: thread block of the current step, or -1
  std::vector<std::pair<int, int>> cur_peers;  // per rank: (send, recv) of the current step
  int chan = 0;

  explicit Writer(int g)
      : tbs(static_cast<std::size_t>(g)),
        last(static_cast<std::size_t>(g), {-1, -1}),
        cur(static_cast<std::size_t>(g), -1),
        cur_peers(static_cast<std::size_t>(g), {-1, -1}) {}

  void begin_step(int c) {
    chan = c;
    std::fill(cur.begin(), cur.end(), -1);
    std::fill(cur_peers.begin(), cur_peers.end(), std::pair{-1, -1});
  }
  void peers(int r, int send, int recv) { cur_peers[static_cast<std::size_t>(r)] = {send, recv}; }
  // Operations of `type` over `chunks` (ascending), one per contiguous run of at most kMaxCount.
  void emit(int r, const char* type, const std::vector<int>& chunks) {
    const auto R = static_cast<std::size_t>(r);
    for (std::size_t i = 0; i < chunks.size();) {
      std::size_t j = i + 1;
      while (j < chunks.size() && chunks[j] == chunks[j - 1] + 1 && static_cast<int>(j - i) < kMaxCount) ++j;
      if (cur[R] < 0) {
        cur[R] = static_cast<int>(tbs[R].size());
        tbs[R].push_back({cur_peers[R].first, cur_peers[R].second, chan, {}});
      }
      auto& tb = tbs[R][static_cast<std::size_t>(cur[R])];
      Op op{type, chunks[i], static_cast<int>(j - i)};
      if (tb.ops.empty() && last[R].first >= 0) {
        op.depid = last[R].first;
        op.deps = last[R].second;
        tbs[R][static_cast<std::size_t>(last[R].first)].ops[static_cast<std::size_t>(last[R].second)].hasdep = true;
      }
      tb.ops.push_back(op);
      if (static_cast<int>(tb.ops.size()) > kMaxStepsPerTb)
        throw TooLong(fmt::format(
            "--format msccl: a thread block would need more than {} steps (MSCCL_MAX_NUM_STEPS of MSCCL's "
            "executor); the program's groups are too large or its row layout too fine for one MSCCL algorithm",
            kMaxStepsPerTb));
      i = j;
    }
  }
  void end_step() {
    for (std::size_t r = 0; r < cur.size(); ++r)
      if (cur[r] >= 0) last[r] = {cur[r], static_cast<int>(tbs[r][static_cast<std::size_t>(cur[r])].ops.size()) - 1};
  }
};

int mod(int a, int g) { return ((a % g) + g) % g; }

using Local = std::vector<std::vector<std::vector<int>>>;  // step -> groups -> positions

// The program and its states seen from the reduction groups: device -> (group, position), the
// group size, and the rows of each position in each state.
struct View {
  const engine::Groups& reduction;
  const engine::LoweredProgram& prog;
  std::vector<engine::StateSet> states;
  std::vector<std::pair<int, int>> where;  // device -> (reduction group, position in it)
  int n = 0, g = 0;
  std::vector<int> rows(std::size_t s, int p) const {
    return states[s].rows(reduction[0][static_cast<std::size_t>(p)]);
  }
};

View view_of(int n, const engine::Groups& reduction, const engine::LoweredProgram& prog, const std::string& name) {
  if (reduction.empty() || reduction.front().size() < 2)
    throw Error("--format msccl: the reduction groups have one device each: there is nothing to reduce");
  engine::Trace t = engine::replay(n, prog);
  if (t.failed_step >= 0)
    throw Error(fmt::format("program '{}': step {} is not valid here: {}", name, t.failed_step + 1, t.reason));
  View v{reduction,
         prog,
         std::move(t.states),
         std::vector<std::pair<int, int>>(static_cast<std::size_t>(n), {-1, -1}),
         n,
         static_cast<int>(reduction.front().size())};
  for (std::size_t j = 0; j < reduction.size(); ++j)
    for (std::size_t p = 0; p < reduction[j].size(); ++p)
      v.where[static_cast<std::size_t>(reduction[j][p])] = {static_cast<int>(j), static_cast<int>(p)};
  for (const auto& rg : reduction)
    if (static_cast<int>(rg.size()) != v.g)
      throw Error("--format msccl: the reduction groups differ in size; MSCCL runs one algorithm per communicator");
  return v;
}

// Local program of reduction group j: its steps as groups of positions.
Local local_of(const View& v, std::size_t j) {
  Local out;
  for (std::size_t s = 0; s < v.prog.size(); ++s) {
    std::vector<std::vector<int>> gs;
    for (const auto& grp : v.prog[s].groups) {
      if (grp.size() < 2) continue;
      const int rj = v.where[static_cast<std::size_t>(grp.front())].first;
      bool mine = rj == static_cast<int>(j);
      std::vector<int> pos;
      for (int d : grp) {
        if (v.where[static_cast<std::size_t>(d)].first != rj)
          throw Error(
              fmt::format("--format msccl: step {} ({}) has a group that spans several reduction groups; MSCCL's "
                          "AllReduce runs on one reduction group's communicator",
                          s + 1, engine::to_string(v.prog[s].collective)));
        pos.push_back(v.where[static_cast<std::size_t>(d)].second);
      }
      if (mine) gs.push_back(std::move(pos));
    }
    std::sort(gs.begin(), gs.end());
    out.push_back(std::move(gs));
  }
  return out;
}

// Every reduction group must run the same local program, and the rows each position holds in every
// state must be equal too: one MSCCL algorithm runs on every group's communicator.
Local common_local_program(const View& v) {
  const Local local = local_of(v, 0);
  for (std::size_t j = 1; j < v.reduction.size(); ++j) {
    if (local_of(v, j) != local)
      throw Error(fmt::format(
          "--format msccl: reduction group {} runs a different local program than group 0; one MSCCL algorithm "
          "cannot express both",
          j));
    for (std::size_t s = 0; s < v.states.size(); ++s)
      for (int p = 0; p < v.g; ++p)
        if (v.states[s].rows(v.reduction[j][static_cast<std::size_t>(p)]) !=
            v.states[s].rows(v.reduction[0][static_cast<std::size_t>(p)]))
          throw Error(
              fmt::format("--format msccl: reduction group {} lays out its rows differently from group 0 (state {}, "
                          "member {}); one MSCCL algorithm cannot express both",
                          j, s, p));
  }
  return local;
}

// The chunk unit: the gcd of every run boundary of every state's rows. Refined: an AllReduce's rows
// split into as many equal blocks as it has members (the ring's bandwidth-optimal cut); otherwise
// its blocks follow the coarser chunks (fewer operations).
int chunk_unit(const View& v, const Local& local, bool refine) {
  int unit = v.n;
  for (std::size_t s = 0; s < v.states.size(); ++s)
    for (int p = 0; p < v.g; ++p) {
      const auto r = v.rows(s, p);
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (i == 0 || r[i] != r[i - 1] + 1) unit = std::gcd(unit, r[i]);
        if (i + 1 == r.size() || r[i + 1] != r[i] + 1) unit = std::gcd(unit, r[i] + 1);
      }
    }
  if (refine)
    for (std::size_t s = 0; s < v.prog.size(); ++s)
      if (v.prog[s].collective == engine::Collective::AllReduce)
        for (const auto& m : local[s]) {
          const auto r = v.rows(s, m[0]);
          const auto k = m.size();
          if (r.size() % k != 0) continue;
          unit = std::gcd(unit, static_cast<int>(r.size() / k));
          for (std::size_t i = 1; i < k; ++i) unit = std::gcd(unit, r[i * r.size() / k]);
        }
  return unit <= 0 ? 1 : unit;
}

// One step's group m (positions) lowered to operations: rings for ReduceScatter, AllGather and
// AllReduce (ReduceScatter then AllGather), chains for Reduce and Broadcast.
struct StepLowering {
  const View& v;
  int unit;
  std::vector<int> chunks(std::size_t s, int p) const {
    std::vector<int> c;
    for (int r : v.rows(s, p))
      if (r % unit == 0) c.push_back(r / unit);
    return c;
  }
  std::vector<int> same_rows(std::size_t s, const std::vector<int>& m, const char* what) const {
    for (std::size_t i = 1; i < m.size(); ++i)
      if (chunks(s, m[i]) != chunks(s, m[0]))
        throw Error(
            fmt::format("--format msccl: step {} ({}): the members hold different rows before it", s + 1, what));
    return chunks(s, m[0]);
  }

  void ring(Writer& w, const std::vector<int>& m, const std::vector<std::vector<int>>& rs,
            const std::vector<std::vector<int>>& ag) const {
    const int k = static_cast<int>(m.size());
    for (int i = 0; i < k; ++i) {
      const int r = m[static_cast<std::size_t>(i)];
      w.peers(r, m[static_cast<std::size_t>(mod(i + 1, k))], m[static_cast<std::size_t>(mod(i - 1, k))]);
      if (!rs.empty()) {
        w.emit(r, "s", rs[static_cast<std::size_t>(mod(i - 1, k))]);
        for (int q = 0; q <= k - 2; ++q)
          w.emit(r, q < k - 2 ? "rrs" : "rrc", rs[static_cast<std::size_t>(mod(i - 2 - q, k))]);
      }
      if (!ag.empty()) {
        w.emit(r, "s", ag[static_cast<std::size_t>(i)]);
        for (int q = 0; q <= k - 2; ++q)
          w.emit(r, q < k - 2 ? "rcs" : "r", ag[static_cast<std::size_t>(mod(i - 1 - q, k))]);
      }
    }
  }

  void chain(Writer& w, const std::vector<int>& m, const std::vector<int>& all, bool reduce) const {
    const int k = static_cast<int>(m.size());
    for (int i = 0; i < k; ++i) {
      const int r = m[static_cast<std::size_t>(i)];
      const int prev = i > 0 ? m[static_cast<std::size_t>(i - 1)] : -1;
      const int next = i + 1 < k ? m[static_cast<std::size_t>(i + 1)] : -1;
      if (reduce) {  // towards the first member
        w.peers(r, prev, next);
        w.emit(r, i == k - 1 ? "s" : (i > 0 ? "rrs" : "rrc"), all);
      } else {  // from the first member
        w.peers(r, next, prev);
        w.emit(r, i == 0 ? "s" : (i + 1 < k ? "rcs" : "r"), all);
      }
    }
  }

  void group(Writer& w, std::size_t s, const std::vector<int>& m) const {
    using engine::Collective;
    const auto coll = v.prog[s].collective;
    const int k = static_cast<int>(m.size());
    std::vector<std::vector<int>> rs, ag;  // ring blocks per position for the two phases
    if (coll == Collective::AllReduce) {
      const auto all = same_rows(s, m, "AllReduce");
      for (int i = 0; i < k; ++i) {
        const auto b = all.size() * static_cast<std::size_t>(i) / static_cast<std::size_t>(k);
        const auto e = all.size() * static_cast<std::size_t>(i + 1) / static_cast<std::size_t>(k);
        rs.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(b), all.begin() + static_cast<std::ptrdiff_t>(e));
      }
      ag = rs;
    } else if (coll == Collective::ReduceScatter) {
      auto all = same_rows(s, m, "ReduceScatter");
      std::vector<int> un;
      for (int i = 0; i < k; ++i) {
        rs.push_back(chunks(s + 1, m[static_cast<std::size_t>(i)]));
        un.insert(un.end(), rs.back().begin(), rs.back().end());
      }
      std::sort(un.begin(), un.end());
      if (un != all)
        throw Error(
            fmt::format("--format msccl: step {} (ReduceScatter): the kept blocks do not partition the "
                        "rows held before it",
                        s + 1));
    } else if (coll == Collective::AllGather) {
      for (int i = 0; i < k; ++i) ag.push_back(chunks(s, m[static_cast<std::size_t>(i)]));
    }
    if (!rs.empty() || !ag.empty())
      ring(w, m, rs, ag);
    else if (coll == Collective::Reduce)
      chain(w, m, same_rows(s, m, "Reduce"), true);
    else
      chain(w, m, chunks(s, m[0]), false);
  }
};

std::string xml_text(const std::string& name, int channels, int nchunks, int g, const Writer& w) {
  std::string o = fmt::format(
      "<algo name=\"{}\" proto=\"Simple\" nchannels=\"{}\" nchunksperloop=\"{}\" ngpus=\"{}\" coll=\"allreduce\" "
      "inplace=\"1\" outofplace=\"0\" minBytes=\"0\" maxBytes=\"9223372036854775807\">\n",
      engine::text::xml_escape("p2v: " + name), channels, nchunks, g);
  for (int r = 0; r < g; ++r) {
    o += fmt::format("  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"0\" s_chunks=\"0\">\n", r, nchunks);
    const auto& tbs = w.tbs[static_cast<std::size_t>(r)];
    for (std::size_t b = 0; b < tbs.size(); ++b) {
      const auto& tb = tbs[b];
      o += fmt::format("    <tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"{}\">\n", b, tb.send, tb.recv, tb.chan);
      for (std::size_t i = 0; i < tb.ops.size(); ++i) {
        const auto& op = tb.ops[i];
        o += fmt::format(
            "      <step s=\"{}\" type=\"{}\" srcbuf=\"i\" srcoff=\"{}\" dstbuf=\"i\" dstoff=\"{}\" cnt=\"{}\" "
            "depid=\"{}\" deps=\"{}\" hasdep=\"{}\"/>\n",
            i, op.type, op.off, op.off, op.cnt, op.depid, op.deps, op.hasdep ? 1 : 0);
      }
      o += "    </tb>\n";
    }
    o += "  </gpu>\n";
  }
  o += "</algo>\n";
  return o;
}

std::string msccl_xml_impl(int n, const engine::Groups& reduction, const engine::LoweredProgram& prog,
                           const std::string& name, bool refine) {
  const View v = view_of(n, reduction, prog, name);
  const Local local = common_local_program(v);
  const StepLowering lower{v, chunk_unit(v, local, refine)};
  Writer w(v.g);
  int chan = 0;
  for (std::size_t s = 0; s < prog.size(); ++s) {
    if (local[s].empty()) continue;
    if (chan >= kMaxChannels)
      throw Error(
          fmt::format("--format msccl: more than {} steps with groups (one channel each; MAXCHANNELS)", kMaxChannels));
    w.begin_step(chan);
    for (const auto& m : local[s]) lower.group(w, s, m);
    w.end_step();
    ++chan;
  }
  return xml_text(name, chan, n / lower.unit, v.g, w);
}

}  // namespace

std::string msccl_xml(int n, const engine::Groups& reduction, const engine::LoweredProgram& prog,
                      const std::string& name, bool* refined) {
  try {
    std::string x = msccl_xml_impl(n, reduction, prog, name, true);
    if (refined) *refined = true;
    return x;
  } catch (const TooLong&) {
  }
  try {
    std::string x = msccl_xml_impl(n, reduction, prog, name, false);
    if (refined) *refined = false;
    return x;
  } catch (const TooLong& e) {
    throw Error(e.what());
  }
}

}  // namespace p2v::tools
