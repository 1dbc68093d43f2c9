#!/usr/bin/env bash
# Fence memo A/B: old = libpump.so of main before da50cba (copied to .device/old/), new = da50cba, interleaved,
# learned and lru, decode and GPT fp32 at half; then launch_cost.py while everything fits.
R=$OUT/d; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
export PUMP_PLUGIN_DIR=$PWD/.device/lib/pump
fp=8053063680
for pol in learned lru; do for lib in old new; do
  L=$PWD/.device/$([ $lib = old ] && echo old || echo lib)/libpump.so
  LD_PRELOAD=$L PUMP_POLICY=$pol PUMP_GPU_BUDGET=3489660928 PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/decode-$pol-$lib.json \
    timeout 90 python3 tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10 > $R/decode-$pol-$lib.txt 2> $R/decode-$pol-$lib.err
done; done
for pol in learned lru; do for lib in old new; do
  L=$PWD/.device/$([ $lib = old ] && echo old || echo lib)/libpump.so
  LD_PRELOAD=$L PUMP_POLICY=$pol PUMP_GPU_BUDGET=$((fp / 2)) PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/gpt-$pol-$lib.json \
    timeout 90 python3 tests/gpu/torch/train_steps.py --model transformer --steps 8 > $R/gpt-$pol-$lib.txt 2>$R/gpt-$pol-$lib.err
done; done
timeout 250 python3 tests/gpu/torch/launch_cost.py --libpump $PWD/.device/lib/libpump.so --model densenet121-small --rounds 2 \
  --policies lru,learned --no-watched --out $R/launch-cost > $R/launch-cost.txt 2>&1
