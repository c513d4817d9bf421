#!/usr/bin/python3
"""The gains table of docs/step.md: `p2v step --json` on every bundled model and preset,
DDP and ZeRO; the chosen buckets and programs (DP) against the default (25 MB buckets, one
AllReduce each; ZeRO: one ReduceScatter and one AllGather each), both at their best placement.
Usage: /usr/bin/python3 bench/step/gains.py [build-dir]   (prints a Markdown table)"""
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
P2V = os.path.join(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"), "bin", "p2v")
MODELS = ["resnet50", "vgg16", "bert-base", "bert-large", "gpt-1.3b"]
PRESETS = [("a100-4node", "4,16", "0"), ("a100-4node", "4,16", "1"), ("v100-4node", "32", "0"),
           ("titanx-16node", "16", "0"), ("g4dn-4node", "16", "0"), ("g4dn-4node", "4,4", "1")]


def ms(s):
    return "%.2f" % (1e3 * s)


print("| model | system | axes / reduce | mode | default step ms (exposed) | chosen step ms (exposed) | gain | "
      "chosen buckets | AutoSync max() ms |")
print("|---|---|---|---|---|---|---|---|---|")
for m in MODELS:
    for sysname, axes, red in PRESETS:
        for mode in ("ddp", "zero"):
            cmd = [P2V, "step", "--json", "--model", os.path.join(ROOT, "examples/models", m + ".json"), "--system",
                   os.path.join(ROOT, "examples/systems", sysname + ".json"), "--axes", axes, "--reduce", red,
                   "--mode", mode]
            r = subprocess.run(cmd, capture_output=True, text=True)
            row = f"| {m} | {sysname} | {axes} / {red} | {mode} |"
            if r.returncode != 0:
                msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"
                why = "does not fit in device memory" if "needs" in msg else msg
                print(row + f" {why} | | | | |")
                continue
            j = json.loads(r.stdout)
            # Default: best placement of the default schedule; chosen: best placement of the DP.
            pl = j["placements"]
            d = min(pl, key=lambda p: p["fixed_step_s"])
            c = j["chosen"]
            print(row + f" {ms(d['fixed_step_s'])} ({ms(d['fixed_step_s'] - c['compute_s'])}) |"
                  f" {ms(c['step_s'])} ({ms(c['exposed_comm_s'])}) | {d['fixed_step_s'] / c['step_s']:.3f}x |"
                  f" {len(c['buckets'])} | {ms(j['autosync_s'])} |")
