#!/usr/bin/env python3
"""Fidelity suite (docs/simulator.md §6): p2v's predictions against published nccl-tests measurements.

For every log under bench/fidelity/data/<system>/ it runs
    p2v calibrate --system node=N,gpu=G --preset P --nccl-tests LOG --predict-only --json
(the preset named by the file's "# preset:" line, uncalibrated) and prints predicted vs measured
per point (unless --no-points), per system and per size regime (<= 1 MiB, 1-64 MiB, >= 128 MiB): median ratio
predicted/measured, share within 1.25x and 2x, the worst point. The summaries are printed twice:
for every point, and without the points of the data rule (out-of-place and in-place times of one
size more than 2x apart, docs/simulator.md §6.1), which are still printed, marked '!'.

--cv adds cross-validation: (a) per log, calibrate on every other size and predict the rest;
(b) per cluster (logs of one source and one shape) with logs of several collectives, calibrate on
one collective and predict the others. --svg writes the log-log scatter (predicted vs measured, one colour per system,
y = x with 1.25x and 2x bands). --fast only checks that p2v reads every data file (CTest).

Only the Python standard library is used.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
REGIMES = [("<= 1 MiB", lambda b: b <= MiB), ("1-64 MiB", lambda b: MiB < b < 128 * MiB),
           (">= 128 MiB", lambda b: b >= 128 * MiB)]
TAG = re.compile(r"^\[\d+,\d+\]<std(out|err)>:")
RANK = re.compile(r"Rank\s+(\d+)\b.*?\bon\s+(\S+)\s+device\b")


def read_meta(path):
    """The file's annotations (# preset:, # nodes:, ...) and, from its Rank lines, ranks and hosts."""
    meta, ranks, hosts = {}, set(), []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = TAG.sub("", line.rstrip("\n"))
            m = re.match(r"#\s*(preset|network|nodes|gpus-per-node|collective|source|system|nccl-version|nccl-algo|nccl-tuner):\s*(.*)", line)
            if m:
                meta.setdefault(m.group(1), m.group(2).strip())
                continue
            m = RANK.search(line)
            if m and line.lstrip().startswith("#"):
                ranks.add(int(m.group(1)))
                if m.group(2) not in hosts:
                    hosts.append(m.group(2))
    if ranks:
        nodes = len(hosts)
        gpus = len(ranks) // nodes
    else:
        nodes, gpus = int(meta.get("nodes", 0)), int(meta.get("gpus-per-node", 0))
    if nodes <= 0 or gpus <= 0:
        raise SystemExit(f"fidelity: {path}: no Rank lines and no '# nodes:' / '# gpus-per-node:' lines")
    meta["n_nodes"], meta["n_gpus"] = nodes, gpus
    return meta


def cluster_of(meta, path):
    """The cluster a log was measured on, as far as the suite knows it: its source (the first word of
    its '# source:' line: the log file, page or comment it was copied from); a log without one is its
    own cluster."""
    words = meta.get("source", "").split()
    return words[0] if words else path


def p2v_json(p2v, args):
    r = subprocess.run([p2v] + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"p2v {' '.join(args)}: exit {r.returncode}: {r.stderr.strip() or r.stdout.strip()}")
    return json.loads(r.stdout)


def system_args(meta):
    return ["--system", f"node={meta['n_nodes']},gpu={meta['n_gpus']}", "--preset", meta["preset"]]


def coll_args(meta):
    args = []
    if "collective" in meta:
        args += ["--collective", "".join(w.capitalize() for w in meta["collective"].split("_"))]  # all_gather -> AllGather
    if "nccl-version" in meta:  # a version the source states but the log does not print
        args += ["--nccl-version", meta["nccl-version"].split()[0]]
    if "nccl-algo" in meta:  # the run forced NCCL_ALGO (its source says so): predict that algorithm, not NCCL's pick
        args += ["--algo", meta["nccl-algo"].split()[0].lower()]
    if "nccl-tuner" in meta:  # the run loaded a tuner plugin p2v models (its source says so): predict its pick
        args += ["--nccl-tuner", meta["nccl-tuner"].split()[0]]
    return args


def predict(p2v, path, meta, system=None):
    sysargs = ["--system", system] if system else system_args(meta)
    j = p2v_json(p2v, ["calibrate"] + sysargs + ["--nccl-tests", path, "--predict-only", "--json"] + coll_args(meta))
    return j["points"]


def calibrate(p2v, paths, meta, out):
    args = ["calibrate"] + system_args(meta) + ["--nccl-tests"] + paths + ["-o", out, "--json"] + coll_args(meta)
    return p2v_json(p2v, args)


