#!/usr/bin/env bash
# Fuzzes every file reader of p2v (tests/fuzz/README.md) under AddressSanitizer and UBSan:
# builds the fuzz targets in build-fuzz (clang++ with libFuzzer when present, else the fallback
# mutation driver), seeds each reader's corpus from examples/, tests/fuzz/seeds/ and files the
# tools write (when build/bin/p2v exists: synth/simulate/step/calibrate --json, certificates of
# synth, reshard and rules), and runs RUNS inputs per reader. Fails on any crash, sanitizer
# report, hang (-timeout), out-of-memory or exception other than p2v::Error.
#
#   scripts/fuzz.sh                 # CI: RUNS=1500 per reader (14 readers with the SMT ones: 21,000 inputs)
#   RUNS=100000 scripts/fuzz.sh     # longer (bench/fuzz/run.sh runs for a duration instead)
#   MAX_TIME=60 scripts/fuzz.sh     # libFuzzer: at most 60 s per reader
#   FUZZ_SMT=OFF scripts/fuzz.sh    # without the rule-certificate reader (no solver libraries)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-1500}
MAX_TIME=${MAX_TIME:-0}
JOBS=${JOBS:-$(nproc)}
BUILD=${FUZZ_BUILD:-build-fuzz}
P2V=${P2V:-$ROOT/build/bin/p2v}
export CCACHE_BASEDIR="$ROOT"
# A Debug (-g) build hashes the working directory unless told not to; the paths in debug info are
# all that differs between clones, and nothing here reads them.
export CCACHE_NOHASHDIR=1

CXX_ARGS=()
if command -v clang++ >/dev/null; then CXX_ARGS=(-DCMAKE_CXX_COMPILER=clang++); fi
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug "${CXX_ARGS[@]}" -DP2V_FUZZ=ON -DP2V_WITH_SMT="${FUZZ_SMT:-ON}" \
  -DP2V_WITH_MPI=OFF -DP2V_WITH_NCCL=OFF -DP2V_BUILD_TESTS=OFF -DP2V_BUILD_BENCH=OFF >/dev/null
t0=$(date +%s)
cmake --build "$BUILD" -j "$JOBS" --target p2v_fuzz_all
t1=$(date +%s)
LIBFUZZER=$(sed -n 's/^P2V_HAVE_LIBFUZZER:INTERNAL=//p' "$BUILD/CMakeCache.txt")

