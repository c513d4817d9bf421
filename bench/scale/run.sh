#!/usr/bin/env bash
# The any-size targets of docs/shape.md, whole-process times (hyperfine medians) and peak
# memory (GNU time), plus the curve of each figure from 16 to 1,048,576 devices.
# Usage: bench/scale/run.sh [build/bin] [--quick]   (--quick: fewer runs, no certify curve)
set -euo pipefail
RUNS=10
ROW_WIDTH=72
source "$(dirname "$0")/lib.sh"

echo "== targets"
c="$P2V synth --system $FOUR --axes 131072 --reduce 0"
row "synth four-level 131072 --reduce 0 (target < 50 ms, < 200 MB)" "$(med "$c")" "$(rss "$c")"
a=$($c | sed 's/^matrix.*//' | md5sum); b=$($P2V synth --system pod=2,rack=2,node=2,gpu=2 --axes 16 --reduce 0 --concrete | sed 's/^matrix.*//' | md5sum)
echo "   same programs as pod=2,rack=2,node=2,gpu=2 --concrete: $([ "$a" = "$b" ] && echo yes || echo NO) ($($c | tail -1))"
c="$P2V synth --system $FOUR --axes 1024,8,16 --reduce 0"
row "synth four-level --axes 1024,8,16 every placement, table (target < 1 s)" "$(med "$c > /dev/null")" "$(rss "$c")"
row "  same, --json" "$(med "$c --json > /dev/null")" "$(rss "$c --json")"
for s in "a=2,b=2,c=2 --axes 8" "a=4,b=4,c=4 --axes 64" "a=64,b=64,c=32 --axes 131072"; do
  c="$P2V synth --system $s --reduce 0 --json"
  row "synth --json $s (target < 20 ms, flat)" "$(med "$c > /dev/null")" "$(rss "$c")"
done
c="$P2V synth --system node=16384,gpu=8 --axes 131072 --reduce 0 --certify $TMP/c2"
row "synth --certify node=16384,gpu=8 (47 programs; target < 2 s)" "$(med "rm -rf $TMP/c2; $c")" "$(rss "rm -rf $TMP/c2; $c")"
c="$P2V check $TMP/c2/*.json"
row "check those 47 certificates (target < 2 s)" "$(med "$c")" "$(rss "$c")"
c="$P2V verify --system node=1024,gpu=8 --axes 8192 --reduce 0 --solver both"
row "verify --solver both node=1024,gpu=8 --axes 8192 (target < 60 s)" "$(med "$c")" "$(rss "$c")"
c="$P2V simulate --system $FOUR --axes 131072 --reduce 0 --preset h100 --top 10"
row "simulate --preset h100 --top 10, four-level 131072 (target < 5 s)" "$(med "$c")" "$(rss "$c")"
if [ "$QUICK" != "--quick" ]; then
  rm -rf "$TMP/c4"
  s=$(date +%s.%N); $P2V synth --system $FOUR --axes 131072 --reduce 0 --certify "$TMP/c4" >/dev/null; e=$(date +%s.%N)
  row "synth --certify four-level (3408 programs), one run" "$(python3 -c "print('%.0f' % (($e-$s)*1e3))")" "-"
  s=$(date +%s.%N); $P2V check --quiet "$TMP"/c4/*.json | tail -1; e=$(date +%s.%N)
  row "check those 3408 certificates, one run" "$(python3 -c "print('%.0f' % (($e-$s)*1e3))")" "-"
fi

echo "== curve: 4 levels (pod, rack, node, gpu=8), all reduced"
printf "%-10s %12s %12s %12s %12s %12s\n" devices "synth ms" "synth MB" "json ms" "simulate ms" "certify47 ms"
for n in $CURVE; do
  sys=$(curve_system "$n")
  c="$P2V synth --system $sys --axes $n --reduce 0"
  nodes=$((n / 8))
  cc="$P2V synth --system node=$nodes,gpu=8 --axes $n --reduce 0 --certify $TMP/cc"
  printf "%-10s %12s %12s %12s %12s %12s\n" "$n" "$(med "$c > /dev/null")" "$(rss "$c")" "$(med "$c --json > /dev/null")" \
    "$(med "$P2V simulate --system $sys --axes $n --reduce 0 --preset h100 --top 10 --model levels > /dev/null")" \
    "$(med "rm -rf $TMP/cc; $cc > /dev/null")"
done