def data_files(data):
    out = []
    for d in sorted(os.listdir(data)):
        full = os.path.join(data, d)
        if os.path.isdir(full):
            out += [os.path.join(full, f) for f in sorted(os.listdir(full)) if f.endswith(".txt")]
    return out


def row_lines(path):
    """Indices of the table rows (lines after the column header whose first word is a number)."""
    rows, header = [], False
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        t = TAG.sub("", line).lstrip("# \t")
        w = t.split()
        if w[:2] == ["size", "count"]:
            header = True
        elif header and w and w[0].isdigit():
            rows.append(i)
    return lines, rows


# Data-quality rule (docs/simulator.md §6.1): nccl-tests times the out-of-place and the in-place
# call of a size in the same run with the same iterations, and their algorithms, protocols and
# bytes are the same, so their times agree closely: over the suite's 234 points the median of
# |ln(oop/ip)| is 0.008, and apart from 5 points every pair is within 1.7x; those 5 are 2.4-4.0x
# apart. A size whose two times differ by more than INCONSISTENT_FACTOR is a glitch of that
# run (e.g. the 8-node H100 log's 8 MiB: 1272 us out-of-place, 321 us in-place), not a measurement
# of the collective. The same factor catches a glitch the in-place call does not show: a size whose
# out-of-place time is more than INCONSISTENT_FACTOR times the next larger size's (the time more
# than halves as the bytes double, which no algorithm or protocol switch does; Crusoe's 256 KiB:
# 192.8 us, 512 KiB: 68.0 us). Such points are still predicted and printed (marked), and the
# summaries are given with and without them.
INCONSISTENT_FACTOR = 2.0


def oop_ip_times(path):
    """{1-based line: (out-of-place time, in-place time)} of a log's table rows (in-place may be None)."""
    out, cols = {}, None
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        w = TAG.sub("", line).lstrip("# \t").split()
        if w[:2] == ["size", "count"]:
            cols = [k for k, x in enumerate(w) if x == "time"]
        elif cols and w and w[0].isdigit():
            try:
                oop = float(w[cols[0]])
                ip = float(w[cols[1]]) if len(cols) > 1 and len(w) > cols[1] else None
            except (ValueError, IndexError):
                continue
            out[i + 1] = (oop, ip)
    return out


def glitches(path):
    """Table-row lines of a log the data rule leaves out: out-of-place and in-place times more than
    INCONSISTENT_FACTOR apart, or an out-of-place time more than INCONSISTENT_FACTOR times the next
    row's (the next larger size)."""
    times = oop_ip_times(path)
    lines = sorted(times)
    out = set()
    for k, line in enumerate(lines):
        oop, ip = times[line]
        if oop and ip and max(oop / ip, ip / oop) > INCONSISTENT_FACTOR:
            out.add(line)
        if k + 1 < len(lines) and oop and times[lines[k + 1]][0] and oop > INCONSISTENT_FACTOR * times[lines[k + 1]][0]:
            out.add(line)
    return out


def mark_inconsistent(points):
    """Sets p["inconsistent"] on every point the data rule leaves out (glitches: the rule above);
    returns the marked points."""
    cache, marked = {}, []
    for p in points:
        if p["origin"] not in cache:
            cache[p["origin"]] = glitches(p["origin"])
        p["inconsistent"] = p["line"] in cache[p["origin"]]
        if p["inconsistent"]:
            marked.append(p)
    return marked


def write_subset(lines, drop, path):
    """Writes `lines` without the indices in `drop`; returns the kept original indices."""
    kept = [i for i in range(len(lines)) if i not in drop]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines[i] for i in kept))
    return kept


def ratios(points):
    """predicted / measured of every point, ascending."""
    return sorted(p["predicted_s"] / p["measured_s"] for p in points)


def within(r, factor):
    """How many of the ratios `r` are within `factor` of 1 (both ways, edges included)."""
    return sum(1 for x in r if 1 / factor <= x <= factor)


def summary(points, title):
    """Per regime: n, median ratio, % within 1.25x, % within 2x, worst ratio (and where)."""
    out = []
    for name, sel in REGIMES + [("all", lambda b: True)]:
        ps = [p for p in points if sel(p["bytes"])]
        if not ps:
            continue
        r = ratios(ps)
        worst = max(ps, key=lambda p: abs(math.log(p["predicted_s"] / p["measured_s"])))
        out.append({"title": title, "regime": name, "n": len(ps), "median": statistics.median(r),
                    "in125": 100.0 * within(r, 1.25) / len(r),
                    "in2": 100.0 * within(r, 2) / len(r),
                    "worst": worst["predicted_s"] / worst["measured_s"],
                    "worst_at": f"{os.path.relpath(worst['origin'], HERE)}:{worst['line']}"})
    return out


