#!/usr/bin/env bash
# Whole-process timing (hyperfine, median) and peak memory (GNU time) of `p2v synth` on the
# issue's 64-device three-level hierarchy, plus the paper configs. Usage: bench/synth_process.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
P2V=${1:-build}/bin/p2v
CASES=(
  "--system a=4,b=4,c=4 --axes 64 --reduce 0"
  "--system examples/systems/a100-4node.json --axes 4,16 --reduce 0"
  "--system examples/systems/a100-4node.json --axes 4,16 --reduce 1"
  "--system examples/systems/a100-4node.json --axes 16,2,2 --reduce 0,2"
  "--system examples/systems/v100-4node.json --axes 2,2,8 --reduce 0,2"
)
for c in "${CASES[@]}"; do
  echo "== p2v synth $c"
  hyperfine -N --warmup 5 --runs 50 --export-json /tmp/p2v_hf.json "$P2V synth $c" >/dev/null
  python3 -c "import json;r=json.load(open('/tmp/p2v_hf.json'))['results'][0];print(f\"median {r['median']*1e3:.2f} ms  min {r['min']*1e3:.2f} ms  mean {r['mean']*1e3:.2f} ms\")"
  /usr/bin/time -f "peak RSS %M KiB" "$P2V" synth $c >/dev/null
done
