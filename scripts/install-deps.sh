#!/usr/bin/env bash
# Installs p2v's build and test dependencies from Debian 12's packages (run as root).
# CUDA and NCCL are used from /usr/local/cuda when present; they are not installable here.
set -euo pipefail
PKGS=(cmake g++ make ccache libfmt-dev nlohmann-json3-dev libcli11-dev doctest-dev libboost-graph-dev
      libz3-dev libcvc5-dev libopenmpi-dev openmpi-bin libbenchmark-dev hyperfine time
      python3-torch clang-format clang libclang-rt-14-dev)  # clang + its sanitizer and libFuzzer runtimes: scripts/fuzz.sh
missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
