// p2v export --format msccl (issue 26 item 7): a reduction program as an MSCCL algorithm file.
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

std::string msccl_xml_impl(int n, const engine::Groups& reduction, const engine::LoweredProgram& prog,
                           const std::string& name, bool refine) {
  if (reduction.empty() || reduction.front().size() < 2)
    throw Error("--format msccl: the reduction groups have one device each: there is nothing to reduce");
  const engine::Trace t = engine::replay(n, prog);
  if (t.failed_step >= 0)
    throw Error(fmt::format("program '{}': step {} is not valid here: {}", name, t.failed_step + 1, t.reason));
  const auto& states = t.states;
  // Device -> (reduction group, position in it).
  std::vector<std::pair<int, int>> where(static_cast<std::size_t>(n), {-1, -1});
  for (std::size_t j = 0; j < reduction.size(); ++j)
    for (std::size_t p = 0; p < reduction[j].size(); ++p)
      where[static_cast<std::size_t>(reduction[j][p])] = {static_cast<int>(j), static_cast<int>(p)};
  const int g = static_cast<int>(reduction.front().size());
  for (const auto& rg : reduction)
    if (static_cast<int>(rg.size()) != g)
      throw Error("--format msccl: the reduction groups differ in size; MSCCL runs one algorithm per communicator");

  // Local program of each reduction group: steps as groups of positions; all must be equal, and
  // the rows each position holds in every state must be equal too.
  using Local = std::vector<std::vector<std::vector<int>>>;  // step -> groups -> positions
  auto local_of = [&](std::size_t j) {
    Local out;
    for (std::size_t s = 0; s < prog.size(); ++s) {
      std::vector<std::vector<int>> gs;
      for (const auto& grp : prog[s].groups) {
        if (grp.size() < 2) continue;
        const int rj = where[static_cast<std::size_t>(grp.front())].first;
        bool mine = rj == static_cast<int>(j);
        std::vector<int> pos;
        for (int d : grp) {
          if (where[static_cast<std::size_t>(d)].first != rj)
            throw Error(
                fmt::format("--format msccl: step {} ({}) has a group that spans several reduction groups; MSCCL's "
                            "AllReduce runs on one reduction group's communicator",
                            s + 1, engine::to_string(prog[s].collective)));
          pos.push_back(where[static_cast<std::size_t>(d)].second);
        }
        if (mine) gs.push_back(std::move(pos));
      }
      std::sort(gs.begin(), gs.end());
      out.push_back(std::move(gs));
    }
    return out;
  };
  const Local local = local_of(0);
  for (std::size_t j = 1; j < reduction.size(); ++j) {
    if (local_of(j) != local)
      throw Error(fmt::format(
          "--format msccl: reduction group {} runs a different local program than group 0; one MSCCL algorithm "
          "cannot express both",
          j));
    for (std::size_t s = 0; s < states.size(); ++s)
      for (int p = 0; p < g; ++p)
        if (states[s].rows(reduction[j][static_cast<std::size_t>(p)]) !=
            states[s].rows(reduction[0][static_cast<std::size_t>(p)]))
          throw Error(
              fmt::format("--format msccl: reduction group {} lays out its rows differently from group 0 (state {}, "
                          "member {}); one MSCCL algorithm cannot express both",
                          j, s, p));
  }
  // Rows of position p in state s, and the chunk unit: the gcd of every run boundary.
  auto rows = [&](std::size_t s, int p) { return states[s].rows(reduction[0][static_cast<std::size_t>(p)]); };
  int unit = n;
  for (std::size_t s = 0; s < states.size(); ++s)
    for (int p = 0; p < g; ++p) {
      const auto r = rows(s, p);
      for (std::size_t i = 0; i < r.size(); ++i) {
        if (i == 0 || r[i] != r[i - 1] + 1) unit = std::gcd(unit, r[i]);
        if (i + 1 == r.size() || r[i + 1] != r[i] + 1) unit = std::gcd(unit, r[i] + 1);
      }
    }
  // Refined: an AllReduce's rows split into as many equal blocks as it has members (the ring's
  // bandwidth-optimal cut); otherwise its blocks follow the coarser chunks (fewer operations).
  if (refine)
    for (std::size_t s = 0; s < prog.size(); ++s)
      if (prog[s].collective == engine::Collective::AllReduce)
        for (const auto& m : local[s]) {
          const auto r = rows(s, m[0]);
          const auto k = m.size();
          if (r.size() % k != 0) continue;
          unit = std::gcd(unit, static_cast<int>(r.size() / k));
          for (std::size_t i = 1; i < k; ++i) unit = std::gcd(unit, r[i * r.size() / k]);
        }
  if (unit <= 0) unit = 1;
  const int nchunks = n / unit;
  auto chunks = [&](std::size_t s, int p) {
    std::vector<int> c;
    for (int r : rows(s, p))
      if (r % unit == 0) c.push_back(r / unit);
    return c;
  };

  Writer w(g);
  int chan = 0;
  for (std::size_t s = 0; s < prog.size(); ++s) {
    if (local[s].empty()) continue;
    if (chan >= kMaxChannels)
      throw Error(
          fmt::format("--format msccl: more than {} steps with groups (one channel each; MAXCHANNELS)", kMaxChannels));
    w.begin_step(chan);
    const auto coll = prog[s].collective;
    for (const auto& m : local[s]) {
      const int k = static_cast<int>(m.size());
      auto same_rows = [&](const char* what) {
        for (int i = 1; i < k; ++i)
          if (chunks(s, m[static_cast<std::size_t>(i)]) != chunks(s, m[0]))
            throw Error(
                fmt::format("--format msccl: step {} ({}): the members hold different rows before it", s + 1, what));
        return chunks(s, m[0]);
      };
      std::vector<std::vector<int>> rs, ag;  // ring blocks per position for the two phases
      using engine::Collective;
      if (coll == Collective::AllReduce) {
        const auto all = same_rows("AllReduce");
        for (int i = 0; i < k; ++i) {
          const auto b = all.size() * static_cast<std::size_t>(i) / static_cast<std::size_t>(k);
          const auto e = all.size() * static_cast<std::size_t>(i + 1) / static_cast<std::size_t>(k);
          rs.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(b), all.begin() + static_cast<std::ptrdiff_t>(e));
        }
        ag = rs;
      } else if (coll == Collective::ReduceScatter) {
        auto all = same_rows("ReduceScatter");
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
      if (!rs.empty() || !ag.empty()) {
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
      } else if (coll == Collective::Reduce) {
        const auto all = same_rows("Reduce");
        for (int i = 0; i < k; ++i) {
          const int r = m[static_cast<std::size_t>(i)];
          w.peers(r, i > 0 ? m[static_cast<std::size_t>(i - 1)] : -1,
                  i + 1 < k ? m[static_cast<std::size_t>(i + 1)] : -1);
          w.emit(r, i == k - 1 ? "s" : (i > 0 ? "rrs" : "rrc"), all);
        }
      } else {  // Broadcast from the first member
        const auto all = chunks(s, m[0]);
        for (int i = 0; i < k; ++i) {
          const int r = m[static_cast<std::size_t>(i)];
          w.peers(r, i + 1 < k ? m[static_cast<std::size_t>(i + 1)] : -1,
                  i > 0 ? m[static_cast<std::size_t>(i - 1)] : -1);
          w.emit(r, i == 0 ? "s" : (i + 1 < k ? "rcs" : "r"), all);
        }
      }
    }
    w.end_step();
    ++chan;
  }

  std::string o = fmt::format(
      "<algo name=\"{}\" proto=\"Simple\" nchannels=\"{}\" nchunksperloop=\"{}\" ngpus=\"{}\" coll=\"allreduce\" "
      "inplace=\"1\" outofplace=\"0\" minBytes=\"0\" maxBytes=\"9223372036854775807\">\n",
      engine::text::xml_escape("p2v: " + name), chan, nchunks, g);
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
