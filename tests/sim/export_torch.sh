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
"$PY" "$T/all.py" --check --nproc 8 | tee "$T/real.out"
# torch 1.13 has no DeviceMesh: the module says which form it used.
if "$PY" -c "import torch.distributed.device_mesh" >/dev/null 2>&1; then
  grep -q "process groups: DeviceMesh from torch.distributed.device_mesh" "$T/real.out"
else
  grep -q "process groups: dist.new_group" "$T/real.out"
fi
# Fewer processes than ranks: 2 processes simulate 4 ranks each, every program checked.
"$PY" "$T/all.py" --check --nproc 2 | tee "$T/sim.out"
grep -q "check: every simulated rank of every program matches all_reduce" "$T/sim.out"
if "$PY" "$T/all.py" --check --nproc 3 2> "$T/n3.err"; then echo "FAIL: --nproc 3 accepted for 8 ranks"; exit 1; fi
grep -q "must be 8 (one process per rank) or divide it" "$T/n3.err"
# A simulated run whose AllReduce drops its result must fail.
sed 's/^                    x\[before\] = total$/                    x[before] = total * 0/' "$T/all.py" > "$T/simbad.py"
! cmp -s "$T/all.py" "$T/simbad.py"
if "$PY" "$T/simbad.py" --check --nproc 2 > "$T/simbad.out" 2>&1; then
  echo "FAIL: the sabotaged simulation passed its check"; exit 1
fi
grep -q "(simulated): program" "$T/simbad.out"
# The same from synth --json, one program picked by name; a module that drops the AllReduce's
# result must fail its check.
"$P2V" synth --system node=2,gpu=4 --axes 8 --reduce 0 --json > "$T/synth.json"
"$P2V" export --format torch --system node=2,gpu=4 --axes 8 --reduce 0 --program-file "$T/synth.json" \
  --program "AllReduce@(node,Inside) ; AllReduce@(node,Parallel(root))" -o "$T/one.py"
grep -q '"AllReduce@(node,Inside) ; AllReduce@(node,Parallel(root))"' "$T/one.py"
# Joining a job of 2 processes (RANK/WORLD_SIZE set, as torchrun does): simulated ranks.
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
for r in 0 1; do
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT RANK=$r WORLD_SIZE=2 "$PY" "$T/one.py" --check > "$T/env$r.out" 2>&1 &
done
wait
grep -q "check: every simulated rank of every program matches all_reduce" "$T/env0.out"
sed 's/            x\[before\] = buf$/            x[before] = buf * 0/' "$T/one.py" > "$T/bad.py"
! cmp -s "$T/one.py" "$T/bad.py"
if "$PY" "$T/bad.py" --check --nproc 8 > "$T/bad.out" 2>&1; then
  echo "FAIL: the sabotaged module passed its check"; exit 1
fi
grep -q "differs from all_reduce" "$T/bad.out"
echo "export_torch: ok"