def kind_of(p, metas):
    """A point's kind: (preset, nodes, GPUs per node, collective)."""
    m = metas[p["origin"]]
    return os.path.basename(os.path.dirname(p["origin"])), m["n_nodes"], m["n_gpus"], p["collective"]


def by_kind(points, metas):
    """{(preset, nodes, GPUs per node, collective): {size: {log: measured seconds}}}."""
    groups = {}
    for p in points:
        groups.setdefault(kind_of(p, metas), {}).setdefault(p["bytes"], {})[p["origin"]] = p["measured_s"]
    return groups


def spread(points, metas):
    """Clusters of one kind measured apart: for every (preset, nodes, GPUs per node, collective) with
    logs of two or more clusters, per size measured by several of them, max/min of their times.
    One prediction can be within 1.25x of all of them only if max/min <= 1.25^2; a size above that
    has a log outside 1.25x of *any* uncalibrated prediction (the suite's floor). Returns rows."""
    rows = []
    for key, by_size in sorted(by_kind(points, metas).items()):
        logs = {o for v in by_size.values() for o in v}
        if len(logs) < 2:
            continue
        for name, sel in REGIMES:
            sizes = [b for b, v in by_size.items() if sel(b) and len(v) >= 2]
            if not sizes:
                continue
            r = [max(by_size[b].values()) / min(by_size[b].values()) for b in sizes]
            rows.append({"group": f"{key[0]} {key[1]}x{key[2]} {key[3]}", "logs": len(logs), "regime": name,
                         "sizes": len(sizes), "median": statistics.median(r), "worst": max(r),
                         "apart": 100.0 * sum(1 for x in r if x > 1.25 ** 2) / len(r)})
    return rows


def by_algorithm(points, metas):
    """Summary rows per (one node or several, algorithm/protocol the prediction ran): which of the
    model's algorithm and protocol pairs the misses come from. The pair is the model's (NCCL's pick as
    p2v predicts it, or the algorithm a log's source forced), not one the log reports."""
    groups = {}
    for p in points:
        scope = "1 node" if metas[p["origin"]]["n_nodes"] == 1 else "nodes"
        groups.setdefault(f"{scope} {p['algo']}/{p.get('proto', '?')}", []).append(p)
    rows = []
    for title, ps in sorted(groups.items()):
        rows += [r for r in summary(ps, title) if r["regime"] != "all"]
    return rows


# The network each preset describes (sim/src/levels.cpp, the presets' descriptions and source lines):
# a log whose '# network:' (as its source states it) is another one is predicted off its preset.
PRESET_NETWORK = {"dgx-a100": "infiniband", "dgx-h100": "infiniband", "p4d": "efa", "p5": "efa",
                  "a3-mega": "tcpxo"}
NETWORKS = set(PRESET_NETWORK.values()) | {"roce", "none"}  # none: one node, no network in the run
CAUSES = ["data rule", "network not the preset's", "logs of one kind disagree", "model"]


def network_of(meta):
    """The first word of a log's '# network:' line ("" without one)."""
    words = meta.get("network", "").split()
    return words[0] if words else ""


def check_networks(metas):
    """Every log states its network and the suite knows its preset's; returns the failures."""
    bad = []
    for path, m in sorted(metas.items()):
        net = network_of(m)
        if net not in NETWORKS:
            bad.append(f"{path}: '# network:' is {net or 'missing'!r}, not one of {', '.join(sorted(NETWORKS))}")
        elif (net == "none") != (m["n_nodes"] == 1):
            bad.append(f"{path}: '# network: {net}' on a run of {m['n_nodes']} node(s)")
        if m.get("preset") not in PRESET_NETWORK:
            bad.append(f"{path}: preset {m.get('preset')!r} has no network in run.py's PRESET_NETWORK")
    return bad


def on_preset_network(meta):
    net = network_of(meta)
    return net == "none" or net == PRESET_NETWORK[meta["preset"]]


