#!/usr/bin/env bash
# Populate A/B: discard-and-prefetch vs prefetch (the default), lru and learned, GPT fp32 training
# and the Llama-shaped decode at half, then BERT (zoo.py, outside tests/, copied to .device/) at x2 under pump-bench.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/a; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
fp=8053063680
for pol in lru learned; do for pop in discard-and-prefetch prefetch; do
  LD_PRELOAD=$LIB PUMP_POLICY=$pol PUMP_POPULATE=$pop PUMP_GPU_BUDGET=$((fp / 2)) PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/gpt-$pol-$pop.json \
    timeout 90 python3 tests/gpu/torch/train_steps.py --model transformer --steps 8 > $R/gpt-$pol-$pop.txt 2>$R/gpt-$pol-$pop.err
done; done
for pol in lru learned; do for pop in discard-and-prefetch prefetch; do
  LD_PRELOAD=$LIB PUMP_POLICY=$pol PUMP_POPULATE=$pop PUMP_GPU_BUDGET=3489660928 PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/decode-$pol-$pop.json \
    timeout 90 python3 tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 8 > $R/decode-$pol-$pop.txt 2> $R/decode-$pol-$pop.err
done; done
timeout 30 python3 tests/gpu/torch/train_steps.py --model transformer --steps 8 > $R/gpt-native.txt 2>&1
for pop in discard-and-prefetch prefetch; do
  PUMP_POPULATE=$pop timeout 150 .device/bin/pump-bench --libpump $LIB --plugin-dir .device/lib/pump --oversubscription 2 --policies lru --repeats 1 \
    --json $R/bert-$pop.json -- python3 .device/zoo.py --model bert --steps 8 > $R/bert-$pop.txt 2>&1
done
