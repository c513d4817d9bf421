#!/usr/bin/env bash
# Runs the whole test suite: installs what is needed, builds (with warnings as errors), runs CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/check-format.sh
./scripts/build.sh -DP2V_WERROR=ON
cd build
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900