def miss_causes(points, metas, factor=1.25):
    """Every point outside `factor` of its measurement, given the first cause that applies, in order:
    the data rule marks it (a glitch of the log), its log ran on another network than its preset
    describes, the logs of its kind (preset, shape, collective) disagree at its size by more than
    factor^2 (no single prediction is within `factor` of all of them), else the model. Returns
    {regime: {cause: count}} and {regime: points}."""
    apart = set()
    for key, by_size in by_kind(points, metas).items():
        for b, logs in by_size.items():
            if len(logs) >= 2 and max(logs.values()) / min(logs.values()) > factor ** 2:
                apart.add((key, b))
    counts, totals = {}, {}
    for name, sel in REGIMES:
        ps = [p for p in points if sel(p["bytes"])]
        totals[name] = len(ps)
        c = counts[name] = {k: 0 for k in CAUSES}
        for p in ps:
            if within([p["predicted_s"] / p["measured_s"]], factor):
                continue
            if p["inconsistent"]:
                c["data rule"] += 1
            elif not on_preset_network(metas[p["origin"]]):
                c["network not the preset's"] += 1
            elif (kind_of(p, metas), p["bytes"]) in apart:
                c["logs of one kind disagree"] += 1
            else:
                c["model"] += 1
    return counts, totals


def ceiling(points, metas, factor=1.25):
    """The most any uncalibrated model could reach: per (preset, nodes, GPUs per node, collective,
    size) one prediction, the one within `factor` of as many of that size's measured times as
    possible (a log measured alone is always matched). Returns {regime: (points matched, points)}."""
    sizes = [(b, list(logs.values())) for by_size in by_kind(points, metas).values() for b, logs in by_size.items()]
    out = {}
    for name, sel in REGIMES:
        hit = total = 0
        for b, ms in sizes:
            if not sel(b):
                continue
            total += len(ms)
            # an optimal prediction can be moved to a window edge, measured x factor or / factor
            cands = [x * f for x in ms for f in (1 / factor, factor)]
            hit += max(sum(1 for x in ms if x / factor <= c * (1 + 1e-9) and c <= x * factor * (1 + 1e-9))
                       for c in cands)
        if total:
            out[name] = (hit, total)
    return out


# GPUs per node of the suite's presets (sim/src/preset_devices.cpp: every one describes 8-GPU nodes).
PRESET_NODE_GPUS = 8


def partial_node(meta):
    """A log of a run across nodes on part of each node (fewer GPUs per node than the preset's node: p2v
    gives such a system the NICs of the GPUs in use, docs/simulator.md §2). p2v prints no accuracy line for such a
    system, so its points stay out of the shipped accuracy file."""
    return meta["n_nodes"] > 1 and meta["n_gpus"] < PRESET_NODE_GPUS


def accuracy(points, metas):
    """The uncalibrated accuracy p2v ships (sim/data/fidelity.json): per preset, one node or several,
    and size regime, every point (the data rule's points included: a user's cluster can be as odd)."""
    rows = []
    keyed = {}
    points = [p for p in points if not partial_node(metas[p["origin"]])]
    for p in points:
        m = metas[p["origin"]]
        scope = "one node" if m["n_nodes"] == 1 else "several nodes"
        keyed.setdefault((m["preset"], scope), []).append(p)
    for (preset, scope), ps in sorted(keyed.items()):
        for name, sel in REGIMES:
            sub = [p for p in ps if sel(p["bytes"])]
            if not sub:
                continue
            r = ratios(sub)
            rows.append({"preset": preset, "scope": scope, "regime": name, "points": len(sub),
                         "logs": len({p["origin"] for p in sub}),
                         "nodes": sorted({metas[p["origin"]]["n_nodes"] for p in sub}),
                         "median": round(statistics.median(r), 3),
                         "within_1_25": round(within(r, 1.25) / len(r), 3),
                         "within_2": round(within(r, 2) / len(r), 3),
                         "min": round(r[0], 3), "max": round(r[-1], 3)})
    return {"format": "p2v-fidelity/1",
            "what": "p2v's uncalibrated predictions (the presets as shipped; per log the NCCL version, forced "
                    "algorithm and tuner plugin its source states) against published nccl-tests times: "
                    "predicted / measured per preset, one node or several, and size regime (bytes per GPU), "
                    "runs on whole nodes only; generated by bench/fidelity/run.py --accuracy-json",
            "points": len(points), "logs": len({p["origin"] for p in points}), "rows": rows}


