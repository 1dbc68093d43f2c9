#!/usr/bin/env bash
# Builds the release preset and runs every test that needs no GPU (GPU tests carry the
# label "gpu"; run them with `ctest --preset gpu` on a machine with one).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)"
ctest --preset release -j"$(nproc)"
