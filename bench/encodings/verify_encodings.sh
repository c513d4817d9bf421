#!/usr/bin/env bash
# `p2v verify` (whole sets, and --minimal) with the concrete encoding on the reduction group's
# devices, the concrete encoding on the shape's smallest instance (--encoding shape) and the
# per-level symbolic encoding on it (--encoding symbolic): two-, three- and four-level systems,
# several device counts, axes = all devices, reduce 0, L = 5, both solvers, one run at a time
# (--jobs 1). CPU seconds (user + system, /usr/bin/time) of the whole process, median of REPS runs;
# a run over LIMIT seconds wall is reported as "> LIMIT" (and not repeated). The numbers that set
# encodings::kAutoSymbolicFrom are in encodings/README.md ("verify: concrete or symbolic").
# Usage: bench/encodings/verify_encodings.sh [build/bin] [REPS=3] [LIMIT=120]
set -uo pipefail
BIN=${1:-build/bin}
REPS=${2:-3}
LIMIT=${3:-120}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
systems=(
  "node=2,gpu=2 --axes 4"
  "node=2,gpu=4 --axes 8"
  "node=4,gpu=4 --axes 16"
  "node=1024,gpu=8 --axes 8192"
  "rack=2,node=2,gpu=2 --axes 8"
  "rack=2,node=2,gpu=4 --axes 16"
  "rack=32,node=32,gpu=8 --axes 8192"
  "pod=2,rack=2,node=2,gpu=2 --axes 16"
  "pod=16,rack=32,node=32,gpu=8 --axes 131072"
)
for spec in "${systems[@]}"; do
  devices=${spec##* }
  for mode in sets minimal; do
    flag=""
    [ "$mode" = minimal ] && flag="--minimal"
    for enc in concrete shape symbolic; do
      # The concrete encoding on the devices only up to 16 devices per reduction group.
      [ "$enc" = concrete ] && [ "$devices" -gt 16 ] && continue
      cpus=()
      result=""
      for ((i = 0; i < REPS; ++i)); do
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %U %S" -o "$TMP/t" timeout "$LIMIT" "$BIN/p2v" verify --system $spec --reduce 0 \
          --max-size 5 --solver both --jobs 1 --encoding "$enc" $flag >"$TMP/out" 2>&1
        rc=$?
        if [ $rc = 124 ]; then
          result="> $LIMIT s wall (time limit)"
          break
        fi
        if [ $rc != 0 ]; then
          result="exit $rc: $(tail -1 "$TMP/out")"
          break
        fi
        read -r _ user sys <"$TMP/t"
        cpus+=("$(python3 -c "print(round($user+$sys, 2))")")
      done
      if [ -z "$result" ]; then
        result="cpu $(printf '%s\n' "${cpus[@]}" | median) s (runs: ${cpus[*]})"
      fi
      printf "%-44s %-8s %-9s %s\n" "$spec" "$mode" "$enc" "$result"
    done
  done
done
