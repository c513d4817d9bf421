#!/usr/bin/env bash
# Configures and builds p2v (Release) into ./build. Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$JOBS"
