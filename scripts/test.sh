#!/usr/bin/env bash
# The test command: installs dependencies (scripts/setup.sh), builds the release
# preset and runs every test that needs no GPU. GPU tests carry the ctest label
# "gpu"; on a machine with a GPU run `ctest --preset gpu` after this.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)"
ctest --preset release -j"$(nproc)"
