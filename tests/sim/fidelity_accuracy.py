#!/usr/bin/env python3
"""CTest fidelity_accuracy: the accuracy numbers p2v ships (sim/data/fidelity.json, printed beside a
preset's predictions) are what the fidelity suite gives with this build, and the check notices a
file that is not: a copy with one row's median changed and another row's extra field must fail,
naming both."""
import json
import os
import subprocess
import sys
import tempfile

p2v, source = sys.argv[1], sys.argv[2]
run = [sys.executable, os.path.join(source, "bench", "fidelity", "run.py"), "--p2v", p2v, "--no-points"]
shipped = os.path.join(source, "sim", "data", "fidelity.json")

ok = subprocess.run(run + ["--check-accuracy-json", shipped], capture_output=True, text=True)
if ok.returncode != 0 or "matches the suite" not in ok.stdout:
    print(ok.stdout[-3000:], ok.stderr[-2000:])
    sys.exit(f"fidelity_accuracy: {shipped} does not match the suite (exit {ok.returncode})")

with open(shipped, encoding="utf-8") as f:
    acc = json.load(f)
row = acc["rows"][0]
row["median"] = round(row["median"] + 0.01, 3)
other = acc["rows"][1]
other["mean"] = 1.0  # a field the suite does not write
with tempfile.TemporaryDirectory() as tmp:
    changed = os.path.join(tmp, "fidelity.json")
    with open(changed, "w", encoding="utf-8") as f:
        json.dump(acc, f)
    bad = subprocess.run(run + ["--check-accuracy-json", changed], capture_output=True, text=True)
name = f"{row['preset']} / {row['scope']} / {row['regime']}: median"
extra = f"{other['preset']} / {other['scope']} / {other['regime']}: mean 1.0 -> (none)"
if bad.returncode != 1 or name not in bad.stdout or extra not in bad.stdout:
    print(bad.stdout[-3000:], bad.stderr[-2000:])
    sys.exit(f"fidelity_accuracy: the changed rows ({name}; {extra}) were not reported (exit {bad.returncode})")
print(f"fidelity_accuracy: {shipped} matches the suite; a changed row is reported")
