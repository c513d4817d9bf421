#!/usr/bin/env bash
# Golden outputs of `p2v reshard` size sweeps (docs/reshard.md "Size sweeps"): the per-size table
# and the crossover table, text and JSON, and -b/-e/-f as an alias of the range form.
#   tests/reshard/sweep_golden.sh BIN_DIR SOURCE_DIR [--update]
# The files are the real tool's output; regenerate them (and read the diff) when the search or
# the simulator's prices change on purpose.
set -uo pipefail
P2V=$1/p2v
SRC=$2
GOLD=$SRC/tests/reshard/golden
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# 2 nodes of 4 GPUs (DGX A100 links): the program changes between 4M and 16M.
SYS="--system node=2,gpu=4 --preset dgx-a100 --cost topology"
AB="--mesh x=2,y=4 --from [2{x,y}16,16] --to [16,2{y,x}16]"
CASES=(
  "topology|reshard $AB $SYS --bytes 1K:4G:x4"
  "topology-json|reshard $AB $SYS --bytes 1M,64M --json"
  "a100-2node|reshard --mesh x=2,y=16 --from [32{y}512,64{x}128] --to [512,4{x,y}128] --system examples/systems/a100-2node.json --cost topology --bytes 64K:1G:x16"
  "paper|reshard --mesh x=4,y=4 --from [32{x,y}512,128] --to [128{x}512,32{y}128] --bytes 1M,16M,256M"
)
cd "$SRC" || exit 2
set -f  # the types are not glob patterns
fail=0
for c in "${CASES[@]}"; do
  name=${c%%|*}
  args=${c#*|}
  # shellcheck disable=SC2086
  if ! "$P2V" $args >"$TMP/$name.out" 2>"$TMP/$name.err" || [ -s "$TMP/$name.err" ]; then
    echo "FAIL $name: p2v $args (exit non-zero or stderr not empty):"
    cat "$TMP/$name.err"
    fail=1
    continue
  fi
  if [ "${3:-}" = "--update" ]; then
    { echo "# p2v $args"; cat "$TMP/$name.out"; } >"$GOLD/reshard-$name.txt"
    echo "updated $name"
  elif diff -u "$GOLD/reshard-$name.txt" <(echo "# p2v $args"; cat "$TMP/$name.out"); then
    echo "ok   $name"
  else
    echo "FAIL $name: differs from tests/reshard/golden/reshard-$name.txt"
    fail=1
  fi
done
# nccl-tests' -b/-e/-f is the range form.
# shellcheck disable=SC2086
"$P2V" reshard $AB $SYS -b 1K -e 4G -f 4 >"$TMP/nccl-tests.out" && cmp -s "$TMP/nccl-tests.out" "$TMP/topology.out" ||
  { echo "FAIL -b/-e/-f differs from --bytes MIN:MAX:xF"; fail=1; }
exit $fail
