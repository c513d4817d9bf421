#!/usr/bin/env bash
# docs/step.md's target: `p2v step` for BERT-large on a100-4node over all placements of [4 16]
# (reduce 0 and reduce 1 separately, DDP default and the DP choice, default options), < 2 s each.
# Uses hyperfine when installed (median of 10 runs), else a timing loop.
# Usage: bench/step/target.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-build}/bin/p2v"
for mode in ddp zero; do
  for r in 0 1; do
    cmd="$bin step --model examples/models/bert-large.json --system examples/systems/a100-4node.json --axes 4,16 --reduce $r --mode $mode --json"
    if command -v hyperfine >/dev/null; then
      hyperfine -N --warmup 1 --runs 10 --export-json /tmp/p2v-step-bench.json "$cmd" >/dev/null
      med=$(python3 -c "import json; print('%.1f' % (1000 * json.load(open('/tmp/p2v-step-bench.json'))['results'][0]['median']))")
    else
      ts=()
      for i in $(seq 10); do
        s=$(date +%s%N); $cmd >/dev/null; ts+=($(( ($(date +%s%N) - s) / 1000 )))
      done
      med=$(printf '%s\n' "${ts[@]}" | sort -n | sed -n 5p | awk '{printf "%.1f", $1 / 1000}')
    fi
    n=$($cmd | python3 -c "import json,sys; j=json.load(sys.stdin); print(len(j['placements']), sum(p['simulator_calls'] for p in j['placements']))")
    echo "bert-large a100-4node [4 16] reduce $r mode $mode: median ${med} ms (placements, simulator calls: $n)"
  done
done
