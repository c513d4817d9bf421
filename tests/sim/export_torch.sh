#!/usr/bin/env bash
# p2v export --format torch (docs/step.md): every program of node=2,gpu=4 --axes 8 --reduce 0, run by
# 8 gloo processes and compared with a plain all_reduce on every rank; then a sabotaged module
# must fail the check. Skips (exit 77) only when torch cannot be imported.
set -euo pipefail
P2V="$1"
PY=""
for c in /usr/bin/python3 python3; do
  if "$c" -c "import torch" >/dev/null 2>&1; then PY="$c"; break; fi
done
if [ -z "$PY" ]; then
  echo "SKIP: no python3 can import torch (apt-get install python3-torch)"
  exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$P2V" export --format torch --system node=2,gpu=4 --axes 8 --reduce 0 --all-programs -o "$T/all.py"
"$PY" "$T/all.py" --check --nproc 8
# The same from synth --json, one program picked by name; a module that drops the AllReduce's
# result must fail its check.
"$P2V" synth --system node=2,gpu=4 --axes 8 --reduce 0 --json > "$T/synth.json"
"$P2V" export --format torch --system node=2,gpu=4 --axes 8 --reduce 0 --program-file "$T/synth.json" \
  --program "AllReduce@(node,Inside) ; AllReduce@(node,Parallel(root))" -o "$T/one.py"
grep -q '"AllReduce@(node,Inside) ; AllReduce@(node,Parallel(root))"' "$T/one.py"
sed 's/            x\[before\] = buf$/            x[before] = buf * 0/' "$T/one.py" > "$T/bad.py"
! cmp -s "$T/one.py" "$T/bad.py"
if "$PY" "$T/bad.py" --check --nproc 8 > "$T/bad.out" 2>&1; then
  echo "FAIL: the sabotaged module passed its check"; exit 1
fi
grep -q "differs from all_reduce" "$T/bad.out"
echo "export_torch: ok"
