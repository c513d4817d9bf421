#!/usr/bin/env bash
# p2v run: results written as measured and --resume (issue 26, item 4). A size sweep run in one go,
# the same sweep stopped by --limit and resumed, and the same sweep killed by a signal mid-run and
# resumed must end with the same runs in the CSV files, each exactly once; a resumed run prints the
# same crossover table structure. Usage: resume.sh BIN_DIR
set -uo pipefail
P2V=$1/p2v
T=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null; rm -rf "$T"' EXIT
fail=0
say() { echo "$@"; }
bad() { echo "FAIL: $*"; fail=1; }

# Ranked by the simulator: --top 3 runs the 3 best programs by predicted time.
"$P2V" simulate --system node=2,gpu=4 --axes 8 --reduce 0 --json >"$T/progs.json" || exit 2
RUN=(run --backend threads --program-file "$T/progs.json" --top 3 --bytes 1K:64K:x8 --warmup 0)

# The identity of every row: the timing columns and the last one (iters) dropped; the rest
# (collective, groups, bytes, description, system, ranks, backend, dtype, matrix, program, step, ...).
keys() { grep -v '^#' "$1" | tail -n +2 | cut -d, -f1-3,9- | sed 's/,[^,]*$//' | sort; }
prog_keys() { tail -n +2 "$1" | sed -E 's/^("[^"]*"),[^,]*,("[^"]*"),[^,]*,[^,]*,[^,]*,/\1,\2,/; s/,[^,]*$//' | sort; }

# 1. in one go
"$P2V" "${RUN[@]}" --iters 2 --csv "$T/full.csv" --csv-programs "$T/full-p.csv" >"$T/full.out" || bad "uninterrupted run"
n_full=$(grep -c '^# total' "$T/full.csv")
[ "$n_full" = 9 ] || bad "uninterrupted run: $n_full runs in the CSV, expected 9 (3 programs x 3 sizes)"

# 2. stopped by --limit after 4 runs, then resumed
"$P2V" "${RUN[@]}" --iters 2 --csv "$T/lim.csv" --csv-programs "$T/lim-p.csv" --limit 4 >"$T/lim1.out" || bad "--limit run"
[ "$(grep -c '^# total' "$T/lim.csv")" = 4 ] || bad "--limit 4 left $(grep -c '^# total' "$T/lim.csv") runs"
grep -q -- '--limit 4: stopped' "$T/lim1.out" || bad "--limit: no 'stopped' line"
"$P2V" "${RUN[@]}" --iters 2 --csv "$T/lim.csv" --csv-programs "$T/lim-p.csv" --resume >"$T/lim2.out" || bad "--resume run"
[ "$(grep -c 'already measured (--resume)' "$T/lim2.out")" = 4 ] || bad "--resume did not skip the 4 runs done"
[ "$(grep -c '^  verified after every step' "$T/lim2.out")" = 5 ] || bad "--resume did not run the 5 missing runs"
diff <(keys "$T/full.csv") <(keys "$T/lim.csv") >/dev/null || bad "--limit + --resume: the --csv rows differ from the uninterrupted run's"
diff <(prog_keys "$T/full-p.csv") <(prog_keys "$T/lim-p.csv") >/dev/null || bad "--limit + --resume: the --csv-programs rows differ"
# the crossover table is printed over all 9 runs (the skipped ones from the CSV)
for f in full.out lim2.out; do
  grep -q '^crossover: the best program per size range' "$T/$f" || bad "$f: no crossover table"
  [ "$(sed -n '/^sweep: per size/,/^$/p' "$T/$f" | grep -cE '^ +(1K|8K|64K) ')" = 3 ] || bad "$f: sweep table lacks a size"
done
# a second --resume has nothing left to do
"$P2V" "${RUN[@]}" --iters 2 --csv "$T/lim.csv" --csv-programs "$T/lim-p.csv" --resume >"$T/lim3.out" || bad "second --resume"
grep -q '^  verified after every step' "$T/lim3.out" && bad "a complete sweep ran again under --resume"
diff <(keys "$T/full.csv") <(keys "$T/lim.csv") >/dev/null || bad "second --resume changed the CSV"

# 3. killed by a signal once some runs are in the CSV, then resumed
"$P2V" "${RUN[@]}" --iters 150 --csv "$T/sig.csv" --csv-programs "$T/sig-p.csv" >"$T/sig1.out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ -f "$T/sig.csv" ] && [ "$(grep -c '^# total' "$T/sig.csv")" -ge 2 ] && break
  sleep 0.05
done
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
done_before=$(grep -c '^# total' "$T/sig.csv" 2>/dev/null || echo 0)
say "killed after $done_before of 9 runs"
if [ "$done_before" -ge 9 ]; then
  say "note: the run finished before the signal; the signal case checks nothing this time"
fi
# every file left is whole: header + complete rows (the appends are atomic)
if [ -f "$T/sig.csv" ]; then
  awk -F, '!/^#/ && NR > 1 && NF < 19 { exit 1 }' "$T/sig.csv" || bad "a partial row after the signal"
fi
ls "$T" | grep -q '\.tmp' && bad "a temporary file was left behind"
"$P2V" "${RUN[@]}" --iters 150 --csv "$T/sig.csv" --csv-programs "$T/sig-p.csv" --resume >"$T/sig2.out" || bad "--resume after the signal"
[ "$(grep -c 'already measured (--resume)' "$T/sig2.out")" -ge "$done_before" ] || bad "--resume after the signal skipped fewer runs than the CSV holds"
diff <(keys "$T/full.csv") <(keys "$T/sig.csv") || bad "signal + --resume: the --csv rows differ from the uninterrupted run's"
diff <(prog_keys "$T/full-p.csv") <(prog_keys "$T/sig-p.csv") || bad "signal + --resume: the --csv-programs rows differ"

# 4. a run recorded in --csv-programs but not in --csv (interrupted between its two appends): --resume
#    runs it again and records it in --csv alone, so neither file holds a run twice
"$P2V" "${RUN[@]}" --iters 2 --csv "$T/half.csv" --csv-programs "$T/half-p.csv" --limit 1 >/dev/null || bad "--limit 1 run"
head -n 1 "$T/half.csv" >"$T/half.csv.new" && mv "$T/half.csv.new" "$T/half.csv"  # drop the run from --csv only
"$P2V" "${RUN[@]}" --iters 2 --csv "$T/half.csv" --csv-programs "$T/half-p.csv" --resume >"$T/half.out" || bad "--resume after a lost --csv append"
diff <(keys "$T/full.csv") <(keys "$T/half.csv") >/dev/null || bad "lost --csv append + --resume: the --csv rows differ"
diff <(prog_keys "$T/full-p.csv") <(prog_keys "$T/half-p.csv") || bad "lost --csv append + --resume: the --csv-programs rows differ (a run twice?)"

# 5. usage errors
"$P2V" "${RUN[@]}" --resume >/dev/null 2>"$T/err" && bad "--resume without a CSV accepted"
grep -q 'p2v: error: --resume reads what is done from --csv or --csv-programs' "$T/err" || bad "--resume without a CSV: $(cat "$T/err")"
[ $fail = 0 ] && say "ok: uninterrupted, --limit + --resume and signal + --resume give the same runs"
exit $fail
