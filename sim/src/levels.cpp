#include "p2v/sim/levels.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "p2v/engine/error.hpp"
#include "p2v/sim/preset_devices.hpp"

namespace p2v::sim {

using namespace engine;

namespace {

// AWS's EFA plugin (aws-ofi-nccl) reports this inter-node latency in ncclNetProperties_t::latency
// on p4d.24xlarge, p4de.24xlarge and p5.48xlarge (platform_data_map, github.com/aws/aws-ofi-nccl
// src/platform-aws.c @ v1.7.3-aws = 6de215f8; unchanged on master src/platform-aws.cpp @ 2daf7d30,
// "p4d.24xlarge" and "p5/p5e"; before v1.7 every EFA device reported 150, src/nccl_ofi_net.c
// @ v1.3.0-aws, a value chosen so NCCL's tuning model matches measured AllReduce latency). NCCL
// takes it as graph->latencyInter (src/graph/search.cc) and adds it to each network hop of Ring
// and Tree, twice for Simple (src/graph/tuning.cc @ v2.18.5-1 = 559b70f8). p2v's models (levels and
// graph) add a network level's reported_latency_us to NCCL's estimate (the pick) where one is set,
// else its latency_us, and its latency_us to the time (nccl_model.cpp latency_us).
constexpr double kEfaPluginLatencyUs = 75.0;

// The time's p5 EFA hop latency (EFAv2; the interconnect's latency_us), while NCCL's pick keeps the
// 75 us the plugin reports (reported_latency_us). Fitted to the 8 B-1 KiB rows of the 2-node
// awsome-distributed-training log (bench/fidelity/data/p5/allreduce_2n16g_awsome.txt, NCCL 2.20.3,
// tree/LL: median predicted/measured 1.0 at 21 us; 2.5x too slow at 75 us); the other 2-node logs
// check it: aws-k8s-tester PR #585 (NCCL 2.22.3, tree/LL) 1.03-1.04 at 16-128 B, PR #503's forced
// ring 0.95-1.06 at 32 B-8 KiB, the EKS log at NCCL 2.18.5 (NVLS tree, Simple) 0.74-0.87 at 4 B-8 KiB.
// p4d keeps 75 us for both: its small sizes fit it (docs/simulator.md §2, presets).
constexpr double kP5EfaLatencyUs = 21.0;

NcclLevelParams nic_level(int nics, double nic_gbps) {
  NcclLevelParams l;
  l.nics = nics;
  l.nic_gbps = nic_gbps;
  return l;
}

NcclParams nccl_of(Arch arch, bool nvls, std::vector<NcclLevelParams> levels, int channels = 0, bool amd_cpu = false) {
  NcclParams p;
  p.arch = arch;
  p.amd_cpu = amd_cpu;
  p.nvls = nvls;
  p.channels = channels;
  p.levels = std::move(levels);
  return p;
}

}  // namespace

// Bandwidths are per direction, GB/s. An NVLink level's number is the effective per-GPU bandwidth
// NCCL's ring reaches (below the datasheet's line rate), a network level's the node's NICs
// together at line rate times 0.96 (IB/RoCE large-message efficiency, an assumption) unless
// stated. NCCL hop latencies are NCCL's defaults unless a level sets them.
const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = [] {
    std::vector<Preset> v;
    v.push_back({"dgx-a100",
                 "NVIDIA DGX A100: 8 x A100-SXM4 on NVSwitch (NVLink 3, 300 GB/s per direction, ~240 GB/s "
                 "effective); 8 x 200 Gb/s HDR InfiniBand per node (200 GB/s)",
                 {{LinkKind::Switch, 240, 0}, {LinkKind::Nic, 192, 0}},
                 // 24 collective channels: NCCL's rings on an 8 x A100 NVSwitch board ("Channel 00/24" ..
                 // "Channel 23/24" in the NCCL_DEBUG=INFO log of github.com/NVIDIA/nccl-tests issue #100, HGX A100).
                 // AMD CPUs (the datasheet: dual AMD Rome 7742; OCI's BM.GPU4.8 of the fidelity logs: AMD EPYC
                 // 7542): NCCL's AMD row of llMaxBws across nodes and its 2 us net overhead (tuning.cc).
                 nccl_of(Arch::Ampere, false, {{}, nic_level(8, 25)}, 24, true),
                 {},
                 "NVIDIA DGX A100 datasheet (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/nvidia-"
                 "dgx-a100-datasheet.pdf): 8x A100 SXM4, 6x NVSwitch, 600 GB/s GPU-to-GPU bidirectional, 8x "
                 "ConnectX-6 200 Gb/s HDR, dual AMD Rome 7742; ~240 GB/s: nccl-tests all_reduce busbw on one DGX A100 "
                 "(docs/simulator.md)"});
    v.push_back({"dgx-h100",
                 "NVIDIA DGX H100: 8 x H100-SXM5 on NVSwitch (NVLink 4, 450 GB/s per direction, ~370 GB/s effective "
                 "ring; NVLS); 8 x 400 Gb/s NDR InfiniBand per node (400 GB/s)",
                 {{LinkKind::Switch, 370, 0}, {LinkKind::Nic, 384, 0}},
                 nccl_of(Arch::Hopper, true, {{}, nic_level(8, 50)}),
                 {},
                 "NVIDIA DGX H100 datasheet (https://resources.nvidia.com/en-us-dgx-systems/ai-enterprise-dgx): 8x "
                 "H100 SXM5, 4x NVSwitch (NVLink 4, 900 GB/s bidirectional per GPU, NVLink SHARP), 8x ConnectX-7 "
                 "400 Gb/s NDR"});
    // Blackwell rows of NCCL's tables (nccl_model.cpp); Intel CPUs (the user guide: 2 x Intel Xeon 8570), so
    // NCCL's Intel row of llMaxBws across nodes and 1 us net overhead. No published nccl-tests run of a
    // DGX B200 is in the suite: the NVLink number is an assumption, and p2v says the preset is unchecked.
    // One published summary number agrees: "830+" GB/s all-reduce bus bandwidth on one 8 x B200 machine
    // under NCCL 2.27.1 (github.com/NVIDIA/nccl issue #1807); the preset gives 826-835 GB/s at 4-16 GiB.
    v.push_back({"dgx-b200",
                 "NVIDIA DGX B200: 8 x B200 on NVSwitch (NVLink 5, 900 GB/s per direction, ~740 GB/s effective "
                 "ring assumed; NVLS); 8 x 400 Gb/s ConnectX-7 InfiniBand per node (400 GB/s)",
                 {{LinkKind::Switch, 740, 0}, {LinkKind::Nic, 384, 0}},
                 nccl_of(Arch::Blackwell, true, {{}, nic_level(8, 50)}),
                 {},
                 "NVIDIA DGX B200 User Guide, Introduction (https://docs.nvidia.com/dgx/dgxb200-user-guide/"
                 "introduction-to-dgxb200.html): 8x B200, 2x 5th-generation NVLink switches with 14.4 TB/s "
                 "aggregate (1.8 TB/s bidirectional per GPU), 8x ConnectX-7 single-port up to 400 Gb/s InfiniBand, "
                 "2x Intel Xeon 8570; ~740 GB/s: dgx-h100's effective share of its NVLink rate (370 of 450 GB/s) "
                 "applied to NVLink 5 (an assumption no published measurement in bench/fidelity checks)"});
    {
      // GCP A3 Mega runs NCCL with Google's GPUDirect-TCPXO environment profile, which the A3 Mega
      // nccl-tests recipes source (nccl-env-profile.sh). The profile of the suite's log (Google's
      // plugin image v1.0.3/v1.0.4 of 2024, github.com/lessizzmore/create-a3mega-ztan-fork @c04e0961
      // README.md and startup_script_ubuntu.sh; the same settings in GoogleCloudPlatform/container-
      // engine-accelerators gpudirect-tcpxo/README.md @0a2b482e and, as "nccl-env-profile-simple.sh", in
      // github.com/google/nccl-plugin-gpudirect-tcpxo tcpxo_scripts/ @4b70770d): NCCL_NVLS_ENABLE=0,
      // NCCL_ALGO=Ring,Tree, NCCL_PROTO=Simple, NCCL_BUFFSIZE=8388608, NCCL_MIN_NCHANNELS=4, and a tuner
      // plugin (libnccl-tuner.so with a3plus_tuner_config.textproto; closed source, configuration not
      // public: google/nccl-plugin-gpudirect-tcpxo README.md, "Future Libraries"), modelled as picking
      // the fastest allowed candidate ("tuner": "fastest"). The profile puts the plugin's own NCCL first on
      // LD_LIBRARY_PATH; that repository's README lists libnccl.so.2.21.5 there: NCCL 2.21.5.
      // TCPXO's per-message latency is far above InfiniBand's and no source gives it (the plugin reports
      // props.latency = 0, nccl-plugin-gpudirect-tcpxo tcpdirect_plugin/fastrak_offload/nccl_shim.cc): the
      // network hop latency is fitted to the published 2-node log's 8 B - 1 KiB plateau (bench/fidelity,
      // a3-mega) under that profile (tree/Simple: 8.4 + 2 x (7 x 4.0 + hop) + launch 4 = 123 us).
      NcclLevelParams net = nic_level(8, 25);
      net.hop_latency_us = {-1, -1, 27.3};
      NcclParams np = nccl_of(Arch::Hopper, false, {{}, net});
      np.version = 22105;
      np.protocols = 1 << static_cast<int>(Protocol::Simple);
      np.algorithms = 1 | 2;  // ring, tree
      np.buffsize = 8388608;
      np.tuner = NcclTuner::Fastest;
      v.push_back(
          {"a3-mega",
           "Google Cloud A3 Mega (a3-megagpu-8g): 8 x H100-SXM5 on NVSwitch (NVLink 4); 8 x 200 Gb/s "
           "GPUDirect-TCPXO NICs per node (200 GB/s); Google's TCPXO NCCL profile (no NVLS, ring/tree, "
           "Simple, 8 MiB buffers, tuner plugin)",
           {{LinkKind::Switch, 370, 0}, {LinkKind::Nic, 190, 0}},
           np,
           {},
           "https://cloud.google.com/compute/docs/gpus#a3-series (a3-megagpu-8g: 8x H100 80GB, 8x 200 Gbps "
           "GPUDirect-TCPXO, 1,800 Gbps total); NCCL settings: Google's TCPXO nccl-env-profile.sh "
           "(github.com/google/nccl-plugin-gpudirect-tcpxo tcpxo_scripts/nccl-env-profile-simple.sh @4b70770d); "
           "network latency fitted to github.com/lessizzmore/create-a3mega-ztan-fork ztan-NCCL-test-result "
           "(8 B - 1 KiB)"});
    }
    {
      // 24 channels: the same HGX A100 NVSwitch board as dgx-a100 (nccl-tests issue #100).
      // No LL128 across nodes ("ll128_net": false): the three published 2-node p4d/p4de logs (three
      // sources, NCCL 2.9.9, 2.20.3 and 2.23.4; bench/fidelity/data/p4d) run 256 KiB-64 MiB at the times
      // of NCCL's pick among LL and Simple (ring/LL, then tree/Simple), 1.5-2.7x slower than its LL128 tree.
      // Why is not established (aws-ofi-nccl sets NCCL_PROTO=simple only without 128-byte ordering, which
      // would also stop LL, and the logs' small sizes run LL): docs/simulator.md §2, presets.
      NcclParams np = nccl_of(Arch::Ampere, false, {{}, nic_level(4, 12.5)}, 24);
      np.ll128_net = false;
      // 8 channels across nodes: NCCL_DEBUG=INFO of the 2-node p4d log (bench/fidelity/data/p4d/
      // allreduce_2n16g_efaeks.txt, NCCL 2.9.9) prints "8 coll channels" on all 16 ranks (one ring per
      // EFA NIC of the node's 4, doubled); one node keeps the board's 24.
      np.net_channels = 8;
      // aws-ofi-nccl's p4d environment (src/platform-aws.cpp @ v1.16.0): NCCL_BUFFSIZE 8 MiB (the
      // awsome p4de log's recipe sets it by hand too).
      np.buffsize = 8388608;
      v.push_back({"p4d",
                   "AWS p4d.24xlarge: 8 x A100-SXM4 40 GB on NVSwitch (NVLink 3, ~240 GB/s effective); 4 x 100 Gb/s "
                   "EFA per node (50 GB/s); no LL128 across nodes (as the published p4d runs)",
                   {{LinkKind::Switch, 240, 0}, {LinkKind::Nic, 45, kEfaPluginLatencyUs}},
                   np,
                   {},
                   "https://aws.amazon.com/ec2/instance-types/p4/ (p4d.24xlarge: 8x A100 40GB, 600 GB/s NVSwitch, "
                   "400 Gbps EFA, 4x 100 Gbps); 45 GB/s: EFA at 90% of line rate (assumption); EFA latency 75 us: "
                   "github.com/aws/aws-ofi-nccl src/platform-aws.c @ v1.7.3-aws; no LL128 across nodes: the "
                   "published 2-node p4d nccl-tests logs of bench/fidelity/data/p4d; 8 channels across nodes: "
                   "the NCCL_DEBUG=INFO lines of the github.com/aws-samples/aws-efa-eks p4d log (\"8 coll "
                   "channels\"); NCCL_BUFFSIZE 8 MiB: aws-ofi-nccl's p4d environment (src/platform-aws.cpp @ "
                   "v1.16.0)"});
    }
    {
      // AMD CPUs (3rd generation AMD EPYC, the instance page): NCCL's AMD rows (tuning.cc). NCCL's own
      // pick: AWS's tuner plugin (on by default from aws-ofi-nccl v1.16.0, 2025-06) is a system-file
      // choice, "tuner": "aws-ofi-p5" (docs/simulator.md §2: with its picks 29 of the 36 points of
      // the HyperPod logs on 4-32 nodes are within 1.25x, 28 with NCCL's own).
      NcclLevelParams efa = nic_level(32, 12.5);
      efa.reported_latency_us = kEfaPluginLatencyUs;
      NcclParams np = nccl_of(Arch::Hopper, true, {{}, efa}, 0, true);
      // aws-ofi-nccl's p5/p5e environment (src/platform-aws.cpp @ v1.16.0 = f998c195, the release that
      // made these per-platform defaults): NCCL_BUFFSIZE 8 MiB (also set by hand in AWS's p5 recipes of
      // the awsome-distributed-training and HyperPod logs, bench/fidelity/data/p5), NCCL_NVLS_CHUNKSIZE
      // and NCCL_NVLSTREE_MAX_CHUNKSIZE 512 KiB (set on every platform from v1.9.1-aws = ed1861ee,
      // 2024-04: "NCCL v2.19.3 reduced the chunk size used when running NVLS Tree algorithm on greater
      // than 4 nodes to 64KiB. This drastically impacted performance on AWS"), NCCL_NET_FORCE_FLUSH 0.
      np.buffsize = 8388608;
      np.nvls_chunk = 524288;
      np.nvls_tree_max_chunk = 524288;
      v.push_back(
          {"p5",
           "AWS p5.48xlarge: 8 x H100-SXM5 on NVSwitch (NVLink 4, NVLS); 32 x 100 Gb/s EFA per node (400 GB/s)",
           {{LinkKind::Switch, 370, 0}, {LinkKind::Nic, 360, kP5EfaLatencyUs}},
           np,
           {},
           "https://aws.amazon.com/ec2/instance-types/p5/ (p5.48xlarge: 8x H100 80GB, 900 GB/s NVSwitch, "
           "3200 Gbps EFAv2, 32x 100 Gbps, 3rd Gen AMD EPYC); 360 GB/s: EFA at 90% of line rate (assumption); "
           "EFA latency: 75 us as the plugin reports it to NCCL (github.com/aws/aws-ofi-nccl src/platform-aws.c "
           "@ v1.7.3-aws), 21 us per hop in the time (fitted to the 8 B - 1 KiB rows of the 2-node p5 log of "
           "github.com/aws-samples/awsome-distributed-training @88c2e71b micro-benchmarks/nccl-tests/README.md); "
           "NCCL_BUFFSIZE 8 MiB, NVLS and NVLS-tree chunks 512 KiB: aws-ofi-nccl's p5 environment "
           "(src/platform-aws.cpp @ v1.16.0)"});
    }
    v.push_back({"p2-a100",
                 "P2 paper's A100 nodes (docs/model.md §8): NVSwitch 270 GB/s; one NIC per node at 8 GB/s effective",
                 {{LinkKind::Switch, 270, 1}, {LinkKind::Nic, 8, 5}},
                 nccl_of(Arch::Ampere, false, {}),
                 {"a100"},
                 "docs/model.md §8 (the P2 paper's measured system)"});
    v.push_back({"p2-v100",
                 "P2 paper's V100 nodes (docs/model.md §8), levels: NVLink ring 135 GB/s; a NIC per node, 8 GB/s "
                 "effective",
                 {{LinkKind::Ring, 135, 1}, {LinkKind::Nic, 8, 5}},
                 nccl_of(Arch::Volta, false, {}),
                 {"v100"},
                 "docs/model.md §8 (the P2 paper's measured system)"});
    v.push_back({"h100",
                 "DGX H100 at line rate: 8 GPUs on NVLink 4 / NVSwitch, 450 GB/s per direction (NVLS); 8 x 400 Gb/s "
                 "NICs per node (400 GB/s); a non-blocking fabric above the nodes",
                 {{LinkKind::Switch, 450, 1}, {LinkKind::Nic, 400, 5}},
                 nccl_of(Arch::Hopper, true, {}),
                 {},
                 "NVIDIA DGX H100 datasheet line rates (see dgx-h100)"});
    v.push_back(
        {"h100-oversub",
         "DGX H100 nodes (NVSwitch 450 GB/s, 400 GB/s of NICs per node) in racks of up to 32 nodes whose "
         "uplinks are 4:1 oversubscribed (3,200 GB/s per rack), and pods of up to 32 racks, again 4:1 "
         "(25,600 GB/s per pod)",
         {{LinkKind::Switch, 450, 1}, {LinkKind::Nic, 400, 5}, {LinkKind::Nic, 3200, 10}, {LinkKind::Nic, 25600, 20}},
         nccl_of(Arch::Hopper, true, {}),
         {},
         "DGX H100 line rates; the oversubscription is an example, not a product"});
    return v;
  }();
  return p;
}

