#!/bin/sh
# End-to-end cases for `p2v run`, launched with mpirun as a user would. Usage: cases.sh CASE.
# Environment (set by CTest): P2V (the binary), MPIRUN (mpirun with flags), SYS (examples/systems),
# WORK (scratch directory). Exit 0 = pass, 77 = skipped, anything else = fail.
set -u -f
case_name=$1
FIG2A="--system $SYS/fig2a.json --axes 4,4 --reduce 1 --matrix [[1,2,1,2],[1,1,2,2]]"
RS_AR_AG="ReduceScatter@(cpu,Inside) ; AllReduce@(cpu,Parallel(server)) ; AllGather@(cpu,Inside)"
SMALL="--bytes 4K --iters 1 --warmup 0"
out="$WORK/$case_name.out"

# expect RC REGEX COMMAND...: COMMAND must exit with RC and its output must match REGEX (ERE).
expect() {
  want=$1; regex=$2; shift 2
  "$@" >"$out" 2>&1
  rc=$?
  cat "$out"
  if [ "$rc" -ne "$want" ]; then echo "FAIL: exit code $rc, expected $want" >&2; exit 1; fi
  if ! tr '\n' ' ' <"$out" | grep -Eq -- "$regex"; then echo "FAIL: output does not match /$regex/" >&2; exit 1; fi
  exit 0
}

# all NP NAME SYNTH-ARGS...: every synthesized program, each checked after every step.
all() {
  np=$1; name=$2; shift 2
  "$P2V" synth "$@" --json >"$WORK/$name.json" || exit 3
  n=$(grep -c '"notation"' "$WORK/$name.json")
  expect 0 "all $n programs verified" $MPIRUN -np "$np" "$P2V" run --program-file "$WORK/$name.json" $SMALL --no-baseline
}

