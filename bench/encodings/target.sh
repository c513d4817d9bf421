#!/usr/bin/env bash
# The issue's target: the 4xA100 [4 16] configs (every matrix, reduce 0 and 1, hierarchy (d), L = 5)
# fully enumerated and cross-checked by z3 and cvc5, wall time of the whole command (target 60 s
# on the 2-core machine), in the concrete encoding (auto would take the symbolic one). Usage: bench/encodings/target.sh [build-dir] [runs]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-build}/bin/p2v"
runs="${2:-3}"
for i in $(seq "$runs"); do
  start=$(date +%s%N)
  for r in 0 1; do
    "$bin" verify --system examples/systems/a100-4node.json --axes 4,16 --reduce "$r" --max-size 5 --solver both \
      --encoding concrete
  done
  echo "run $i: $(( ($(date +%s%N) - start) / 1000000 )) ms wall for reduce 0 and 1"
done
