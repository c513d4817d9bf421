#!/usr/bin/env bash
# p2v synth --certify: certificates written as produced, MANIFEST.json last, and --resume
# (issue 26, item 4). A run killed after its first placement's certificates leaves no manifest and
# `p2v check` says the run did not finish; `--resume` keeps what the checker accepts, solves the
# rest, and ends with the same files as an uninterrupted run (equal up to the solvers' timings),
# which `p2v check` accepts. A damaged or missing certificate is redone. Usage: certify_resume.sh BIN_DIR
set -uo pipefail
P2V=$1/p2v
T=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null; rm -rf "$T"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
PROB=(--system node=2,gpu=2,cpu=2 --axes 2,4 --reduce 1)  # 3 placements, about 2 s of solving each

# certificates without the solvers' timings, for comparing two runs
norm() {
  python3 - "$1" <<'PY'
import json, os, sys
d = sys.argv[1]
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if "seconds" not in k}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
for f in sorted(os.listdir(d)):
    if f.endswith(".json") and f != "MANIFEST.json":
        print(f, json.dumps(strip(json.load(open(os.path.join(d, f)))), sort_keys=True))
PY
}

"$P2V" synth "${PROB[@]}" --certify "$T/full" >/dev/null || bad "uninterrupted --certify"
n=$(ls "$T/full" | grep -c 'json$')
k=$(ls "$T"/full/m1-1-2_2-2-1-d-shape-p*.json | wc -l)  # the first placement's certificates

# 1. killed by a signal once the first placement's certificates are written
"$P2V" synth "${PROB[@]}" --certify "$T/int" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 400); do
  [ "$(ls "$T"/int/m1-1-2_2-2-1-d-shape-p*.json 2>/dev/null | wc -l)" -ge "$k" ] && break
  sleep 0.05
done
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
had=$(ls "$T/int" | grep -c 'json$')
echo "killed with $had of $n files written"
if [ -f "$T/int/MANIFEST.json" ]; then
  echo "note: the run finished before the signal; the signal case checks less this time"
else
  ls "$T/int" | grep -q '\.tmp' && bad "a temporary file was left behind"
  "$P2V" check "$T/int" >"$T/check1.out" 2>&1
  rc=$?
  [ $rc = 1 ] || bad "check of an interrupted directory: exit $rc, expected 1"
  grep -q "MANIFEST.json: missing: the run that wrote these .* did not finish" "$T/check1.out" ||
    bad "check of an interrupted directory does not say the run did not finish: $(cat "$T/check1.out")"
  "$P2V" synth "${PROB[@]}" --certify "$T/int" --resume >"$T/resume.out" || bad "--resume after the signal"
  grep -q "kept from the interrupted run (re-checked by the independent checker)" "$T/resume.out" ||
    echo "note: no placement was complete when the signal came"
fi
"$P2V" check "$T/int" >/dev/null || bad "p2v check rejects the resumed directory"
diff <(norm "$T/full") <(norm "$T/int") >/dev/null || bad "the resumed run's certificates differ from the uninterrupted run's"

# 2. deterministic damage: no manifest, one placement's certificates gone, one file of another
#    placement corrupted; --resume redoes exactly those two placements
cp -r "$T/full" "$T/dmg"
rm "$T/dmg/MANIFEST.json" "$T"/dmg/m1-2-1_2-1-2-d-shape-p000*.json
python3 - "$T/dmg" <<'PY'
import glob, json, sys
f = sorted(glob.glob(sys.argv[1] + "/m2-1-1_1-2-2-d-shape-p*.json"))[1]
j = json.load(open(f)); j["program"] = "AllReduce@(root,Inside)"; json.dump(j, open(f, "w"))
PY
before=$(stat -c %Y "$T"/dmg/m1-1-2_2-2-1-d-shape-p0000.json)
sleep 1
"$P2V" synth "${PROB[@]}" --certify "$T/dmg" --resume --progress >"$T/dmg.out" 2>"$T/dmg.err" || bad "--resume after damage"
grep -q "$k kept from the interrupted run" "$T/dmg.out" || bad "--resume did not keep exactly the intact placement ($k files): $(tail -1 "$T/dmg.out")"
[ "$(stat -c %Y "$T"/dmg/m1-1-2_2-2-1-d-shape-p0000.json)" = "$before" ] || bad "an intact certificate was rewritten"
grep -q "certify \[\[1 1 2\] \[2 2 1\]\]: states closed" "$T/dmg.err" && bad "the intact placement was solved again"
grep -q "certify \[\[1 2 1\] \[2 1 2\]\]: states closed" "$T/dmg.err" || bad "the placement with missing files was not solved"
grep -q "certify \[\[2 1 1\] \[1 2 2\]\]: states closed" "$T/dmg.err" || bad "the placement with a damaged file was not solved"
"$P2V" check "$T/dmg" >/dev/null || bad "p2v check rejects the repaired directory"
diff <(norm "$T/full") <(norm "$T/dmg") >/dev/null || bad "the repaired certificates differ from the uninterrupted run's"

# 3. usage errors
"$P2V" synth "${PROB[@]}" --certify "$T/full" --resume >/dev/null 2>"$T/err" && bad "--resume of a complete run accepted"
grep -q "the run is complete (its MANIFEST.json exists); nothing to resume" "$T/err" || bad "complete run: $(cat "$T/err")"
"$P2V" synth "${PROB[@]}" --resume >/dev/null 2>"$T/err" && bad "--resume without --certify accepted"
grep -q "p2v: error: --resume needs --certify DIR" "$T/err" || bad "--resume alone: $(cat "$T/err")"
[ $fail = 0 ] && echo "ok: interrupted and damaged certificate directories resume to the uninterrupted run's certificates"
exit $fail
