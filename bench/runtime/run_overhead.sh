#!/bin/sh
# Measures the runtime's overhead targets with 8 ranks (docs/runtime.md): the one-step AllReduce program
# vs a direct MPI_Allreduce, and multi-step programs vs hand-written MPI calls, at 1 MiB and
# 64 MiB per rank, interleaved in the same run (medians). Then the same one-step comparison as
# `p2v run` reports it (program vs its baseline AllReduce on the same buffer and communicator).
# Usage: bench/runtime/run_overhead.sh BUILD_DIR [extra bench_runtime args]
set -e
build=${1:-build}; shift || true
mpirun="mpirun --oversubscribe --allow-run-as-root -np 8"
$mpirun "$build/bench/runtime/bench_runtime" "$@"
for b in 1M 64M; do
  it=50; [ "$b" = 64M ] && it=10
  $mpirun "$build/bin/p2v" run --system node=2,gpu=4 --axes 8 --reduce 0 --matrix "[[2,4]]" \
    --program "AllReduce@(root,Inside)" --bytes $b --iters $it --warmup 2 --no-verify | grep -E "total|baseline|program /"
done