case "$case_name" in
  all_fig2a_reduce1) all 16 fig2a_r1 --system "$SYS/fig2a.json" --axes 4,4 --reduce 1 ;;
  all_fig2a_reduce0) all 16 fig2a_r0 --system "$SYS/fig2a.json" --axes 4,4 --reduce 0 ;;
  all_8ranks_2axes) all 8 n2g4_r1 --system node=2,gpu=4 --axes 2,4 --reduce 1 ;;
  all_8ranks_master_all) all 8 n2g4_all --system node=2,gpu=4 --axes 8 --reduce 0 --master-collectives all ;;
  threads_all_fig2a_reduce0)
    # One process, a thread per device (the single-process path NCCL also uses).
    "$P2V" synth --system "$SYS/fig2a.json" --axes 4,4 --reduce 0 --max-size 6 --json >"$WORK/threads_r0.json" || exit 3
    n=$(grep -c '"notation"' "$WORK/threads_r0.json")
    expect 0 "backend threads.*all $n programs verified" "$P2V" run --backend threads --program-file "$WORK/threads_r0.json" $SMALL --no-baseline ;;
  threads_fault_caught)
    expect 1 "after step 3 \(AllGather\): rank 7, chunk 0" \
      "$P2V" run --backend threads $FIG2A --program "$RS_AR_AG" --inject-fault 3:7 $SMALL ;;
  fault_step_outside)
    expect 2 "p2v: error: --inject-fault 9:0: STEP is a step from 1 to 3 of program" \
      "$P2V" run --backend threads $FIG2A --program "$RS_AR_AG" --inject-fault 9:0 $SMALL ;;
  fault_rank_outside)
    expect 2 "p2v: error: --inject-fault 1:99: RANK is a rank from 0 to 15 \(the system has 16 devices\)" \
      "$P2V" run --backend threads $FIG2A --program "$RS_AR_AG" --inject-fault 1:99 $SMALL ;;
  fault_step_zero)
    expect 2 "p2v: error: --inject-fault STEP: expected an integer from 1 to [0-9]+, got '0'" \
      "$P2V" run --backend threads $FIG2A --program "$RS_AR_AG" --inject-fault 0:0 $SMALL ;;
  fault_rank_missing)
    expect 2 "p2v: error: --inject-fault RANK: expected an integer from 0 to [0-9]+, got ''" \
      "$P2V" run --backend threads $FIG2A --program "$RS_AR_AG" --inject-fault 1: $SMALL ;;
  fault_without_check)
    expect 2 "p2v: error: --inject-fault needs the checked run" \
      "$P2V" run --backend threads $FIG2A --program "$RS_AR_AG" --inject-fault 1:0 --no-verify $SMALL ;;
  threads_bytes_too_large)
    expect 2 "p2v: error: --bytes 1099511627776: 16 devices in this process x 3 buffers of 1099511627776 bytes" \
      "$P2V" run --backend threads $FIG2A --program "$RS_AR_AG" --bytes 1T --iters 1 --warmup 0 ;;
  ranks_disagree_program)
    # Two halves of one MPI job given different programs (MPMD launch): before the first
    # collective every rank compares its run with rank 0's; all stop with exit 2 instead of hanging.
    expect 2 "p2v: error: rank 8 was started with a different program or options than rank 0 \(rank 0: program 1: ReduceScatter.*; rank 8: program 1: AllReduce@\(rack,Inside\)" \
      $MPIRUN -np 8 "$P2V" run $FIG2A --program "$RS_AR_AG" $SMALL : -np 8 "$P2V" run $FIG2A \
      --program "AllReduce@(rack,Inside)" $SMALL ;;
  ranks_disagree_bytes)
    expect 2 "p2v: error: rank 1 was started with a different program or options than rank 0 \(rank 0: --bytes 4096; rank 1: --bytes 8192" \
      $MPIRUN -np 1 "$P2V" run $FIG2A --program "$RS_AR_AG" $SMALL : -np 15 "$P2V" run $FIG2A \
      --program "$RS_AR_AG" --bytes 8K --iters 1 --warmup 0 ;;
  nccl_programs)
    # Every program of a 4-device system on NCCL, one rank per GPU; skipped without 4 GPUs.
    "$P2V" synth --system node=2,gpu=2 --axes 4 --reduce 0 --json >"$WORK/nccl4.json" || exit 3
    n=$(grep -c '"notation"' "$WORK/nccl4.json")
    $MPIRUN -np 4 "$P2V" run --backend nccl --program-file "$WORK/nccl4.json" $SMALL >"$out" 2>&1
    rc=$?; cat "$out"
    if grep -Eq "needs (a )?CUDA GPU|built without NCCL|GPUs \(one rank per GPU\)" "$out"; then echo "no GPUs: skipped"; exit 77; fi
    [ $rc -eq 0 ] && grep -q "all $n programs verified" "$out" || { echo "FAIL"; exit 1; } ;;
  nccl_single_process_without_gpu)
    expect 2 "NCCL" "$P2V" run --backend nccl $FIG2A --program "$RS_AR_AG" $SMALL ;;
  all_8ranks_3levels) all 8 three --system a=2,b=2,c=2 --axes 2,2,2 --reduce 0,2 ;;

  rs_ar_ag_float32_csv)
    csv="$WORK/timing.csv"; pcsv="$WORK/programs.csv"; rm -f "$csv" "$pcsv"
    $MPIRUN -np 16 "$P2V" run $FIG2A --program "$RS_AR_AG" --bytes 256K --iters 3 --warmup 1 \
      --dtype float32 --csv "$csv" --csv-programs "$pcsv" >"$out" 2>&1 || { cat "$out"; exit 1; }
    cat "$out" "$csv" "$pcsv"
    head -1 "$csv" | grep -q '^collective,groups,bytes,seconds,' || { echo "FAIL: CSV header"; exit 1; }
    [ "$(grep -vc '^#' "$csv")" -eq 5 ] || { echo "FAIL: expected a header and 4 rows"; exit 1; }
    grep -q '^ReduceScatter,"0-1|2-3|4-5|6-7|8-9|10-11|12-13|14-15",262144,' "$csv" || { echo "FAIL: RS row"; exit 1; }
    grep -q '^AllReduce,"0 4|1 5|2 6|3 7|8 12|9 13|10 14|11 15",131072,' "$csv" || { echo "FAIL: AR row"; exit 1; }
    head -1 "$pcsv" | grep -q '^program,seconds,matrix' || { echo "FAIL: programs CSV header"; exit 1; }
    # Communicators: one split per step with new groups (step 3 reuses step 1's) + the baseline.
    grep -q "communicator splits: 3" "$out" || { echo "FAIL: communicator cache"; exit 1; }
    grep -q "program / baseline" "$out" || exit 1
    # p2v calibrate / simulate read these files (when the simulator is built).
    if "$P2V" calibrate --help >/dev/null 2>&1; then
      "$P2V" simulate --system "$SYS/fig2a.json" --axes 4,4 --reduce 1 --matrix "[[1,2,1,2],[1,1,2,2]]" \
        --measurements "$csv" --measured-programs "$pcsv" >"$WORK/sim.out" 2>&1 || { cat "$WORK/sim.out"; echo "FAIL: simulate cannot read the CSVs"; exit 1; }
    fi ;;
  simulate_json_program_file)
    "$P2V" simulate --help >/dev/null 2>&1 || { echo "no simulator: skipped"; exit 77; }
    "$P2V" simulate --system "$SYS/fig2a.json" --axes 4,4 --reduce 1 --json --top 3 >"$WORK/sim.json" || exit 3
    # Every matrix's 3 best predicted programs (4 matrices); --top 2 keeps 2 of each.
    expect 0 "all 8 programs verified" $MPIRUN -np 16 "$P2V" run --program-file "$WORK/sim.json" --top 2 $SMALL --no-baseline ;;
  one_step_allreduce)
    expect 0 "1 AllReduce .*baseline AllReduce" $MPIRUN -np 8 "$P2V" run --system node=2,gpu=4 --axes 8 --reduce 0 \
      --matrix "[[2,4]]" --program "AllReduce@(root,Inside)" --bytes 1M --iters 3 --warmup 1 ;;
  text_program_file)
    printf '# two programs\nAllReduce@(root,Inside)\nReduceScatter@(gpu,Inside) ; AllReduce@(gpu,Parallel(root)) ; AllGather@(gpu,Inside)\n' \
      | sed 's/gpu/node/g' >"$WORK/progs.txt"
    expect 0 "all 2 programs verified" $MPIRUN -np 8 "$P2V" run --system node=2,gpu=4 --axes 8 --reduce 0 \
      --matrix "[[2,4]]" --program-file "$WORK/progs.txt" $SMALL ;;

  check_plan)
    # --check-plan: every rank compares its own plan with its part of the global plan first.
    expect 0 "every rank's own plan equals its part of the global plan.*step 2 AllGather on 8 x 2 \[cpu.1\].*rank   0: member 0/2 of group 0 -> units \{0,2\}.*members as strided boxes.*verified after every step" \
      $MPIRUN -np 16 "$P2V" run $FIG2A --program "ReduceScatter@(rack,Inside) ; AllGather@(cpu,Parallel(server)) ; AllGather@(cpu,Inside)" \
      --check-plan --show-plan $SMALL ;;
  wrong_program_caught)
    expect 1 "RESULT MISMATCH.*goal: the sum over the reduction group\): rank 0, chunk 0" \
      $MPIRUN -np 16 "$P2V" run $FIG2A --program "AllReduce@(cpu,Inside)" --unchecked $SMALL ;;
  corrupted_step_caught)
    expect 1 "after step 2 \(AllReduce\): rank 5, chunk 8" \
      $MPIRUN -np 16 "$P2V" run $FIG2A --program "$RS_AR_AG" --inject-fault 2:5 $SMALL ;;
  invalid_program_refused)
    expect 2 "step 2 \(AllReduce\) is not valid here" \
      $MPIRUN -np 16 "$P2V" run $FIG2A --program "AllReduce@(cpu,Inside) ; AllReduce@(cpu,Inside)" ;;
  missing_goal_refused)
    expect 2 "does not reach the goal" $MPIRUN -np 16 "$P2V" run $FIG2A --program "AllReduce@(cpu,Inside)" ;;
  wrong_rank_count)
    expect 2 "has 16 devices but 8 ranks were launched" \
      $MPIRUN -np 8 "$P2V" run $FIG2A --program "AllReduce@(rack,Inside)" ;;
  program_for_other_system)
    expect 2 "is not an instruction of this placement" $MPIRUN -np 8 "$P2V" run --system node=2,gpu=4 \
      --axes 2,4 --reduce 1 --matrix "[[1,2],[2,2]]" --program "$RS_AR_AG" ;;
  program_file_for_other_system)
    "$P2V" synth --system "$SYS/fig2a.json" --axes 4,4 --reduce 1 --json >"$WORK/other.json" || exit 3
    expect 2 "is for system fig2a .* not for --system" $MPIRUN -np 8 "$P2V" run --system node=2,gpu=4 \
      --axes 2,4 --reduce 1 --program-file "$WORK/other.json" ;;
  nccl_without_gpu)
    expect 2 "NCCL" $MPIRUN -np 8 "$P2V" run --system node=2,gpu=4 --axes 8 --reduce 0 --matrix "[[2,4]]" \
      --program "AllReduce@(root,Inside)" --backend nccl ;;
  certificate_tampered)
    dir="$WORK/certs"; rm -rf "$dir"; mkdir -p "$dir"
    # A real certificate (the shape path: p2v-shape-certificate/1) of RS ; AR ; AG on [1 2 4].
    if ! "$P2V" synth --system node=2,gpu=4 --axes 8 --reduce 0 --matrix "[[2,4]]" --max-size 3 --certify "$dir" \
        >"$out" 2>&1; then
      cat "$out"; echo "p2v synth --certify failed (a build without the SMT encodings?): skipped"; exit 77
    fi
    cert=$(grep -l '"program": "ReduceScatter@(node,Inside) ; AllReduce@(node,Parallel(root)) ; AllGather@(node,Inside)"' \
      $(find "$dir" -name '*.json' | sort) | head -1)
    [ -n "$cert" ] || { echo "FAIL: no certificate of RS ; AR ; AG in $dir"; exit 1; }
    # The genuine certificate passes and runs its program, checked.
    if ! $MPIRUN -np 8 "$P2V" run --certificate "$cert" $SMALL >"$out" 2>&1; then
      cat "$out"
      grep -q "built without the certificate checker" "$out" && { echo "no checker in this build: skipped"; exit 77; }
      echo "FAIL: genuine certificate refused"; exit 1
    fi
    grep -q "verified after every step" "$out" || { cat "$out"; echo "FAIL: not verified"; exit 1; }
    # A tampered one (two devices swapped between two lowered groups of the last step) is refused.
    python3 - "$cert" "$WORK/tampered.json" <<'PY' || exit 3
import json, sys
c = json.load(open(sys.argv[1]))
g = c["instance"]["lowered"][-1]["groups"]
g[0][-1], g[1][-1] = g[1][-1], g[0][-1]
json.dump(c, open(sys.argv[2], "w"))
PY
    expect 2 "certificate .* does not pass the independent checker" \
      $MPIRUN -np 8 "$P2V" run --certificate "$WORK/tampered.json" $SMALL ;;
  *) echo "unknown case $case_name"; exit 2 ;;
esac
