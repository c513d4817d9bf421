#!/usr/bin/env bash
# `synth --certify` and `check` on the two-, three- and four-level systems of docs/shape.md (whole
# process, hyperfine medians; the four-level one once, with a time limit).
# Usage: bench/encodings/certify.sh [build/bin] [runs] [four-level time limit, seconds; 0 = skip it]
set -euo pipefail
BIN=${1:-build/bin}
RUNS=${2:-3}
LIMIT=${3:-3600}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
med() {  # median seconds of a shell command (hyperfine)
  hyperfine --runs "$RUNS" --export-json "$TMP/h.json" "$1" >/dev/null
  python3 -c "import json;print('%.2f' % json.load(open('$TMP/h.json'))['results'][0]['median'])"
}
for spec in "node=16384,gpu=8 --axes 131072" "rack=32,node=32,gpu=8 --axes 8192"; do
  c="$BIN/p2v synth --system $spec --reduce 0 --certify $TMP/c"
  printf "%-48s certify %8s s" "$spec" "$(med "rm -rf $TMP/c; $c >/dev/null")"
  rm -rf "$TMP/c"; $c >/dev/null
  printf "   check %6s s (%s certificates)\n" "$(med "$BIN/p2v check --quiet $TMP/c/*.json >/dev/null")" "$(ls "$TMP"/c | wc -l)"
done
[ "$LIMIT" = 0 ] && exit 0  # 0: skip the four-level system
spec="pod=16,rack=32,node=32,gpu=8 --axes 131072"
rm -rf "$TMP/c"
s=$(date +%s.%N)
if timeout "$LIMIT" "$BIN/p2v" synth --system $spec --reduce 0 --certify "$TMP/c" >/dev/null; then
  e=$(date +%s.%N)
  printf "%-48s certify %8.0f s (one run)" "$spec" "$(python3 -c "print($e-$s)")"
  s=$(date +%s.%N); "$BIN/p2v" check --quiet "$TMP"/c/*.json | tail -1; e=$(date +%s.%N)
  printf "   check %6.1f s\n" "$(python3 -c "print($e-$s)")"
else
  echo "$spec certify: not finished within $LIMIT s"
fi
