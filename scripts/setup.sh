#!/usr/bin/env bash
# Installs what pump needs to build on a fresh Debian machine (as root, or with sudo).
# The CUDA 13 toolkit with cuDNN 9 is expected at /usr/local/cuda; without it only the
# sim-backed parts build (the configure step says so). clang-format-14 and clang-tidy-14
# are for scripts/format.sh, scripts/check_format.sh and scripts/tidy.sh (CI runs the
# check and tidy): pinned to 14, the version the tree is checked against.
set -euo pipefail
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build libboost-dev libgtest-dev libgmock-dev libbenchmark-dev \
  nlohmann-json3-dev libcli11-dev \
  binutils python3 clang-format-14 clang-tidy-14 >/dev/null
echo "pump: build dependencies installed"
