#!/usr/bin/env bash
# The main job on a bundled example: installs what is needed, builds, and synthesizes every
# reduction program (size <= 5) for each placement of axes [4 16], reducing axis 0, on the
# paper's 4-node A100 system.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
./build/bin/p2v synth --system examples/systems/a100-4node.json --axes 4,16 --reduce 0
