#!/usr/bin/env bash
# p2v export --format msccl (issue 26 item 7). Usage: export_msccl.sh P2V SOURCE_DIR [MSCCL_TOOLS_DIR]
# Without MSCCL_TOOLS_DIR: every program of two placements is exported and run by
# scripts/msccl-check.py (structure as MSCCL's executor parses it, a deadlock-free execution, every
# chunk of every rank reduced exactly once); a sabotaged file must fail; programs MSCCL cannot
# express and --all-programs are refused with exit 2.
# With MSCCL_TOOLS_DIR (a checkout of github.com/microsoft/msccl-tools): the same files are also
# checked by msccl-tools' own AllReduce postcondition; skips (exit 77) when the directory is not
# given or not usable, saying why.
set -euo pipefail
P2V="$1"
SRC="$2"
TOOLS="${3:-}"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
CHECK=("$PY" "$SRC/scripts/msccl-check.py")
if [ "$#" -ge 3 ]; then
  if [ -z "$TOOLS" ] || [ ! -f "$TOOLS/msccl/language/__init__.py" ]; then
    echo "SKIP: msccl-tools not found (configure with -DP2V_MSCCL_TOOLS=DIR, DIR a checkout of"
    echo "      github.com/microsoft/msccl-tools; see docs/step.md 'p2v export --format msccl')"
    exit 77
  fi
  if ! "$PY" -c "import lxml" >/dev/null 2>&1; then
    echo "SKIP: $PY cannot import lxml, which msccl-tools needs (apt-get install python3-lxml)"
    exit 77
  fi
  CHECK+=(--msccl-tools "$TOOLS")
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
for case in "node=2,gpu=4|8|0|" "node=2,gpu=4|4,2|0|2 2;1 2"; do
  IFS='|' read -r sys axes red mat <<< "$case"
  margs=()
  [ -n "$mat" ] && margs=(--matrix "$mat")
  "$P2V" synth --system "$sys" --axes "$axes" --reduce "$red" "${margs[@]}" --json > "$T/s.json"
  "$PY" -c 'import json,sys; [print(p["notation"]) for r in json.load(open(sys.argv[1]))["results"] for p in r["programs"]]' \
    "$T/s.json" > "$T/progs.txt"
  while IFS= read -r prog; do
    "$P2V" export --format msccl --system "$sys" --axes "$axes" --reduce "$red" "${margs[@]}" --program "$prog" \
      -o "$T/x.xml" > /dev/null
    if ! "${CHECK[@]}" "$T/x.xml" > "$T/out" 2>&1; then
      echo "FAIL: $sys --axes $axes --reduce $red ${mat:+--matrix '$mat'} --program '$prog':"; cat "$T/out"; exit 1
    fi
    n=$((n + 1))
  done < "$T/progs.txt"
done
[ "$n" -ge 90 ] || { echo "FAIL: only $n programs checked"; exit 1; }
# A file whose first receive-reduce only receives must fail (both checkers, when msccl-tools is given).
"$P2V" export --format msccl --system node=2,gpu=4 --axes 8 --reduce 0 \
  --program "ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; AllGather@(node,Inside)" -o "$T/one.xml" > /dev/null
sed '0,/type="rrc"/s/type="rrc"/type="r"/' "$T/one.xml" > "$T/bad.xml"
! cmp -s "$T/one.xml" "$T/bad.xml"
if "${CHECK[@]}" "$T/bad.xml" > "$T/bad.out" 2>&1; then echo "FAIL: the sabotaged file passed"; exit 1; fi
grep -q "not every rank's once" "$T/bad.out"
if [ -n "$TOOLS" ]; then grep -q "FAILED (msccl-tools)" "$T/bad.out"; echo "export_msccl_tools: $n programs ok"; exit 0; fi
# Refusals: exit 2 with the reason, no file written.
set +e
"$P2V" export --format msccl --system node=16,gpu=32 --axes 512 --reduce 0 \
  --program "ReduceScatter@(root,Inside) ; AllGather@(root,Inside)" -o "$T/r.xml" 2> "$T/r.err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "more than 256 steps" "$T/r.err" && [ ! -e "$T/r.xml" ] || { echo "FAIL: 512-rank ring not refused (rc $rc)"; cat "$T/r.err"; exit 1; }
set +e
"$P2V" export --format msccl --system node=2,gpu=4 --axes 8 --reduce 0 --all-programs -o "$T/r.xml" 2> "$T/r.err"; rc=$?
set -e
[ "$rc" = 2 ] && grep -q "one algorithm per file" "$T/r.err" || { echo "FAIL: --all-programs not refused"; exit 1; }
echo "export_msccl: $n programs ok"
