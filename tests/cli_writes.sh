#!/usr/bin/env bash
# Every option of p2v that writes a file, and the standard output of many commands, made to fail:
# the output is /dev/full, a file over the file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored: the
# write fails with EFBIG) and, when this process may mount one, a full 64 KiB tmpfs. Each must exit
# 2 with "p2v: error: cannot write", leave an existing target as it was and no temporary beside
# it. The same options into a writable directory must succeed (so the failures are the writes').
# Usage: cli_writes.sh BIN_DIR SOURCE_DIR [--table]   (--table: print the report table)
set -u
BIN=$1
SRC=$2
TABLE=${3:-}
P2V=$BIN/p2v
E=$SRC/examples/systems
W=$(mktemp -d /tmp/p2v-writes.XXXXXX)
FULL=$W/full
mounted=0
cleanup() {
  [ $mounted = 1 ] && umount "$FULL" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# A full 64 KiB tmpfs, if this process may mount one (root outside a restricted sandbox).
mkdir -p "$FULL"
if mount -t tmpfs -o size=64k tmpfs "$FULL" 2>/dev/null; then mounted=1; fi

# Cases whose executable is not built (p2v-smt: solvers; p2v-run: MPI) are left out.
have_smt=0; [ -x "$BIN/p2v-smt" ] && have_smt=1
have_run=0; [ -x "$BIN/p2v-run" ] && have_run=1
keep() {  # keep "case": whether its command's executable exists
  case "$1" in
  *rewrite*|*"rules prove"*|*certify*|verify*|*"rules "*) [ $have_smt = 1 ] ;;
  *"run "*|*calibrate*) [ $have_run = 1 ] ;;
  *) true ;;
  esac
}

# Inputs some commands need: a measurements CSV for calibrate (from a real threads run).
FIG2A="--system $E/fig2a.json --axes 4,4 --reduce 1 --matrix [[1,2,1,2],[1,1,2,2]]"
RS_AR_AG="ReduceScatter@(cpu,Inside) ; AllReduce@(cpu,Parallel(server)) ; AllGather@(cpu,Inside)"
if [ $have_run = 1 ]; then
  "$P2V" run --backend threads $FIG2A --program "$RS_AR_AG" --bytes 4K --iters 1 --warmup 0 \
    --csv "$W/steps.csv" >/dev/null 2>&1 || fail "setup: p2v run --csv"
fi

# name | command with OUT for the output file (or directory, for the *dir cases)
FILE_CASES=(
  "export -o|export --format torch --system node=2,gpu=4 --axes 8 --reduce 0 --all-programs -o OUT"
  "calibrate -o|calibrate --system $E/fig2a.json --measurements $W/steps.csv -o OUT"
  "step --svg|step --model $SRC/examples/models/resnet50.json --system $E/g4dn-4node.json --axes 16 --reduce 0 --svg OUT"
  "simulate --svg-topology|simulate --system $E/a100-4node.json --axes 4,16 --reduce 1 --matrix \"2 2;2 8\" --svg-topology OUT"
  "simulate --svg-ranking|simulate --system $E/a100-4node.json --axes 4,16 --reduce 1 --matrix \"2 2;2 8\" --svg-ranking OUT"
  "rewrite --certificate|rewrite --program AllReduce --system node=2,gpu=4 --axes 2,4 --reduce 1 --matrix \"1 2;2 2\" --max-size 2 --budget 20 --certificate OUT"
  "run --csv|run --backend threads --system node=2,gpu=2 --axes 4 --reduce 0 --matrix [[2,2]] --program \"AllReduce@(root,Inside)\" --bytes 4K --iters 1 --warmup 0 --csv OUT"
  "run --csv-programs|run --backend threads --system node=2,gpu=2 --axes 4 --reduce 0 --matrix [[2,2]] --program \"AllReduce@(root,Inside)\" --bytes 4K --iters 1 --warmup 0 --csv-programs OUT"
)
DIR_CASES=(
  "rules prove --certify|rules prove ar-rs-ag ar-bcast-reduce --max-devices 4 --certify OUT"
  "reshard --certify|reshard --mesh x=4,y=4 --from \"[32{x,y}512,128]\" --to \"[128{x}512,32{y}128]\" --certify OUT"
)
filter() { local c; for c in "$@"; do keep "$c" && printf '%s\n' "$c"; done; }
mapfile -t FILE_CASES < <(filter "${FILE_CASES[@]}")
mapfile -t DIR_CASES < <(filter "${DIR_CASES[@]}")

