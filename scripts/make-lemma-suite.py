#!/usr/bin/env python3
"""Regenerates examples/suites/lemmas.json: expands each base case into one case per
parallelism matrix and records, as "expect_fail", the checks that fail under our reading of the
semantics (see README, "Where the theorem fails"). Run after a semantic change, then review the
diff: every expected failure must be the documented axis-major contiguity gap."""
import json, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
P2V = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bin", "p2v")
REASON = ("axis-major order: (c) and uncollapsed (d) cannot form a group spanning reduction "
          "factors that are not adjacent in their order (README: Where the theorem fails)")
BASE = [
    # The paper's running example (Fig. 2): every placement of [4 4], reducing shards or data.
    {"name": "fig2-shards", "system": "../systems/fig2a.json", "axes": [4, 4], "reduce": [1], "max_size": 4},
    {"name": "fig2-data", "system": "../systems/fig2a.json", "axes": [4, 4], "reduce": [0], "max_size": 4},
    # A 3x3 example in the shape of Table 1 (3 axes x 3 levels), scaled to factors of 2.
    {"name": "3x3", "system": "x=2,y=4,z=2", "axes": [2, 2, 4], "reduce": [0, 2], "max_size": 4},
    # The paper's configurations.
    {"name": "a100-2node", "system": "../systems/a100-2node.json", "axes": [2, 16], "reduce": [0], "max_size": 4},
    {"name": "a100-4node-r0", "system": "../systems/a100-4node.json", "axes": [4, 16], "reduce": [0], "max_size": 4},
    {"name": "a100-4node-r1", "system": "../systems/a100-4node.json", "axes": [4, 16], "reduce": [1], "max_size": 4},
    {"name": "v100-4node-2x2x8", "system": "../systems/v100-4node.json", "axes": [2, 2, 8], "reduce": [0, 2], "max_size": 3},
    # Depth 3-4 with factors of 1 in odd places.
    {"name": "depth3-ones", "system": "a=2,b=1,c=4", "axes": [2, 4], "reduce": [1], "max_size": 4},
    {"name": "depth4-ones", "system": "a=1,b=2,c=1,d=4", "axes": [4, 2], "reduce": [0], "max_size": 4},
    {"name": "depth4-mixed", "system": "a=2,b=2,c=1,d=2", "axes": [2, 2, 2], "reduce": [0, 2], "max_size": 3},
    # B.7's converse counterexample shape: a last axis of 1s.
    {"name": "b7-shape", "system": "a=2,b=2,c=2,d=2", "axes": [2, 2, 4, 1], "reduce": [2],
     "matrix": [[2, 1, 1, 1], [1, 2, 1, 1], [1, 1, 2, 2], [1, 1, 1, 1]], "max_size": 3},
    # The minimal witness: 2 nodes x 4 GPUs, both axes reduced.
    {"name": "minimal-witness", "system": "node=2,gpu=4", "axes": [2, 4], "reduce": [0, 1],
     "matrix": [[1, 2], [2, 2]], "max_size": 2},
]

out = []
suite_dir = os.path.join(ROOT, "examples", "suites")
for case in BASE:
    tmp = os.path.join(suite_dir, ".tmp-one.json")
    with open(tmp, "w") as f:
        json.dump([case], f)
    r = subprocess.run([P2V, "prove", "--suite", tmp, "--json"], capture_output=True, text=True)
    os.remove(tmp)
    if r.returncode not in (0, 1):
        sys.exit(f"{case['name']}: p2v prove failed: {r.stderr}")
    for res in json.loads(r.stdout)["cases"]:
        c = dict(case)
        c["matrix"] = res["matrix"]
        fails = sorted(ch["id"] for ch in res["checks"] if ch["status"] == "fails")
        bad = [f for f in fails if not (f.startswith("thm:") or f == "B.7" or f.endswith("b->c"))]
        if bad:
            sys.exit(f"{case['name']} {res['matrix']}: unexpected failures {bad}")
        if any(ch["status"] == "unknown" for ch in res["checks"]):
            sys.exit(f"{case['name']} {res['matrix']}: unknown answers")
        if fails:
            c["expect_fail"] = {f: REASON for f in fails}
        if len(json.loads(r.stdout)["cases"]) > 1:
            c["name"] = f"{case['name']}-" + "-".join("".join(map(str, row)) for row in res["matrix"])
        out.append(c)

with open(os.path.join(suite_dir, "lemmas.json"), "w") as f:
    f.write("[\n" + ",\n".join("  " + json.dumps(c) for c in out) + "\n]\n")
print(f"wrote {len(out)} cases; {sum('expect_fail' in c for c in out)} with documented failures")
