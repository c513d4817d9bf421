#!/usr/bin/env bash
# `synth --certify` with the per-level symbolic encoding against the concrete one, and `p2v check`
# of its certificates, on the four-level shape (3,408 programs): the 16-device system of issue 25
# and the 131,072-device system of the same shape (the solvers run on the shape's smallest
# instance either way). Whole process; wall, user and system seconds from /usr/bin/time.
# Usage: bench/encodings/symbolic.sh [build/bin] [concrete too: 1 (slow, ~450 s) | 0]
set -euo pipefail
BIN=${1:-build/bin}
CONCRETE=${2:-0}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
run() {  # label, command...
  local label=$1
  shift
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/t" "$@" >/dev/null
  read -r wall user sys rss <"$TMP/t"
  printf "%-64s wall %7.2f s  cpu %7.2f s  peak %6d MB\n" "$label" "$wall" "$(python3 -c "print($user+$sys)")" \
    "$((rss / 1024))"
}
for spec in "pod=2,rack=2,node=2,gpu=2 --axes 16" "pod=16,rack=32,node=32,gpu=8 --axes 131072"; do
  encodings=(symbolic)
  [ "$CONCRETE" = 1 ] && encodings+=(concrete)
  for enc in "${encodings[@]}"; do
    rm -rf "$TMP/c"
    # shellcheck disable=SC2086
    run "synth --system $spec --reduce 0 --certify ($enc)" "$BIN/p2v" synth --system $spec --reduce 0 \
      --certify "$TMP/c" --encoding "$enc"
    run "  check ($(ls "$TMP/c" | wc -l) files)" "$BIN/p2v" check --quiet "$TMP/c"
  done
done