def accuracy_diff(old, new):
    """What differs between two accuracy files (empty: the same)."""
    diffs = []
    if not isinstance(old, dict):
        return ["the file is not a JSON object"]
    for k in ("format", "points", "logs"):
        if old.get(k) != new.get(k):
            diffs.append(f"{k}: file {old.get(k)!r}, suite {new.get(k)!r}")
    key = lambda r: (r.get("preset", "?"), r.get("scope", "?"), r.get("regime", "?"))
    rows = old.get("rows") if isinstance(old, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return diffs + ["rows: not a list of objects"]
    o, n = {key(r): r for r in rows}, {key(r): r for r in new["rows"]}
    for k in sorted(set(o) | set(n)):
        if k not in o or k not in n:
            diffs.append(f"{' / '.join(k)}: {'only in the suite' if k in n else 'only in the file'}")
        elif o[k] != n[k]:
            fields = sorted(set(o[k]) | set(n[k]), key=lambda f: (f not in n[k], f))
            diffs.append(f"{' / '.join(k)}: " + ", ".join(f"{f} {o[k].get(f, '(none)')} -> {n[k].get(f, '(none)')}"
                                                        for f in fields if o[k].get(f) != n[k].get(f)))
    return diffs


def write_whole(path, text):
    """Writes the file whole or not at all (temporary file, fsync, rename)."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; a data file in the repository is readable by all
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def print_summary(rows):
    print(f"  {'set':<26} {'regime':<11} {'n':>4} {'median':>7} {'<=1.25x':>8} {'<=2x':>6} {'worst':>8}  worst at")
    for s in rows:
        print(f"  {s['title']:<26} {s['regime']:<11} {s['n']:>4} {s['median']:>7.2f} {s['in125']:>7.0f}% "
              f"{s['in2']:>5.0f}% {s['worst']:>8.2f}  {s['worst_at']}")


def markdown(rows):
    lines = ["| set | regime | points | median pred/meas | within 1.25x | within 2x | worst |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for s in rows:
        lines.append(f"| {s['title']} | {s['regime']} | {s['n']} | {s['median']:.2f} | {s['in125']:.0f}% | "
                     f"{s['in2']:.0f}% | {s['worst']:.2f} |")
    return "\n".join(lines)


def svg(points_by_system, path, title):
    W, H, L, T, R, B = 640, 560, 70, 40, 170, 60
    allp = [p for ps in points_by_system.values() for p in ps]
    vals = [v for p in allp for v in (p["measured_s"], p["predicted_s"])]
    lo = max(10 ** math.floor(math.log10(min(vals))), 1e-6)  # below 1 us: drawn on the edge
    hi = 10 ** math.ceil(math.log10(max(vals)))
    span = math.log10(hi) - math.log10(lo)
    pw, ph = W - L - R, H - T - B

    def x(v):
        return L + pw * (math.log10(v) - math.log10(lo)) / span

    def y(v):
        return T + ph * (1 - (math.log10(v) - math.log10(lo)) / span)

    def band(f, colour):
        # region between y = x/f and y = x*f, clipped to the plot square
        pts = []
        n = 60
        for i in range(n + 1):
            v = lo * (hi / lo) ** (i / n)
            pts.append((x(v), y(min(max(v * f, lo), hi))))
        for i in range(n, -1, -1):
            v = lo * (hi / lo) ** (i / n)
            pts.append((x(v), y(min(max(v / f, lo), hi))))
        d = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
        return f'<polygon points="{d}" fill="{colour}" stroke="none"/>'

    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L}" y="22" font-size="14">{title}</text>',
         band(2.0, "#eeeeee"), band(1.25, "#d9d9d9"),
         f'<line x1="{x(lo):.1f}" y1="{y(lo):.1f}" x2="{x(hi):.1f}" y2="{y(hi):.1f}" stroke="black" stroke-width="1"/>',
         f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="black"/>']
    e = math.log10(lo)
    while e <= math.log10(hi) + 1e-9:
        v = 10 ** e
        lab = {-6: "1 us", -5: "10 us", -4: "100 us", -3: "1 ms", -2: "10 ms", -1: "100 ms", 0: "1 s", 1: "10 s"}.get(
            round(e), f"1e{round(e)} s")
        o.append(f'<line x1="{x(v):.1f}" y1="{T + ph}" x2="{x(v):.1f}" y2="{T + ph + 5}" stroke="black"/>')
        o.append(f'<text x="{x(v):.1f}" y="{T + ph + 18}" text-anchor="middle">{lab}</text>')
        o.append(f'<line x1="{L - 5}" y1="{y(v):.1f}" x2="{L}" y2="{y(v):.1f}" stroke="black"/>')
        o.append(f'<text x="{L - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{lab}</text>')
        e += 1
    o.append(f'<text x="{L + pw / 2}" y="{H - 15}" text-anchor="middle">measured (nccl-tests, out-of-place)</text>')
    o.append(f'<text x="18" y="{T + ph / 2}" text-anchor="middle" transform="rotate(-90 18 {T + ph / 2})">'
             f'predicted (p2v, preset, uncalibrated)</text>')
    for i, (name, ps) in enumerate(sorted(points_by_system.items())):
        c = colours[i % len(colours)]
        for p in ps:
            px = x(max(p["measured_s"], lo))
            if p["predicted_s"] < lo:  # off the plot: a triangle on the bottom edge
                py = y(lo)
                o.append(f'<polygon points="{px - 3:.1f},{py - 5:.1f} {px + 3:.1f},{py - 5:.1f} {px:.1f},{py:.1f}" '
                         f'fill="{c}"/>')
                continue
            if p.get("inconsistent"):  # the data rule's points: hollow
                o.append(f'<circle cx="{px:.1f}" cy="{y(p["predicted_s"]):.1f}" r="3.2" fill="none" stroke="{c}" '
                         f'stroke-width="1.2"/>')
                continue
            o.append(f'<circle cx="{px:.1f}" cy="{y(p["predicted_s"]):.1f}" r="2.6" fill="{c}" fill-opacity="0.8"/>')
        ly = T + 10 + 18 * i
        o.append(f'<circle cx="{L + pw + 18}" cy="{ly}" r="4" fill="{c}"/>')
        o.append(f'<text x="{L + pw + 28}" y="{ly + 4}">{name} ({len(ps)})</text>')
    ly = T + 10 + 18 * (len(points_by_system) + 1)
    o.append(f'<rect x="{L + pw + 12}" y="{ly - 8}" width="12" height="12" fill="#d9d9d9"/>')
    o.append(f'<text x="{L + pw + 28}" y="{ly + 2}">within 1.25x</text>')
    o.append(f'<rect x="{L + pw + 12}" y="{ly + 10}" width="12" height="12" fill="#eeeeee" stroke="#cccccc"/>')
    o.append(f'<text x="{L + pw + 28}" y="{ly + 20}">within 2x</text>')
    o.append(f'<text x="{L + pw + 12}" y="{ly + 40}">triangles: predicted</text>')
    o.append(f'<text x="{L + pw + 12}" y="{ly + 54}">below 1 us</text>')
    o.append(f'<text x="{L + pw + 12}" y="{ly + 74}">hollow: out-of-place</text>')
    o.append(f'<text x="{L + pw + 12}" y="{ly + 88}">vs in-place &gt; {INCONSISTENT_FACTOR:g}x</text>')
    o.append("</svg>")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(o) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--p2v", required=True, help="the p2v binary")
    ap.add_argument("--data", default=os.path.join(HERE, "data"))
    ap.add_argument("--fast", action="store_true", help="only check that every data file is read (CTest)")
    ap.add_argument("--no-points", action="store_true", help="only the summaries, not every point")
    ap.add_argument("--cv", action="store_true", help="cross-validation (calibrate on part, predict the rest)")
    ap.add_argument("--svg", help="write the scatter plot here")
    ap.add_argument("--markdown", help="write the summary tables (markdown) here")
    ap.add_argument("--accuracy-json", help="write the uncalibrated accuracy per preset, one node or several, and "
                    "size regime (sim/data/fidelity.json, which p2v prints beside its predictions) here")
    ap.add_argument("--check-accuracy-json", help="compare the uncalibrated accuracy with this file (CTest): "
                    "fail, naming what differs, if the model or the data changed without regenerating it")
    a = ap.parse_args()
    if a.fast and (a.accuracy_json or a.check_accuracy_json or a.cv or a.svg or a.markdown):
        ap.error("--fast only reads the data files; it cannot be combined with --accuracy-json, "
                 "--check-accuracy-json, --cv, --svg or --markdown")

    files = data_files(a.data)
    if not files:
        raise SystemExit(f"fidelity: no data files under {a.data}")
    by_system, failures = {}, []
    metas = {}
    for path in files:
        meta = read_meta(path)
        metas[path] = meta
        if "preset" not in meta:
            failures.append(f"{path}: no '# preset:' line")
            continue
        try:
            pts = predict(a.p2v, path, meta)
        except RuntimeError as e:
            failures.append(str(e))
            continue
        _, rows = row_lines(path)
        if len(pts) != len(rows):
            failures.append(f"{path}: p2v read {len(pts)} points, the file has {len(rows)} table rows")
        by_system.setdefault(os.path.basename(os.path.dirname(path)), []).extend(pts)
    bad_meta = check_networks(metas)
    if a.fast:
        for f in failures + bad_meta:
            print("FAIL", f)
        n = sum(len(v) for v in by_system.values())
        print(f"fidelity --fast: {len(files) - len(failures)}/{len(files)} data files read, {n} points")
        return 1 if failures or bad_meta else 0
    if failures or bad_meta:
        for f in failures + bad_meta:
            print("FAIL", f, file=sys.stderr)
        return 1

    allpts = [p for ps in by_system.values() for p in ps]
    marked = mark_inconsistent(allpts)
    if not a.no_points:
        print("predicted vs measured per point (uncalibrated presets; '!' = out-of-place and in-place times "
              f"differ by more than {INCONSISTENT_FACTOR:g}x, the data rule):")
        for sysname, ps in sorted(by_system.items()):
            for p in ps:
                print(f"{'!' if p['inconsistent'] else ' '} {sysname:<9} {os.path.relpath(p['origin'], a.data)}:"
                      f"{p['line']:<4} {p['collective']:<10} "
                      f"{p['bytes']:>12.0f} B  measured {p['measured_s'] * 1e6:>10.1f} us  predicted "
                      f"{p['predicted_s'] * 1e6:>10.1f} us  ratio {p['predicted_s'] / p['measured_s']:6.2f}  "
                      f"{p['algo']}/{p.get('proto', '?')}")
    rows = summary(allpts, "all systems (uncalibrated)")
    for sysname, ps in sorted(by_system.items()):
        rows += summary(ps, f"{sysname} (uncalibrated)")
    print("summary: predicted / measured, every point")
    print_summary(rows)
    clean = [p for p in allpts if not p["inconsistent"]]
    rule_rows = summary(clean, "all systems, data rule")
    for sysname, ps in sorted(by_system.items()):
        if any(p["inconsistent"] for p in ps):
            rule_rows += summary([p for p in ps if not p["inconsistent"]], f"{sysname}, data rule")
    print(f"data rule: {len(marked)} points whose out-of-place and in-place times differ by more than "
          f"{INCONSISTENT_FACTOR:g}x, or whose out-of-place time is more than {INCONSISTENT_FACTOR:g}x the next "
          f"size's, left out:")
    for p in marked:
        oop, ip = oop_ip_times(p["origin"])[p["line"]]
        print(f"  {os.path.relpath(p['origin'], a.data)}:{p['line']} {p['bytes']:.0f} B: out-of-place {oop:g} us, "
              f"in-place {ip:g} us, predicted {p['predicted_s'] * 1e6:.1f} us")
    print("summary: predicted / measured, without those points")
    print_summary(rule_rows)

    sp = spread(allpts, metas)
    if sp:
        print("spread: clusters of one kind (preset, nodes x GPUs, collective) measured by several logs; per size "
              "measured by two or more, max/min of their times ('apart': > 1.25^2, so no single prediction is within "
              "1.25x of all of them)")
        print(f"  {'group':<32} {'logs':>4} {'regime':<11} {'sizes':>5} {'median':>7} {'worst':>6} {'apart':>6}")
        for r in sp:
            print(f"  {r['group']:<32} {r['logs']:>4} {r['regime']:<11} {r['sizes']:>5} {r['median']:>7.2f} "
                  f"{r['worst']:>6.2f} {r['apart']:>5.0f}%")
    print("by algorithm: predicted / measured, every point, per one node or several and the algorithm/protocol "
          "the prediction ran (NCCL's pick as p2v predicts it, or a forced one)")
    print_summary(by_algorithm(allpts, metas))
    ceil = ceiling(allpts, metas)
    print("ceiling: the share within 1.25x that one prediction per (preset, shape, collective, size) could reach "
          "at best, given how the logs of one kind disagree: " +
          ", ".join(f"{name} {100.0 * h / t:.0f}% ({h}/{t})" for name, (h, t) in ceil.items()))
    own = [p for p in allpts if on_preset_network(metas[p["origin"]])]
    own_rows = summary(own, "on the preset's network")
    print(f"summary: predicted / measured, the {len(own)} points of logs run on their preset's network (or one "
          f"node), without the {len(allpts) - len(own)} of logs on another (RoCE under an InfiniBand preset)")
    print_summary(own_rows)
    counts, totals = miss_causes(allpts, metas)
    print("misses by cause: points outside 1.25x, each counted once, under the first cause that applies "
          "(data rule; log on another network than its preset's; logs of its kind more than 1.25^2 apart at "
          "its size; else the model), and the share within 1.25x were the model's own misses all fixed")
    print(f"  {'regime':<11} {'points':>6} " + " ".join(f"{c:>26}" for c in CAUSES) + f" {'if model fixed':>15}")
    for name, _ in REGIMES:
        c = counts[name]
        best = 100.0 * (totals[name] - sum(c.values()) + c["model"]) / totals[name]
        print(f"  {name:<11} {totals[name]:>6} " + " ".join(f"{c[k]:>26}" for k in CAUSES) + f" {best:>14.0f}%")

    if a.accuracy_json or a.check_accuracy_json:
        acc = accuracy(allpts, metas)
        if a.accuracy_json:
            head = {k: v for k, v in acc.items() if k != "rows"}
            text = json.dumps(head, sort_keys=True)[:-1] + ', "rows": [\n' + ",\n".join(
                "  " + json.dumps(r, sort_keys=True) for r in acc["rows"]) + "\n]}\n"
            write_whole(a.accuracy_json, text)
            print(f"wrote {a.accuracy_json}")
        if a.check_accuracy_json:
            try:
                with open(a.check_accuracy_json, encoding="utf-8") as f:
                    shipped = json.load(f)
            except (OSError, ValueError) as e:
                print(f"FAIL {a.check_accuracy_json}: cannot be read: {e}")
                return 1
            diffs = accuracy_diff(shipped, acc)
            if diffs:
                print(f"FAIL {a.check_accuracy_json} is not what the suite gives now (regenerate it: "
                      f"bench/fidelity/run.py --p2v P2V --no-points --accuracy-json {a.check_accuracy_json}):")
                for d in diffs[:20]:
                    print("  " + d)
                return 1
            print(f"{a.check_accuracy_json}: matches the suite ({acc['points']} points)")

    cv_rows = []
    if a.cv:
        with tempfile.TemporaryDirectory() as tmp:
            half = []
            for path in files:
                lines, rws = row_lines(path)
                if len(rws) < 4:
                    continue
                meta = metas[path]
                train, test = os.path.join(tmp, "train.txt"), os.path.join(tmp, "test.txt")
                write_subset(lines, set(rws[1::2]), train)
                kept = write_subset(lines, set(rws[0::2]), test)
                fitted = os.path.join(tmp, "fitted.json")
                try:
                    calibrate(a.p2v, [train], meta, fitted)
                    pts = predict(a.p2v, test, meta, system=fitted)
                except RuntimeError as e:
                    print("FAIL", e, file=sys.stderr)
                    return 1
                for p in pts:  # back to the data file's own line numbers
                    p["origin"], p["line"] = path, kept[p["line"] - 1] + 1
                half += pts
            cv_rows += summary(half, "half sizes (cv)")
            mark_inconsistent(half)  # the data rule on the predicted half (calibration used every point)
            cv_rows += summary([p for p in half if not p["inconsistent"]], "half sizes (cv), data rule")
            for sysname in sorted({os.path.basename(os.path.dirname(p["origin"])) for p in half}):
                sub = [p for p in half if os.path.basename(os.path.dirname(p["origin"])) == sysname]
                cv_rows += [r for r in summary(sub, f"{sysname} half sizes (cv)") if r["regime"] != "all"]
            # One collective -> the others of the same cluster: logs of one source (the first word of
            # their '# source:' line, the log file or page they were copied from) and one shape. Logs
            # of one preset from different sources are different clusters (the A3 Mega all-reduce and
            # all-gather logs), whose disagreement a calibration cannot and should not absorb.
            groups = {}
            for path in files:
                m = metas[path]
                key = (os.path.dirname(path), cluster_of(m, path), m["n_nodes"], m["n_gpus"])
                groups.setdefault(key, []).append(path)
            other = []
            for key, paths in sorted(groups.items()):
                colls = {}
                for pth in paths:
                    c = predict(a.p2v, pth, metas[pth])[0]["collective"]
                    colls.setdefault(c, []).append(pth)
                if len(colls) < 2:
                    continue
                for c, train_paths in sorted(colls.items()):
                    fitted = os.path.join(tmp, "fitted.json")
                    calibrate(a.p2v, train_paths, metas[train_paths[0]], fitted)
                    for c2, test_paths in colls.items():
                        if c2 == c:
                            continue
                        for tp in test_paths:
                            other += predict(a.p2v, tp, metas[tp], system=fitted)
            if other:
                cv_rows += summary(other, "other collective (cv)")
                if mark_inconsistent(other):
                    cv_rows += summary([p for p in other if not p["inconsistent"]], "other collective (cv), data rule")
            else:
                print("cross-validation across collectives: no cluster (source and shape) has logs of two collectives")
        print("cross-validation: predicted / measured on points not used to calibrate")
        print_summary(cv_rows)

    if a.svg:
        svg(by_system, a.svg, "p2v predicted vs published nccl-tests times")
        print(f"wrote {a.svg}")
    if a.markdown:
        with open(a.markdown, "w", encoding="utf-8") as f:
            f.write(markdown(rows) + "\n")
            f.write("\n" + markdown(rule_rows) + "\n")
            if cv_rows:
                f.write("\n" + markdown(cv_rows) + "\n")
        print(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
