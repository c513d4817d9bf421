#!/usr/bin/env bash
# Runs the whole test suite: installs what is needed, builds (with warnings as errors), runs CTest,
# then fuzzes every file reader under ASan/UBSan (scripts/fuzz.sh; P2V_SKIP_FUZZ=1 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/check-format.sh
./scripts/build.sh -DP2V_WERROR=ON
cd build
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900
cd ..
if [ "${P2V_SKIP_FUZZ:-0}" != 1 ]; then ./scripts/fuzz.sh; fi
