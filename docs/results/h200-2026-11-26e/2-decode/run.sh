#!/usr/bin/env bash
# Twelfth session, call 2. Llama-shaped bf16 decode, 6.5 GiB of weights, budget half (3.25 GiB): native, HF accelerate's
# offload at the same budget, pump lru and learned under PUMP_POPULATE prefetch (default) and auto. 8 tokens each.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
args="--weights-gib 6.5 --tokens 8"
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt)"; }
budget_left() { [ $SECONDS -lt 470 ]; }
timeout 120 python3 tests/gpu/torch/decode_steps.py $args > $R/native.txt 2> $R/native.err; show native $?
timeout 120 python3 tests/gpu/torch/decode_steps.py $args --offload accelerate --gpu-budget-gib 3.25 > $R/accelerate.txt 2> $R/accelerate.err; show accelerate $?
for run in lru:prefetch lru:auto learned:auto learned:prefetch; do
  budget_left || { echo "skipped $run (time)"; continue; }
  pol=${run%:*}; pop=${run#*:}
  LD_PRELOAD=$LIB PUMP_POLICY=$pol PUMP_POPULATE=$pop PUMP_GPU_BUDGET=3489660928 PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/$pol-$pop.json \
    timeout 120 python3 tests/gpu/torch/decode_steps.py $args > $R/$pol-$pop.txt 2> $R/$pol-$pop.err
  show $pol-$pop $?
done
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
