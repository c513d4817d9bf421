#!/usr/bin/env bash
# Configures and builds p2v (Release) into ./build. Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
# ccache hits across clones of the repo (CI builds in a fresh clone each time).
export CCACHE_BASEDIR="$PWD"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$JOBS"
