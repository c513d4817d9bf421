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
CURVE="16 128 1024 8192 65536 131072 1048576"  # device counts of the curves

curve_system() {  # the four-level system (pod, rack, node, gpu=8) with $1 devices, of $CURVE
  case $1 in
    16) echo "pod=1,rack=1,node=2,gpu=8";; 128) echo "pod=2,rack=2,node=4,gpu=8";;
    1024) echo "pod=2,rack=4,node=16,gpu=8";; 8192) echo "pod=4,rack=16,node=16,gpu=8";;
    65536) echo "pod=8,rack=32,node=32,gpu=8";; 131072) echo "$FOUR";; 1048576) echo "pod=32,rack=64,node=64,gpu=8";;
    *) echo "curve_system: no system of $1 devices" >&2; exit 2;;
  esac
}

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
