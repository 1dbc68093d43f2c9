#!/usr/bin/env bash
# Fourteenth session, call 7. Issue 11's training ratios and issue 8's near fit, on the H200 with today's main:
# GPT decoder fp32 at x1.5 and x3 (none, lru, learned), and the Llama-shaped decode near fit (footprint / 1.02: none,
# lru), under pump-bench (native first for the footprint; link rates measured in the same run; every row checked
# against native's checksum; PUMP_MANAGED_LIMIT set by pump-bench to half the free memory).
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r7; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
timeout 330 .device/bin/pump-bench --libpump $LIB --plugin-dir .device/lib/pump --oversubscription 1.5,3 --policies none,lru,learned \
  --repeats 1 --json $R/gpt.json -- python3 tests/gpu/torch/train_steps.py --model transformer --steps 8 > $R/gpt.txt 2>&1
echo "gpt rc=$?"; grep -E "^(workload|python3|link)| x1| x3" $R/gpt.txt | head -20
timeout $((570 - SECONDS)) .device/bin/pump-bench --libpump $LIB --plugin-dir .device/lib/pump --oversubscription 1.02 --policies none,lru \
  --repeats 1 --json $R/decode.json -- python3 tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10 > $R/decode.txt 2>&1
echo "decode rc=$?"; grep -E "^(workload|python3|link)| x1" $R/decode.txt | head -12
tar czf $OUT/r7.tgz -C $OUT r7 && rm -rf $R
