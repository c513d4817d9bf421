#!/usr/bin/env bash
# Rules benchmark (docs/rules.md): every catalogue rule proved/refuted by Z3 and cvc5 on every grid
# shape up to N devices (default 16; N=64 is the issue's target), the derivation on the paper's
# a100-4node [4 16] placements (reduce 0 and 1) against the enumerator, and `p2v rewrite` of the
# single AllReduce. Usage: bench/rules/run.sh [N] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-16}
BIN=${2:-build}/bin/p2v
SYS=examples/systems/a100-4node.json
echo "== rules prove --all --max-devices $N (z3 + cvc5)"
/usr/bin/time -f "wall %e s" "$BIN" rules prove --all --max-devices "$N" --certify /tmp/p2v-bench-rules
echo "== issue 25 target: rules prove --all --max-devices 64 < 60 s with both solvers (3 runs; take the median)"
uptime
for i in 1 2 3; do
  /usr/bin/time -f "run $i: user %U s, sys %S s, wall %e s, %M KB" "$BIN" rules prove --all --max-devices 64 | tail -1
done
uptime
echo "== rules derive, $SYS --axes 4,16 (3 runs each, derivation time per matrix in the lines)"
for r in 0 1; do
  for i in 1 2 3; do "$BIN" rules derive --system "$SYS" --axes 4,16 --reduce "$r" | grep -E "^cli|^total"; done
done
echo "== rewrite AllReduce on $SYS --axes 4,16 (search time per matrix)"
for r in 0 1; do
  for i in 1 2 3; do "$BIN" rewrite --program AllReduce --system "$SYS" --axes 4,16 --reduce "$r" --no-certify | grep -E "^matrix|search|simulate's best"; done
done
echo "== rewrite with the certificate (z3 + cvc5 on 64 devices), reduce 1, matrix 2 2;2 8"
/usr/bin/time -f "wall %e s" "$BIN" rewrite --program AllReduce --system "$SYS" --axes 4,16 --reduce 1 --matrix "2 2;2 8"
