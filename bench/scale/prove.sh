#!/usr/bin/env bash
# p2v prove at any size (docs/shape.md §9): whole-process medians (hyperfine) and peak memory for
# the 131,072-device example, the curve 16 -> 1,048,576 devices (4 levels, one axis, reduced), and
# the three-axis placements of the four-level system (all of them at L=3; one per instance
# size at L=4).
# Usage: bench/scale/prove.sh [build/bin] [--quick]
set -euo pipefail
RUNS=5
ROW_WIDTH=78
MED_FLAGS=-i
source "$(dirname "$0")/lib.sh"

echo "== prove, 131,072 devices"
c="$P2V prove --system $FOUR --axes 131072 --reduce 0"
row "prove four-level 131072 (L=4, z3+cvc5; smallest instance: 16 devices)" "$(med "$c")" "$(rss "$c")"
row "  same, --solver none" "$(med "$c --solver none")" "$(rss "$c --solver none")"
echo "== curve: prove --solver both, 4 levels (pod, rack, node, gpu=8), one axis reduced"
for n in $CURVE; do
  sys=$(curve_system "$n")
  c="$P2V prove --system $sys --axes $n --reduce 0"
  row "$n devices ($sys; $([ $n -le 512 ] && echo 'on the devices' || echo 'on the instance'))" "$(med "$c")" "$(rss "$c")"
  [ $n -le 512 ] && [ $n -gt 16 ] && row "  same, --on shape (smallest instance)" "$(med "$c --on shape")" "$(rss "$c --on shape")"
done
echo "== three axes 1024,8,16 on the four-level system, every placement (574), --solver none"
for L in 3; do  # L=4 over all 574: about 35 min (per-size numbers below)
  s=$(date +%s.%N)
  $P2V prove --system $FOUR --axes 1024,8,16 --reduce 0 --solver none --max-size $L > "$TMP/m.txt" 2>/dev/null || true
  e=$(date +%s.%N)
  row "  L=$L, one run: $(grep '^checks:' "$TMP/m.txt" | cut -d';' -f1)" "$(python3 -c "print('%.0f' % (($e-$s)*1e3))")" "-"
done
echo "== one placement of 1024,8,16 per smallest-instance size (64, 128, 256, 512 devices), L=4, --solver none, one run"
for m in "1 8 16 8;1 4 2 1;16 1 1 1" "1 16 16 4;1 2 2 2;16 1 1 1" "1 8 16 8;2 2 2 1;8 2 1 1" \
  "2 8 16 4;1 2 2 2;8 2 1 1"; do
  /usr/bin/time -f "%e %M" -o "$TMP/t" $P2V prove --system $FOUR --axes 1024,8,16 --reduce 0 --solver none \
    --max-size 4 --max-instance 512 --matrix "$m" > /dev/null || true
  read -r sec kb < "$TMP/t"
  row "  [$m]" "$(python3 -c "print('%.0f' % ($sec*1e3))")" "$((kb / 1024))"
done
