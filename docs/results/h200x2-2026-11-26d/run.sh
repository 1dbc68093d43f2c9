#!/usr/bin/env bash
# Issue 10: one process driving two GPUs (GPT decoder bf16 cut in two), every policy, PUMP_VERIFY off and poison.
nvidia-smi --query-gpu=index,name,memory.total,memory.free --format=csv > $OUT/gpu.txt
timeout 570 python3 tests/gpu/torch/check_multi_gpu.py --libpump $PWD/.device/lib/libpump.so --mode two-gpu --model transformer --dtype bf16 \
  --steps 12 --policies none,lazy,eager,lru,activations,learned --verify off,poison --out $OUT/two-gpu > $OUT/two-gpu.txt 2>&1
