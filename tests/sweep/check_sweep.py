#!/usr/bin/env python3
"""Checks a sweep's --json (p2v-simulate-sweep, p2v-explore-sweep, p2v-step-sweep) against its own
rows: sizes ascending; per size the winner is the fastest entry; the crossover ranges cover every
size in order, each range's sizes share its winner, neighbouring ranges differ; speedup bounds
match the rows; algbw = bytes / time / 1e9 and busbw = algbw * 2(n-1)/n (nccl-tests' AllReduce).
Usage: check_sweep.py FILE simulate|explore|step [--min-changes K]"""
import json
import math
import sys


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def main():
    path, kind = sys.argv[1], sys.argv[2]
    min_changes = int(sys.argv[sys.argv.index("--min-changes") + 1]) if "--min-changes" in sys.argv else 0
    j = json.load(open(path))
    assert j["format"] == f"p2v-{kind}-sweep", j["format"]
    assert j["version"] == 1
    rows = j["sizes"]
    key = "bucket_bytes" if kind == "step" else "bytes"
    sizes = [r[key] for r in rows]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes), "sizes not ascending"
    winners, speedups = [], []
    for r in rows:
        if kind == "simulate":
            n = j["group_size"]
            assert close(j["busbw_factor"], 2 * (n - 1) / n)
            res = r["results"]
            best = min(res, key=lambda m: m["best"]["time_s"] if m["best"] else m["allreduce_s"])
            assert best["matrix"] == r["best_matrix"], "best_matrix is not the fastest"
            for m in res:
                assert close(m["allreduce_algbw_GBps"], r["bytes"] / m["allreduce_s"] / 1e9), "algbw"
                assert close(m["allreduce_busbw_GBps"], m["allreduce_algbw_GBps"] * j["busbw_factor"]), "busbw"
                if m["best"]:
                    b = m["best"]
                    assert b["time_s"] <= m["allreduce_s"] * (1 + 1e-12), "best slower than the AllReduce"
                    assert close(b["algbw_GBps"], r["bytes"] / b["time_s"] / 1e9), "algbw"
                    assert close(b["busbw_GBps"], b["algbw_GBps"] * j["busbw_factor"]), "busbw"
            prog = best["best"]["program"] if best["best"] else "-"
            label = prog if len(res) == 1 else "{} {}".format(
                " ".join("[" + " ".join(map(str, row)) + "]" for row in best["matrix"]).join("[]"), prog)
            winners.append(label)
            speedups.append(best["speedup"])
        elif kind == "explore":
            res = r["results"]
            best = min(res, key=lambda m: m["total_s"])
            assert best["matrix"] == r["best_matrix"]
            winners.append(" ".join("[" + " ".join(map(str, row)) + "]" for row in best["matrix"]).join("[]"))
            speedups.append(best["speedup"])
        else:
            winners.append(" | ".join(r["chosen_programs"]))
            speedups.append(r["fixed_step_s"] / r["chosen_step_s"])
    cross = j["crossover"]
    assert len(cross) >= 1 + min_changes, f"expected at least {min_changes} change(s), got {len(cross) - 1}"
    i = 0
    for k, c in enumerate(cross):
        assert c["from_bytes"] == sizes[i], "a range does not start where the previous ended"
        if k:
            assert c["best"] != cross[k - 1]["best"], "neighbouring ranges have the same winner"
        lo = hi = None
        while i < len(sizes) and sizes[i] <= c["to_bytes"]:
            assert winners[i] == c["best"], f"size {sizes[i]}: winner {winners[i]!r} is not {c['best']!r}"
            lo = speedups[i] if lo is None else min(lo, speedups[i])
            hi = speedups[i] if hi is None else max(hi, speedups[i])
            i += 1
        assert close(lo, c["speedup_min"]) and close(hi, c["speedup_max"]), "speedup range"
    assert i == len(sizes), "the ranges do not cover every size"
    print(f"ok   {path.split('/')[-1]}: {len(sizes)} sizes, {len(cross)} range(s) checked")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL {sys.argv[1]}: {e}")
        sys.exit(1)
