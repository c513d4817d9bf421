#!/usr/bin/env python3
"""The fidelity suite's data rule (bench/fidelity/run.py glitches, docs/simulator.md §6.1) on a
made-up nccl-tests table: a size whose out-of-place and in-place times are more than 2x apart, and
one whose out-of-place time is more than 2x the next size's, are left out; nothing else is. And the
suite's ceiling (run.ceiling, §6) on made-up measurements of one kind, and its table by algorithm
(run.by_algorithm), the accuracy file's whole-node rule (run.accuracy), the misses by cause
(run.miss_causes) and the '# network:' check (run.check_networks) on made-up predictions."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "fidelity"))
import run  # noqa: E402

ROWS = [  # size, out-of-place us, in-place us
    (1024, 30.0, 30.5),
    (2048, 70.0, 31.0),   # 2.26x apart: left out
    (4096, 31.0, 31.2),
    (8192, 80.0, 60.0),   # 1.33x apart, but 2.35x the next size's out-of-place time: left out
    (16384, 34.0, 34.5),
    (32768, 60.0, 40.0),  # 1.5x apart, 1.58x the next size's: kept
    (65536, 38.0, 38.0),
    (131072, 39.0, 80.0),  # in-place 2.05x out-of-place: left out
]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "log.txt")
        lines = ["# nThread 1 nGpus 1 minBytes 1024 maxBytes 131072 step: 2(factor)",
                 "#       size         count      type   redop    root     time   algbw   busbw #wrong"
                 "     time   algbw   busbw #wrong",
                 "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
                 "            (us)  (GB/s)  (GB/s)"]
        expected = set()
        for size, oop, ip in ROWS:
            lines.append(f"{size:>12} {size // 4:>13}     float     sum      -1 {oop:8.2f}    0.00    0.00      0"
                         f" {ip:8.2f}    0.00    0.00      0")
            if size in (2048, 8192, 131072):
                expected.add(len(lines))  # 1-based line number
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        got = run.glitches(path)
        if got != expected:
            print(f"FAIL: data rule left out lines {sorted(got)}, expected {sorted(expected)}")
            return 1
        points = [{"origin": path, "line": ln} for ln in sorted(run.oop_ip_times(path))]
        marked = run.mark_inconsistent(points)
        if {p["line"] for p in marked} != expected or len(points) != len(ROWS):
            print("FAIL: mark_inconsistent disagrees with glitches")
            return 1
    print(f"data rule: {len(expected)} of {len(ROWS)} rows left out, as expected")
    # The ceiling (run.ceiling): logs of one kind 1.5x apart can both be within 1.25x of one
    # prediction (1.5 <= 1.25^2), 2x apart cannot; a third log at 1.1x joins the first pair.
    metas = {o: {"n_nodes": 2, "n_gpus": 8} for o in ("d/a", "d/b", "d/c")}
    def pts(times):
        return [{"origin": o, "collective": "AllReduce", "bytes": 1024.0, "measured_s": t} for o, t in times]
    cases = [([("d/a", 1.0), ("d/b", 1.5)], (2, 2)), ([("d/a", 1.0), ("d/b", 2.0)], (1, 2)),
             ([("d/a", 1.0), ("d/b", 1.5), ("d/c", 1.1)], (3, 3)), ([("d/a", 1.0), ("d/b", 2.0), ("d/c", 2.2)], (2, 3))]
    for times, want in cases:
        got = run.ceiling(pts(times), metas)["<= 1 MiB"]
        if got != want:
            print(f"FAIL: ceiling of {times}: {got}, expected {want}")
            return 1
    print("ceiling: as expected on 4 made-up cases")
    # By algorithm (run.by_algorithm): points grouped by one node or several and the pair the
    # prediction ran, per size regime; the "all" row left out.
    metas = {"d/one": {"n_nodes": 1, "n_gpus": 8}, "d/two": {"n_nodes": 2, "n_gpus": 8}}
    mk = [("d/one", 1024.0, 1.0, "ring", "LL"), ("d/one", 2048.0, 1.5, "ring", "LL"),
          ("d/two", 1024.0, 1.1, "tree", "LL"), ("d/two", 2.0 ** 28, 0.4, "ring", "Simple"),
          ("d/two", 2.0 ** 29, 1.0, "ring", "Simple")]
    pts2 = [{"origin": o, "line": i, "bytes": b, "measured_s": 1.0, "predicted_s": r, "algo": a, "proto": pr}
            for i, (o, b, r, a, pr) in enumerate(mk)]
    rows = {(r["title"], r["regime"]): (r["n"], round(r["in125"])) for r in run.by_algorithm(pts2, metas)}
    want = {("1 node ring/LL", "<= 1 MiB"): (2, 50), ("nodes tree/LL", "<= 1 MiB"): (1, 100),
            ("nodes ring/Simple", ">= 128 MiB"): (2, 50)}
    if rows != want:
        print(f"FAIL: by_algorithm gave {rows}, expected {want}")
        return 1
    print("by algorithm: as expected on 5 made-up points")
    # The accuracy file (run.accuracy) holds runs on whole nodes only: a log on 1 GPU of each node
    # (p2v prints no accuracy line for such a system) is left out of its rows and counts.
    metas = {"d/whole": {"n_nodes": 2, "n_gpus": 8, "preset": "p5"},
             "d/part": {"n_nodes": 2, "n_gpus": 1, "preset": "p5"}}
    pts3 = [{"origin": o, "line": i, "bytes": 1024.0, "measured_s": 1.0, "predicted_s": r}
            for i, (o, r) in enumerate([("d/whole", 1.0), ("d/part", 0.3), ("d/part", 0.3)])]
    acc = run.accuracy(pts3, metas)
    if acc["points"] != 1 or acc["logs"] != 1 or [r["points"] for r in acc["rows"]] != [1] \
            or acc["rows"][0]["within_1_25"] != 1.0:
        print(f"FAIL: accuracy with a partial-node log gave {acc}")
        return 1
    print("accuracy: runs on part of each node left out")
    # Misses by cause (run.miss_causes): each point outside 1.25x counted once, under the first cause
    # that applies: data rule, a log on another network than its preset's, logs of its kind more than
    # 1.25^2 apart at its size, else the model. Points within 1.25x are no miss whatever their log.
    metas = {"p5/efa_a": {"n_nodes": 2, "n_gpus": 8, "preset": "p5", "network": "efa"},
             "p5/efa_b": {"n_nodes": 2, "n_gpus": 8, "preset": "p5", "network": "efa"},
             "dgx-h100/roce": {"n_nodes": 2, "n_gpus": 8, "preset": "dgx-h100", "network": "roce"},
             "dgx-h100/one": {"n_nodes": 1, "n_gpus": 8, "preset": "dgx-h100", "network": "none"}}
    mk = [  # origin, bytes, measured, predicted, inconsistent -> expected cause (None: within 1.25x)
        ("p5/efa_a", 1024.0, 1.0, 1.2, False, None),
        ("p5/efa_a", 2048.0, 1.0, 3.0, True, "data rule"),              # also apart below: rule first
        ("p5/efa_b", 2048.0, 3.0, 3.0, False, None),
        ("dgx-h100/roce", 1024.0, 1.0, 0.5, False, "network not the preset's"),
        ("p5/efa_a", 4096.0, 1.0, 0.5, False, "logs of one kind disagree"),  # b measures 2.0: 2x apart
        ("p5/efa_b", 4096.0, 2.0, 0.5, False, "logs of one kind disagree"),
        ("p5/efa_a", 8192.0, 1.0, 0.7, False, "model"),                 # b measures 1.4: 1.4x apart
        ("p5/efa_b", 8192.0, 1.4, 1.2, False, None),
        ("dgx-h100/one", 2.0 ** 28, 1.0, 1.3, False, "model"),          # one node: no network needed
    ]
    pts4 = [{"origin": o, "line": i, "bytes": b, "collective": "AllReduce", "measured_s": m, "predicted_s": pr,
             "inconsistent": bad} for i, (o, b, m, pr, bad, _) in enumerate(mk)]
    counts, totals = run.miss_causes(pts4, metas)
    want = {name: {c: 0 for c in run.CAUSES} for name, _ in run.REGIMES}
    for _, b, _, _, _, cause in mk:
        if cause:
            want["<= 1 MiB" if b <= 2 ** 20 else ">= 128 MiB"][cause] += 1
    if counts != want or totals != {"<= 1 MiB": 8, "1-64 MiB": 0, ">= 128 MiB": 1}:
        print(f"FAIL: miss_causes gave {counts} of {totals}, expected {want}")
        return 1
    bad = run.check_networks({"d/x": {"n_nodes": 2, "preset": "p5"},
                              "d/y": {"n_nodes": 1, "preset": "p5", "network": "efa"},
                              "d/z": {"n_nodes": 2, "preset": "h100", "network": "infiniband"},
                              "d/ok": {"n_nodes": 2, "preset": "p5", "network": "efa  (32 x 100 Gb/s)"}})
    if len(bad) != 3 or any("d/ok" in b for b in bad) or not all(any(k in b for b in bad) for k in ("d/x", "d/y", "d/z")):
        print(f"FAIL: check_networks gave {bad}")
        return 1
    print("misses by cause and the network annotations: as expected on made-up points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
