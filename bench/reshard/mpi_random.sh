#!/usr/bin/env bash
# Target (docs/reshard.md): 100 random problems in the paper's style (mesh a=2,b=2,c=2, up to 5-D arrays)
# run on 8 MPI ranks with every element checked, for p2v's program and the naive baseline.
# Usage: bench/reshard/mpi_random.sh [N] [SEED]   (P2V=path/to/p2v, default build/bin/p2v)
set -euo pipefail
cd "$(dirname "$0")/../.."
P2V=${P2V:-build/bin/p2v}
exec mpirun --oversubscribe --allow-run-as-root -np 8 "$P2V" reshard --run --random "${1:-100}" --seed "${2:-1}"
