#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs pump-bench comparing every
# policy at oversubscription 1 (fits), 1.5, 2 and 3. Where no GPU is present it runs
# on the simulated GPU (the sim backend, calibrated on an H100). Results land in
# build/results/ (table, JSON, CSV, and a PNG plot where matplotlib is available).
# Extra arguments go to pump-bench, e.g.  bash scripts/run.sh --workload mlp
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
bash scripts/setup.sh
# The plot (PNG) is drawn with matplotlib; without it pump-bench says so and skips it.
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null 2>&1 ||
  echo "pump: python3-matplotlib could not be installed: no plot this time"
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)"
mkdir -p build/results
./build/release/bin/pump-bench \
  --workload training-loop,mlp,conv \
  --oversubscription 1,1.5,2,3 \
  --policies none,eager,lazy,lru,activations,learned \
  --datapath copy,um \
  --json build/results/pump-bench.json \
  --csv build/results/pump-bench.csv \
  --plot build/results/pump-bench.png \
  "$@" | tee build/results/pump-bench.txt
