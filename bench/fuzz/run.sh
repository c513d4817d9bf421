#!/usr/bin/env bash
# The long fuzz run (CI runs the short one, scripts/fuzz.sh): every reader of p2v for SECONDS
# each (default 600) under ASan and UBSan, with libFuzzer's corpus kept in build-fuzz/corpus
# between runs. Prints per reader the inputs run, and fails on the first crash, hang or
# unexpected exception (input in build-fuzz/artifacts).
#
#   bench/fuzz/run.sh [SECONDS_PER_READER]      e.g. bench/fuzz/run.sh 3600
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_READER=${1:-600}
KEEP_CORPUS=1 RUNS=-1 MAX_TIME="$SECONDS_PER_READER" SEED="${SEED:-$(date +%s)}" exec ./scripts/fuzz.sh
