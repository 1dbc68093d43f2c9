#!/usr/bin/env bash
# One program under pump with each setting of a policy knob, interleaved over rounds;
# prints the median ms/step of each (steps after the first 2).
# usage: sweep.sh MODEL FOOTPRINT_BYTES RATIO POLICY VAR VALUE...
set -u
model=$1 footprint=$2 ratio=$3 policy=$4 var=$5; shift 5
budget=$(python3 -c "print(int($footprint / $ratio))")
free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)
limit=$((free * 1024 * 1024 / 2))   # SAFETY: half the free memory
for round in 1 2; do
  for v in "$@"; do
    ms=$(env LD_PRELOAD=$PWD/.device/lib/libpump.so PUMP_POLICY=$policy PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$limit "$var=$v" \
      timeout 120 python3 tests/gpu/torch/train_steps.py --model "$model" --steps 8 2>/dev/null |
      sed -n 's/^pump-bench: iteration_ms=//p' | tail -n +3 | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "FAILED")}')
    echo "$model x$ratio $policy $var=$v round $round: $ms ms/step"
  done
done