const Preset& find_preset(const std::string& name) {
  std::string names;
  for (const auto& p : presets()) {
    if (p.name == name || std::find(p.aliases.begin(), p.aliases.end(), name) != p.aliases.end()) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  throw Error(
      fmt::format("--preset '{}': unknown; presets are {} (old names: a100 = p2-a100, v100 = p2-v100)", name, names));
}

int apply_preset(System& s, const Preset& p, std::string* note) {
  int n = 0;
  const int L = static_cast<int>(s.levels.size());
  NcclParams np = p.nccl;
  np.levels.clear();
  // A system with fewer devices per node than the preset's node runs on part of each node. NCCL
  // puts a GPU's rings and trees on the NICs next to it (its topology search prefers the NICs of the
  // GPU's PCIe switch; PXN, which reaches another GPU's NIC over NVLink, needs that GPU in the
  // communicator), so the node's network level gets the NICs of the GPUs in use: ceil(nics x
  // devices / node devices), the GPUs taken as the node's first ones (e.g. 1 of a DGX H100's 8 NICs
  // for one GPU per node, 4 of p5's 32, 1 of p4d's 4 for two). Measured: 10 DGX-class H100 nodes
  // with 1, 2 and 4 GPUs each reach 48.7, 98.3 and 196.7 GB/s all_gather bus bandwidth, one
  // 400 Gb/s NIC per GPU (xxrjun/nccl-tests-cluster, docs/simulator.md §2).
  // The preset's node size, where it has one (a Preset built by a caller need not).
  int node_devices = 0;
  for (const auto& q : presets())
    if (q.name == p.name) node_devices = preset_device(q).node_devices;
  std::int64_t below = 1;  // devices in one instance of the level being filled (the levels inside it)
  bool first_net = true;
  for (int l = L - 1, i = 0; l >= 0; --l, ++i) {
    auto& lv = s.levels[static_cast<std::size_t>(l)];
    const std::int64_t inside = below;
    below *= lv.cardinality;
    if (lv.cardinality == 1 || lv.interconnect) continue;
    const auto k = std::min<std::size_t>(static_cast<std::size_t>(i), p.levels.size() - 1);
    lv.interconnect = p.levels[k];
    const int nics = k < p.nccl.levels.size() ? p.nccl.levels[k].nics : 0;
    int used = nics;
    // The first level the preset fills with a network level: what one instance holds of a node.
    if (k >= 1 && first_net) {
      first_net = false;
      if (nics > 0 && node_devices > 0 && inside < node_devices) {
        used = static_cast<int>(std::max<std::int64_t>(1, (nics * inside + node_devices - 1) / node_devices));
        lv.interconnect->bandwidth_gbps *= static_cast<double>(used) / nics;
        if (note)
          *note = fmt::format("{} of the node's {} GPUs in use: {} of its {} NICs, {:g} GB/s per {}", inside,
                              node_devices, used, nics, lv.interconnect->bandwidth_gbps, lv.name);
      }
    }
    if (k < p.nccl.levels.size()) {
      NcclLevelParams x = p.nccl.levels[k];
      x.level = lv.name;
      x.nics = used;
      if (x.nics > 0 || x.nic_gbps > 0 || x.hw || x.bus_bw_gbps > 0 || x.reported_latency_us >= 0 ||
          std::any_of(x.hop_latency_us.begin(), x.hop_latency_us.end(), [](double d) { return d >= 0; }) ||
          std::any_of(x.hop_latency_scale.begin(), x.hop_latency_scale.end(), [](double d) { return d != 1.0; }))
        np.levels.push_back(std::move(x));
    }
    ++n;
  }
  if (n > 0 && s.nccl.is_null()) s.nccl = nccl_json(np);
  return n;
}

void set_sharp(System& s, bool on) {
  if (s.nccl.is_null()) s.nccl = nlohmann::json::object();
  if (on)
    s.nccl["sharp"] = true;
  else
    s.nccl.erase("sharp");
}

LevelSimulator::LevelSimulator(const System& s) {
  if (s.has_topology())
    throw Error(
        fmt::format("system '{}' has a \"topology\" section, which the level model cannot price; the graph "
                    "simulator handles it up to 2048 devices",
                    s.name));
  for (const auto& l : s.levels) {
    if (l.cardinality > 1 && !l.interconnect)
      throw Error(
          fmt::format("system '{}': level '{}' has {} instances but no interconnect; give one in the system "
                      "file or choose a preset (--preset {})",
                      s.name, l.name, l.cardinality, presets().front().name));
    if (l.cardinality > 1 && !(l.interconnect->bandwidth_gbps > 0))
      throw Error(fmt::format("system '{}': level '{}': interconnect bandwidth must be positive", s.name, l.name));
    cards_.push_back(l.cardinality);
    names_.push_back(l.name);
    links_.push_back(l.interconnect.value_or(Interconnect{}));
  }
  nccl_ = nccl_params(s);
  for (std::size_t l = 0; l < links_.size(); ++l) {
    const auto* lp = nccl_.level(names_[l]);
    if (lp && lp->bus_bw_gbps > 0) links_[l].bandwidth_gbps = lp->bus_bw_gbps;
    hw_.push_back(lp && lp->hw ? *lp->hw : hw_class_of(links_[l].kind));
  }
}

LevelStep LevelSimulator::step(const Shape& s, Collective c, const GroupPattern& g, double S, Algorithm algo,
                               Protocol proto) const {
  const int L = static_cast<int>(cards_.size());
  const double p = static_cast<double>(g.group_size);
  LevelStep out;
  StepCost& sc = out.cost;
  sc.collective = c;
  sc.num_groups = static_cast<int>(std::min<std::int64_t>(g.num_groups, 1 << 30));
  sc.group_size = static_cast<int>(g.group_size);
  sc.bytes_per_rank = c == Collective::AllGather ? S * p : S;
  if (g.group_size < 2) return out;
  // Per user level: instances (prefix product), devices per instance.
  std::vector<double> inst(L), below(L), blocks(L), Y(L, 1.0);
  double n = 1;
  for (int l = 0; l < L; ++l) n *= cards_[l];
  double acc = 1;
  for (int l = 0; l < L; ++l) {
    acc *= cards_[l];
    inst[l] = acc;
    below[l] = n / acc;
  }
  for (int l = 0; l < L; ++l) {
    blocks[l] = 1;
    for (const auto& d : g.vary)
      if (d.level <= l) blocks[l] *= d.factor;
  }
  if (g.master)  // only devices whose other reduction digits are 0 take part
    for (int i : s.reduce)
      for (int j = 0; j < L; ++j) {
        if (s.x[i][j] == 1) continue;
        if (std::any_of(g.vary.begin(), g.vary.end(), [&](const Digit& d) { return d.axis == i && d.level == j; }))
          continue;
        for (int l = 0; l < j; ++l) Y[l] *= s.x[i][j];
      }
  // Groups with members inside one (busiest) level-l instance.
  auto groups_in = [&](int l) { return below[l] / Y[l] * blocks[l] / p; };
  const int top = g.vary.front().level;
  // NCCL nodes: the innermost level whose interconnect is a network joins them (nl; -1: one node).
  int nl = -1;
  for (int l = 0; l < L; ++l)
    if (cards_[l] > 1 && hw_[l] == HwClass::Net) nl = l;
  double K_net = 1;  // nodes a group spans
  for (const auto& d : g.vary)
    if (d.level <= nl) K_net *= d.factor;
  // Nodes of one group inside one instance of level l (l <= nl).
  auto nodes_in = [&](int l) {
    double k = 1;
    for (const auto& d : g.vary)
      if (d.level > l && d.level <= nl) k *= d.factor;
    return k;
  };
  // The largest degree of a head in NCCL's double binary tree over k heads (both trees).
  auto tree_maxdeg = [](long long k) { return nccl_tree_max_degree(k); };
  std::vector<double> load(L, 0.0), flow(L, 0.0);  // per level: bytes on the busiest uplink, largest flow
  // Busiest-link time of algorithm a's flows (full link bandwidth) and its level.
  auto evaluate = [&](Algorithm a) {
    std::fill(load.begin(), load.end(), 0.0);
    std::fill(flow.begin(), flow.end(), 0.0);
    // A ring on the levels `pick` selects: every group crosses a spanned level-l instance's uplink
    // once per round with b bytes.
    auto ring_if = [&](double b, double reps, auto&& pick) {
      for (int l = 0; l < L; ++l)
        if (cards_[l] > 1 && blocks[l] > 1 && pick(l)) {
          load[l] += groups_in(l) * b * reps;
          flow[l] = std::max(flow[l], b * reps);
        }
    };
    auto ring = [&](double b, double reps) { ring_if(b, reps, [](int) { return true; }); };
    auto intra = [&](int l) { return l > nl; };
    const double ppn = p / K_net;
    switch (c) {
      case Collective::AllReduce:
        if (a == Algorithm::Tree) {
          // Chains inside each instance of the outermost level with more than one instance, a
          // double binary tree across the chains' heads (docs/simulator.md).
          int outer = 0;
          while (outer < L && cards_[outer] == 1) ++outer;
          double K = 1;
          std::size_t first_inner = 0;
          while (first_inner < g.vary.size() && g.vary[first_inner].level <= outer) K *= g.vary[first_inner++].factor;
          const auto k = static_cast<long long>(K);
          const int maxdeg = tree_maxdeg(k);
          for (int l = outer; l < L; ++l) {
            if (cards_[l] == 1) continue;
            double inner_blocks = 1, rest = 1;
            for (std::size_t t = first_inner; t < g.vary.size(); ++t)
              (g.vary[t].level <= l ? inner_blocks : rest) *= g.vary[t].factor;
            const double G = groups_in(l);
            const double heads = below[l] / Y[l] / rest;  // chain heads in the heads' instance
            const double tree_out = heads * maxdeg * S / 2;
            if (k > 1) flow[l] = S / 2;
            if (l == outer) {
              load[l] = tree_out;
              continue;
            }
            const double first = inner_blocks > 1 ? S : 0.0;                                // position 0: down only
            const double middle = inner_blocks > 2 ? 2 * S : (inner_blocks > 1 ? S : 0.0);  // both ways
            load[l] = std::max(G * first + tree_out, G * middle);
            if (inner_blocks > 1) flow[l] = S;
          }
        } else if (a == Algorithm::Nvls || a == Algorithm::NvlsTree || a == Algorithm::CollNet) {
          // Inside nodes: NVLS (S out, S in per GPU) or, for CollNet, reduce-scatter + all-gather.
          if (a == Algorithm::CollNet)
            ring_if(S / ppn, 2 * (ppn - 1), intra);
          else
            ring_if(S, 1, intra);
          // Across nodes: the NVLS tree's double binary tree (every GPU its slice), or the network
          // reduces (SHARP): S out and S in per node.
          const double per_node = a == Algorithm::NvlsTree ? tree_maxdeg(static_cast<long long>(K_net)) * S / 2 : S;
          for (int l = 0; l <= nl; ++l)
            if (cards_[l] > 1 && blocks[l] > 1) {
              load[l] += groups_in(l) * nodes_in(l) * per_node;
              flow[l] = std::max(flow[l], per_node / std::max(1.0, ppn));
            }
        } else {
          ring(S / p, 2 * (p - 1));
        }
        break;
      case Collective::ReduceScatter:
        ring(S / p, p - 1);
        break;
      case Collective::AllGather:
        ring(S, p - 1);
        break;
      case Collective::Reduce:
      case Collective::Broadcast:
        for (int l = 0; l < L; ++l)
          if (cards_[l] > 1 && blocks[l] > 1) {
            load[l] += groups_in(l) * S;
            flow[l] = S;
          }
        break;
    }
    FlowTime worst(0.0, 0.0, 0.0);  // busiest level, and busiest inside nodes / across them
    int wl = -1;
    for (int l = 0; l < L; ++l) {
      if (load[l] == 0) continue;
      double t = load[l] / (links_[l].bandwidth_gbps * 1e9);
      if (links_[l].flow_bandwidth_gbps > 0) t = std::max(t, flow[l] / (links_[l].flow_bandwidth_gbps * 1e9));
      double& part = hw_[l] == HwClass::Net ? worst.net_s : worst.intra_s;
      part = std::max(part, t);
      // Inside nodes, NVLS's loads are its NVSwitch traffic only (local_s); other algorithms'
      // inner loads may include a head's network traffic (as the graph model charges it): unknown.
      if (hw_[l] != HwClass::Net && (a == Algorithm::Nvls || a == Algorithm::NvlsTree))
        worst.local_s = std::max(worst.local_s, t);
      if (t > worst.s) {
        worst.s = t;
        wl = l;
      }
    }
    return std::pair{worst, wl};
  };
  // NCCL's view of one group: ranks, nodes, hop classes and level parameters.
  CallShape cs;
  cs.coll = c;
  cs.ranks = static_cast<int>(std::min<std::int64_t>(g.group_size, 1 << 30));
  cs.nodes = static_cast<int>(std::min<double>(K_net, 1 << 30));
  cs.bytes = sc.bytes_per_rank;
  sc.nodes = cs.nodes;
  GroupLevels gl;
  for (const auto& d : g.vary)
    if (d.level > nl) {  // the innermost spanned level inside a node (the graph model's first intra hop)
      gl.intra_hw = hw_[d.level];
      gl.intra = nccl_.level(names_[d.level]);
      if (hw_[d.level] == HwClass::PCI) cs.intra_pci = true;  // NCCL's typeIntra > NVB: no LL128 (tuning.cc)
    }
  if (K_net > 1) gl.inter = nccl_.level(names_[nl]);  // the nodes' uplinks
  gl.reported_latency_inter_us = 0.0;
  for (int l = top; l <= nl; ++l)
    if (cards_[l] > 1 && hw_[l] == HwClass::Net) {
      gl.latency_inter_us += links_[l].latency_us;
      const NcclLevelParams* lp = nccl_.level(names_[l]);
      gl.reported_latency_inter_us += lp ? lp->estimate_latency_us(links_[l].latency_us) : links_[l].latency_us;
    }
  std::vector<std::pair<Algorithm, std::pair<FlowTime, int>>> flows;
  auto flow_of = [&](Algorithm a) {
    for (const auto& [x, f] : flows)
      if (x == a) return f;
    flows.emplace_back(a, evaluate(a));
    return flows.back().second;
  };
  const NcclChoice use = choose(
      nccl_, cs, algo, proto, [&](Algorithm a) { return flow_of(a).first; },
      [&](Algorithm a, Protocol q, bool est) { return latency_us(nccl_, cs, gl, a, q, est) * 1e-6; });
  sc.nccl_pick = use.nccl_algo;
  sc.nccl_proto = use.nccl_proto;
  sc.algo = use.algo;
  sc.proto = use.proto;
  const auto [bw, wl] = flow_of(use.algo);  // computed while choosing
  sc.bandwidth_s = bandwidth_time(nccl_, cs, use.algo, use.proto, bw, false);
  sc.latency_s = latency_us(nccl_, cs, gl, use.algo, use.proto) * 1e-6 + nccl_.effective_launch_us() * 1e-6;
  sc.time_s = sc.latency_s + sc.bandwidth_s;
  sc.bottleneck_edge = wl;
  sc.bottleneck_bytes = wl >= 0 ? load[static_cast<std::size_t>(wl)] : 0.0;
  if (wl >= 0) out.bottleneck = fmt::format("{} uplink ({})", names_[wl], to_string(links_[wl].kind));
  if (sc.time_s > 0) {
    sc.algbw_gbps = sc.bytes_per_rank / sc.time_s / 1e9;
    sc.busbw_gbps = sc.algbw_gbps * bus_factor(c, p);
  }
  return out;
}

LevelProgramCost LevelSimulator::simulate(const Shape& s, const std::vector<Collective>& cs,
                                          const std::vector<GroupPattern>& gs, const CostOptions& opt) const {
  if (!(opt.bytes > 0)) throw Error("simulate: the data size must be positive (set CostOptions::bytes)");
  // Bytes held by device 0, which is the root of the first group of every step; in a valid step
  // every group's root holds as much (docs/shape.md §7).
  double S = opt.bytes;
  LevelProgramCost pc;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    pc.steps.push_back(step(s, cs[i], gs[i], S, opt.algo, opt.proto));
    pc.time_s += pc.steps.back().cost.time_s;
    const double p = static_cast<double>(gs[i].group_size);
    if (cs[i] == Collective::ReduceScatter) S /= p;
    if (cs[i] == Collective::AllGather) S *= p;
  }
  return pc;
}

double LevelSimulator::allreduce_time(const Shape& s, const CostOptions& opt) const {
  const GroupPattern g = group_pattern(s, 0, FormKind::Inside, -1);
  return simulate(s, {Collective::AllReduce}, {g}, opt).time_s;
}

}  // namespace p2v::sim