# run CMD_TEMPLATE OUT: runs p2v with OUT substituted; sets code and err.
run() {
  local cmd=${1//OUT/$2}
  err=$(eval "\"$P2V\" $cmd" 2>&1 >/dev/null)
  code=$?
}
# Under a file-size limit ($3 KiB, default 4) with SIGXFSZ ignored: a write past it fails with EFBIG.
run_fsize() {
  local cmd=${1//OUT/$2}
  err=$( (trap '' XFSZ; ulimit -f "${3:-4}"; eval "\"$P2V\" $cmd") 2>&1 >/dev/null)
  code=$?
}
row() { [ -n "$TABLE" ] && printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "${5:0:90}"; }
tmp_left() { find "$1" -name '.*.tmp.*' | grep -q . && echo yes || echo no; }
expect_failed_write() {  # name where file_or_dir old_content
  local name=$1 where=$2 target=$3 old=$4
  local kept=yes
  if [ -f "$target" ] && [ "$(cat "$target")" != "$old" ]; then kept=no; fi
  local left
  left=$(tmp_left "$(dirname "$target")")
  row "$name" "$where" "$code" "old kept: $kept, temporary left: $left" "$(echo "$err" | grep 'p2v: error' | head -1)"
  [ "$code" = 2 ] || fail "$name ($where): exit $code, want 2: $err"
  echo "$err" | grep -q "p2v: error: cannot write" || fail "$name ($where): no 'p2v: error: cannot write': $err"
  [ $kept = yes ] || fail "$name ($where): the old file was changed"
  [ "$left" = no ] || fail "$name ($where): a temporary was left"
}

[ -n "$TABLE" ] && echo "| command | output to | exit | file | message |" && echo "|---|---|---|---|---|"
for c in "${FILE_CASES[@]}"; do
  name=${c%%|*}
  cmd=${c#*|}
  # It works into a writable directory.
  run "$cmd" "$W/ok.out"
  [ "$code" = 0 ] && [ -s "$W/ok.out" ] || fail "$name: exit $code or empty file into a writable directory: $err"
  size=$(stat -c %s "$W/ok.out" 2>/dev/null || echo 0)
  rm -f "$W/ok.out"
  # /dev/full
  run "$cmd" /dev/full
  row "$name" /dev/full "$code" "-" "$(echo "$err" | grep 'p2v: error' | head -1)"
  [ "$code" = 2 ] || fail "$name (/dev/full): exit $code, want 2: $err"
  echo "$err" | grep -q "p2v: error: cannot write" || fail "$name (/dev/full): no 'p2v: error: cannot write': $err"
  # Over the file-size limit (only meaningful for outputs larger than the limit).
  if [ "$size" -gt 4096 ]; then
    mkdir -p "$W/fs" && echo old >"$W/fs/out"
    run_fsize "$cmd" "$W/fs/out"
    expect_failed_write "$name" "file over ulimit -f 4 ($size B)" "$W/fs/out" old
    rm -rf "$W/fs"
  fi
  # A full tmpfs: the old file is there, then the disk is filled.
  if [ $mounted = 1 ]; then
    rm -rf "${FULL:?}"/*
    echo old >"$FULL/out"
    dd if=/dev/zero of="$FULL/fill" bs=1k 2>/dev/null
    run "$cmd" "$FULL/out"
    expect_failed_write "$name" "full 64 KiB tmpfs" "$FULL/out" old
  fi
done
for c in "${DIR_CASES[@]}"; do
  name=${c%%|*}
  cmd=${c#*|}
  run "$cmd" "$W/okdir"
  [ "$code" = 0 ] && [ -n "$(ls -A "$W/okdir" 2>/dev/null)" ] || fail "$name: exit $code or no file into a writable directory: $err"
  rm -rf "$W/okdir"
  mkdir -p "$W/fs"
  run_fsize "$cmd" "$W/fs/d" 1
  row "$name" "directory, files over ulimit -f 1" "$code" "temporary left: $(tmp_left "$W/fs")" "$(echo "$err" | grep 'p2v: error' | head -1)"
  [ "$code" = 2 ] || fail "$name (ulimit -f): exit $code, want 2: $err"
  echo "$err" | grep -q "p2v: error: cannot write" || fail "$name (ulimit -f): no 'p2v: error: cannot write': $err"
  [ "$(tmp_left "$W/fs")" = no ] || fail "$name (ulimit -f): a temporary was left"
  rm -rf "$W/fs"
  if [ $mounted = 1 ]; then
    rm -rf "${FULL:?}"/*
    mkdir -p "$FULL/d"
    dd if=/dev/zero of="$FULL/fill" bs=1k 2>/dev/null
    run "$cmd" "$FULL/d"
    empty=$(find "$FULL/d" -type f -empty | wc -l)
    row "$name" "directory on a full 64 KiB tmpfs" "$code" "empty files: $empty, temporary left: $(tmp_left "$FULL")" "$(echo "$err" | grep 'p2v: error' | head -1)"
    [ "$code" = 2 ] || fail "$name (full tmpfs): exit $code, want 2: $err"
    [ "$empty" = 0 ] || fail "$name (full tmpfs): $empty empty files left"
    [ "$(tmp_left "$FULL")" = no ] || fail "$name (full tmpfs): a temporary was left"
  fi
done

# --csv appends: the old rows, then the new ones; the header once.
if [ $have_run = 1 ]; then
  rows1=$(grep -vc '^collective' "$W/steps.csv")
  "$P2V" run --backend threads $FIG2A --program "$RS_AR_AG" --bytes 4K --iters 1 --warmup 0 \
    --csv "$W/steps.csv" >/dev/null 2>&1 || fail "p2v run --csv (append)"
  [ "$(grep -c '^collective' "$W/steps.csv")" = 1 ] || fail "--csv append: the header is not there exactly once"
  [ "$(grep -vc '^collective' "$W/steps.csv")" = $((2 * rows1)) ] || fail "--csv append: not the old rows plus new ones"
fi

# Standard output to /dev/full: exit 2 and "cannot write standard output".
STDOUT_CASES=(
  "--help"
  "matrices --help"
  "matrices --system node=4,gpu=16 --axes 4,16"
  "matrices --system node=4,gpu=16 --axes 4,16 --json"
  "groups --system rack=1,server=2,cpu=2,gpu=4 --axes 16 --reduce 0 --hierarchy a"
  "synth --system $E/a100-2node.json --axes 2,16 --reduce 0"
  "synth --system $E/a100-2node.json --axes 2,16 --reduce 0 --json"
  "prove --system node=2,gpu=4 --axes 2,4 --reduce 1 --solver none"
  "verify --system node=2,gpu=2 --axes 2,2 --reduce 1 --max-size 2"
  "simulate --system $E/a100-4node.json --axes 4,16 --reduce 1 --top 3"
  "explore --system $E/a100-4node.json --axes 4,16 --reduction 0@1 --reduction 1@4"
  "step --model $SRC/examples/models/resnet50.json --system $E/g4dn-4node.json --axes 16 --reduce 0"
  "reshard --mesh x=4,y=4 --from \"[32{x,y}512,128]\" --to \"[128{x}512,32{y}128]\""
  "rules list"
  "rules show ar-rs-ag"
  "rewrite --program AllReduce --system node=2,gpu=4 --axes 2,4 --reduce 1 --matrix \"1 2;2 2\" --max-size 2 --budget 20 --no-certify"
  "run --backend threads --system node=2,gpu=2 --axes 4 --reduce 0 --matrix [[2,2]] --program \"AllReduce@(root,Inside)\" --bytes 4K --iters 1 --warmup 0"
  "export --format torch --system node=2,gpu=4 --axes 8 --reduce 0 --all-programs -o /dev/stdout"
)
n_stdout=0
for c in "${STDOUT_CASES[@]}"; do
  keep "$c" || continue
  out=$(eval "\"$P2V\" $c" 2>/dev/null | wc -c)
  [ "$out" -gt 0 ] || fail "stdout: '$c' printed nothing"
  err=$(eval "\"$P2V\" $c" 2>&1 >/dev/full)
  code=$?
  n_stdout=$((n_stdout + 1))
  [ -n "$TABLE" ] && printf '| p2v %s | stdout /dev/full | %s | - | %s |\n' "${c:0:60}" "$code" "$(echo "$err" | grep 'p2v: error' | head -1)"
  [ "$code" = 2 ] || fail "stdout: '$c' > /dev/full: exit $code, want 2: $err"
  echo "$err" | grep -q "p2v: error: cannot write" || fail "stdout: '$c' > /dev/full: no 'p2v: error: cannot write': $err"
done

echo "${#FILE_CASES[@]} file options, ${#DIR_CASES[@]} directory options, $n_stdout stdout commands; full tmpfs: $([ $mounted = 1 ] && echo tested || echo 'not mounted (no permission): skipped'); failures: $fails"
[ $fails = 0 ]
