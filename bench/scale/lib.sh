# Shared by bench/scale/*.sh (sourced): arguments [build/bin] [--quick], hyperfine medians, peak
# memory and table rows. Set RUNS (default runs) and ROW_WIDTH before sourcing; MED_FLAGS adds
# hyperfine flags (prove.sh: -i, since refused placements exit 1).
BIN=${1:-build/bin}
QUICK=${2:-}
P2V="$BIN/p2v"
[ "$QUICK" = "--quick" ] && RUNS=3
command -v hyperfine >/dev/null || { echo "bench/scale: needs hyperfine (scripts/install-deps.sh)"; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FOUR="pod=16,rack=32,node=32,gpu=8"

med() {  # median of a command (hyperfine), printed in ms; a shell when the command needs one
  hyperfine -N --runs "$RUNS" --warmup 1 ${MED_FLAGS:-} --export-json "$TMP/h.json" "$1" >/dev/null 2>&1 ||
    hyperfine --runs "$RUNS" --warmup 1 ${MED_FLAGS:-} --export-json "$TMP/h.json" "$1" >/dev/null
  python3 -c "import json;print('%.1f' % (json.load(open('$TMP/h.json'))['results'][0]['median']*1e3))"
}
rss() {  # peak resident set (MB) of one run
  /usr/bin/time -f "%M" -o "$TMP/t" bash -c "$1" >/dev/null 2>&1 || true
  echo $(( $(cat "$TMP/t") / 1024 ))
}
row() { printf "%-${ROW_WIDTH:-72}s %10s ms %8s MB\n" "$1" "$2" "$3"; }
