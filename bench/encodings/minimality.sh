#!/usr/bin/env bash
# Minimality of the shortest program, proved by both solvers, for every paper configuration (all
# matrices, hierarchy (d), L = 5): `p2v verify --minimal` asks each solver for bounds 1, 2, ...
# until one is sat and checks the length against the enumerator's.
# Usage: bench/encodings/minimality.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-build}/bin/p2v"
configs=(
  "--system examples/systems/a100-4node.json --axes 64 --reduce 0"
  "--system examples/systems/a100-4node.json --axes 4,16 --reduce 0"
  "--system examples/systems/a100-4node.json --axes 4,16 --reduce 1"
  "--system examples/systems/a100-4node.json --axes 16,2,2 --reduce 0,2"
  "--system examples/systems/a100-4node.json --axes 8,2,4 --reduce 0,2"
  "--system examples/systems/v100-4node.json --axes 2,2,8 --reduce 0,2"
)
for c in "${configs[@]}"; do
  echo "== p2v verify $c --max-size 5 --minimal --solver both"
  # shellcheck disable=SC2086
  /usr/bin/time -f "wall %e s, peak RSS %M KB" "$bin" verify $c --max-size 5 --minimal --solver both
done
