#!/usr/bin/env bash
# Golden outputs of the size sweeps and crossover tables (issue 26, item 3), and a structural
# check of the crossover logic on the JSON (check_sweep.py).
#   tests/sweep/golden.sh BIN_DIR SOURCE_DIR            compare with tests/sweep/golden/
#   tests/sweep/golden.sh BIN_DIR SOURCE_DIR --update   regenerate the golden files from the tool
# The golden files are the real tool's output; regenerate them (and read the diff) when the cost
# model changes on purpose.
set -uo pipefail
BIN=$1
SRC=$2
UPDATE=${3:-}
P2V=$BIN/p2v
GOLD=$SRC/tests/sweep/golden
SYS=$SRC/examples/systems
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0

# name | command line (p2v arguments). Paths are relative to the source tree (cd "$SRC" below),
# so the outputs do not depend on where the tree is.
CASES=(
  "simulate-v100|simulate --system examples/systems/v100-4node.json --axes 32 --reduce 0 --bytes 1K:4G:x4"
  "simulate-v100-nccl-tests|simulate --system examples/systems/v100-4node.json --axes 32 --reduce 0 -b 1K -e 4G -f 4"
  "simulate-v100-json|simulate --system examples/systems/v100-4node.json --axes 32 --reduce 0 --bytes 64K,1M,16M --json"
  "simulate-a100-matrices|simulate --system examples/systems/a100-4node.json --axes 4,16 --reduce 1 --bytes 1K:1G:x32"
  "explore-a100|explore --system examples/systems/a100-4node.json --axes 4,16 --reduction 0@1 --reduction 1@4 --bytes 1K:1G:x32"
  "explore-a100-json|explore --system examples/systems/a100-4node.json --axes 4,16 --reduction 0@1 --reduction 1@4 --bytes 1K,1M --json"
  "step-bert-buckets|step --model examples/models/bert-large.json --system examples/systems/a100-4node.json --axes 64 --buckets 1MB,5MB,25MB,100MB,400MB"
  "step-bert-buckets-json|step --model examples/models/bert-large.json --system examples/systems/a100-4node.json --axes 64 --buckets 5MB,100MB --json"
)

cd "$SRC" || exit 2
for c in "${CASES[@]}"; do
  name=${c%%|*}
  args=${c#*|}
  # shellcheck disable=SC2086
  if ! "$P2V" $args >"$TMP/$name.out" 2>"$TMP/$name.err"; then
    echo "FAIL $name: p2v $args exited non-zero:"
    cat "$TMP/$name.err"
    fail=1
    continue
  fi
  if [ -s "$TMP/$name.err" ]; then
    echo "FAIL $name: stderr not empty (progress must be off when stderr is not a terminal):"
    cat "$TMP/$name.err"
    fail=1
  fi
  if [ "$UPDATE" = "--update" ]; then
    { echo "# p2v $args"; cat "$TMP/$name.out"; } >"$GOLD/$name.txt"
    echo "updated $name"
  elif ! diff -u "$GOLD/$name.txt" <(echo "# p2v $args"; cat "$TMP/$name.out") >"$TMP/$name.diff"; then
    echo "FAIL $name: output differs from tests/sweep/golden/$name.txt (regenerate with --update if intended):"
    head -40 "$TMP/$name.diff"
    fail=1
  else
    echo "ok   $name"
  fi
done

# -b/-e/-f is an alias of the range form: the same table.
if ! cmp -s "$TMP/simulate-v100.out" "$TMP/simulate-v100-nccl-tests.out"; then
  echo "FAIL -b/-e/-f and --bytes MIN:MAX:xF differ"
  fail=1
fi

# The crossover logic, checked on the JSON independently of the golden text.
python3 "$SRC/tests/sweep/check_sweep.py" "$TMP/simulate-v100-json.out" simulate --min-changes 1 || fail=1
python3 "$SRC/tests/sweep/check_sweep.py" "$TMP/explore-a100-json.out" explore --min-changes 1 || fail=1
python3 "$SRC/tests/sweep/check_sweep.py" "$TMP/step-bert-buckets-json.out" step --min-changes 0 || fail=1
"$P2V" simulate --system examples/systems/v100-4node.json --axes 32 --reduce 0 --bytes 1K:4G:x2 --json >"$TMP/full.json" &&
  python3 "$SRC/tests/sweep/check_sweep.py" "$TMP/full.json" simulate --min-changes 2 || fail=1
exit $fail
