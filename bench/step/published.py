#!/usr/bin/python3
"""docs/step.md, "Checked against published step times": each row fits `p2v step`'s compute to one
published throughput of the model file (--throughput FIT) and predicts another published run
(TARGET) of the same model, precision and batch; prints predicted / published step time.
The published numbers and their sources are the model files' "throughput" entries.
Run from the repository root: /usr/bin/python3 bench/step/published.py [build]"""
import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
P2V = os.path.join(ROOT, sys.argv[1] if len(sys.argv) > 1 else "build", "bin", "p2v")
N8_A100 = ["--system", "node=1,gpu=8", "--preset", "a100", "--axes", "8"]
N8_V100 = ["--system", "node=1,gpu=8", "--preset", "v100", "--axes", "8"]
OCI = ["--system", os.path.join(ROOT, "examples/systems/a100-oci-2node.json"), "--axes", "16"]
ROWS = [  # model, fitted to, predicts, system
    ("resnet50", "dle-a100-tf32-1gpu", "dle-a100-tf32-8gpu", N8_A100),
    ("resnet50", "dle-a100-amp-1gpu", "dle-a100-amp-8gpu", N8_A100),
    ("resnet50", "dle-v100-fp32-1gpu", "dle-v100-fp32-8gpu", N8_V100),
    ("resnet50", "dle-v100-amp-1gpu", "dle-v100-amp-8gpu", N8_V100),
    ("resnet50", "horovod-oci-a100-8gpu", "horovod-oci-a100-16gpu", OCI),
    ("resnet50", "dle-a100-tf32-1gpu", "horovod-oci-a100-8gpu", N8_A100),
    ("bert-large", "dle-a100-tf32-1gpu", "dle-a100-tf32-8gpu", N8_A100),
    ("bert-large", "dle-a100-tf32-1gpu", "dle-a100-tf32-16gpu", OCI),
    ("bert-large", "dle-a100-amp-1gpu", "dle-a100-amp-8gpu", N8_A100),
]


def main():
    print("| model | fitted to | predicts | batch | published ms | predicted ms | pred/pub |")
    print("|---|---|---|---|---|---|---|")
    for model, fit, target, system in ROWS:
        path = os.path.join(ROOT, "examples/models", model + ".json")
        entries = {t["id"]: t for t in json.load(open(path))["throughput"]}
        t = entries[target]
        published = t["batch"] / (t["samples_per_s"] / t["gpus"])
        cmd = [P2V, "step", "--json", "--no-choose", "--model", path, "--throughput", fit, "--batch",
               str(t["batch"])] + system
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)}: {r.stdout}{r.stderr}")
        predicted = json.loads(r.stdout)["step_s"]
        print(f"| {model} | {fit} | {target} | {t['batch']} | {published * 1e3:.2f} | {predicted * 1e3:.2f} | "
              f"{predicted / published:.2f} |")


if __name__ == "__main__":
    main()
