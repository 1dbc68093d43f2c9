#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs pump-bench comparing every
# policy at oversubscription 1 (fits), 1.5, 2 and 3. Where no GPU is present it runs
# on the simulated GPU (the sim backend, calibrated on an H100). Results land in
# build/results/ (table, JSON, CSV, and a PNG plot where matplotlib is available); the
# last lines it prints name each file.
# Extra arguments go to pump-bench, e.g.  bash scripts/run.sh --workload mlp
set -euo pipefail  # pipefail: pump-bench's status survives the tee
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
# For tests (tests/bench): PUMP_RUN_NO_SETUP=1 skips setup and build, PUMP_RUN_BENCH
# names the pump-bench to run, PUMP_RUN_RESULTS the folder instead of build/results.
bench=${PUMP_RUN_BENCH:-./build/release/bin/pump-bench}
out=${PUMP_RUN_RESULTS:-build/results}
if [ "${PUMP_RUN_NO_SETUP:-0}" != 1 ]; then
  bash scripts/setup.sh
  # The plot (PNG) is drawn with matplotlib; without it the run goes on without --plot.
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null 2>&1 ||
    echo "pump: python3-matplotlib could not be installed: no plot this time"
  cmake --preset release >/dev/null
  cmake --build --preset release -j"$(nproc)"
fi
mkdir -p "$out"
# pump-bench refuses --plot up front when no python3 it can use has matplotlib.
plot=()
if python3 -c 'import matplotlib' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  plot=(--plot "$out/pump-bench.png")
fi
# Files from an earlier run must not pass for this one's.
rm -f "$out/pump-bench.png" "$out/pump-bench.json" "$out/pump-bench.csv"
status=0
"$bench" \
  --workload training-loop,mlp,conv,llama-decode \
  --oversubscription 1,1.5,2,3 \
  --policies none,eager,lazy,lru,activations,learned \
  --datapath vmm,copy,um \
  --json "$out/pump-bench.json" \
  --csv "$out/pump-bench.csv" \
  "${plot[@]}" \
  "$@" | tee "$out/pump-bench.txt" || status=$?
echo
echo "pump: results (pump-bench exit status $status):"
echo "  table: $out/pump-bench.txt"
for f in json csv; do
  if [ -f "$out/pump-bench.$f" ]; then echo "  ${f^^}:  $out/pump-bench.$f"; else echo "  ${f^^}:  not written (see the messages above)"; fi
done
if [ -f "$out/pump-bench.png" ]; then echo "  plot:  $out/pump-bench.png"
else echo "  plot:  none (python3-matplotlib is not available)"; fi
exit "$status"