# Seed corpora: one directory per reader.
SEEDS=$BUILD/seeds
rm -rf "$SEEDS" && mkdir -p "$SEEDS"
for r in system model suite synth_file simulate_report reports measurements program_measurements nccl_tests \
  certificate reshard_certificate rule_certificate rewrite_certificate manifest; do
  mkdir -p "$SEEDS/$r"
  if [ -d tests/fuzz/seeds/$r ]; then cp tests/fuzz/seeds/$r/* "$SEEDS/$r/"; fi
done
cp examples/systems/*.json "$SEEDS/system/"
cp examples/models/*.json "$SEEDS/model/"
cp examples/suites/*.json "$SEEDS/suite/"
for f in bench/fidelity/data/*/*.txt bench/fidelity/data/*/*_raw.md; do  # system_name: names repeat across systems
  d=${f%/*}
  cp "$f" "$SEEDS/nccl_tests/${d##*/}_${f##*/}"
done
if [ -x "$P2V" ]; then
  gen() {  # gen OUT ARGS...: one seed written by p2v (a failing command only warns)
    local out=$1
    shift
    "$P2V" "$@" >"$out" 2>/dev/null || { echo "fuzz.sh: seed not generated: p2v $*" >&2; rm -f "$out"; }
  }
  A2=examples/systems/a100-2node.json
  gen "$SEEDS/synth_file/fig3.json" synth --system node=2,gpu=4 --axes 8 --reduce 0 --json
  gen "$SEEDS/synth_file/lowered.json" synth --system node=2,gpu=4 --axes 2,4 --reduce 1 --max-size 3 --lowered --json
  gen "$SEEDS/simulate_report/a100.json" simulate --system $A2 --axes 4,8 --reduce 1 --top 3 --json
  gen "$SEEDS/simulate_report/graph.json" simulate --system $A2 --axes 32 --reduce 0 --top 3 \
    --measurements tests/fuzz/seeds/measurements/a100-2node.csv --json
  gen "$SEEDS/reports/step.json" step --model examples/models/bert-base.json --system $A2 --axes 32 --json
  gen "$SEEDS/reports/calibrate.json" calibrate --system $A2 --measurements tests/fuzz/seeds/measurements/a100-2node.csv --json
  gen "$SEEDS/system/calibrated.json" calibrate --system $A2 --measurements tests/fuzz/seeds/measurements/a100-2node.csv
  TMPC=$(mktemp -d)
  trap 'rm -rf "$TMPC"' EXIT
  "$P2V" synth --system node=2,gpu=4 --axes 8 --reduce 0 --max-size 3 --concrete --certify "$TMPC/synth" >/dev/null 2>&1 || true
  "$P2V" synth --system node=2,gpu=4 --axes 8 --reduce 0 --max-size 3 --certify "$TMPC/shape" >/dev/null 2>&1 || true
  "$P2V" reshard --mesh x=3,y=5 --from "[5{x}15,30]" --to "[3{y}15,10{x}30]" --certify "$TMPC/reshard" >/dev/null 2>&1 || true
  "$P2V" rules prove --max-devices 4 --certify "$TMPC/rules" >/dev/null 2>&1 || true
  "$P2V" rewrite --system node=2,gpu=4 --axes 8 --reduce 0 --program AllReduce \
    --certificate "$SEEDS/rewrite_certificate/rw.json" >/dev/null 2>&1 || true
  i=0
  for f in "$TMPC"/synth/*.json "$TMPC"/shape/*.json; do
    [ -f "$f" ] && cp "$f" "$SEEDS/certificate/$((i++)).json"
  done
  for f in "$TMPC"/reshard/*.json; do [ -f "$f" ] && cp "$f" "$SEEDS/reshard_certificate/"; done
  for f in "$TMPC"/rules/*.json; do [ -f "$f" ] && cp "$f" "$SEEDS/rule_certificate/"; done
  for d in synth shape reshard rules; do
    [ -f "$TMPC/$d/MANIFEST.json" ] && cp "$TMPC/$d/MANIFEST.json" "$SEEDS/manifest/$d.json"
  done
else
  echo "fuzz.sh: $P2V not built: seeds from examples/ and tests/fuzz/seeds/ only" >&2
fi

# Run every reader; libFuzzer keeps what it finds in a scratch copy of the seeds.
ART=$BUILD/artifacts
rm -rf "$ART" && mkdir -p "$ART"
if [ "${KEEP_CORPUS:-0}" != 1 ]; then rm -rf "$BUILD/corpus"; fi
status=0
total=0
export LSAN_OPTIONS="suppressions=$ROOT/tests/fuzz/lsan.supp:print_suppressions=0"
printf '%-22s %8s %6s %7s %s\n' reader inputs seeds seconds result
for exe in "$BUILD"/tests/fuzz/fuzz_*; do
  r=${exe##*/fuzz_}
  mkdir -p "$BUILD/corpus/$r"
  seeds=$(find "$SEEDS/$r" -type f | wc -l)
  log=$BUILD/fuzz_$r.log
  s0=$(date +%s)
  opts=(-runs="$RUNS" -seed="${SEED:-1}" -timeout=60 -max_total_time="$MAX_TIME" -dict=tests/fuzz/json.dict
    -artifact_prefix="$ART/$r-")
  if [ "$LIBFUZZER" = 1 ]; then opts+=(-rss_limit_mb=2560 -malloc_limit_mb=2048 -print_final_stats=1); fi
  if "$exe" "${opts[@]}" "$BUILD/corpus/$r" "$SEEDS/$r" >"$log" 2>&1; then
    result=ok
  else
    result="FAILED (log $log, input in $ART)"
    status=1
  fi
  if [ "$LIBFUZZER" = 1 ]; then
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  else
    n=$(sed -n 's/^fallback driver: \([0-9]*\) seeds and \([0-9]*\) mutants.*/\1 + \2/p' "$log" | tail -1)
    n=$((${n:-0}))
  fi
  total=$((total + ${n:-0}))
  printf '%-22s %8s %6s %7s %s\n' "$r" "${n:-?}" "$seeds" $(($(date +%s) - s0)) "$result"
done
echo "fuzz.sh: $total inputs, build $((t1 - t0)) s, runs $(($(date +%s) - t1)) s$([ $status = 0 ] && echo ', no crash, hang or unexpected exception')"
if [ $status != 0 ]; then
  for f in "$BUILD"/fuzz_*.log; do grep -l -E "ERROR|BUG|timeout|crash" "$f" >/dev/null && tail -30 "$f"; done
fi
exit $status
