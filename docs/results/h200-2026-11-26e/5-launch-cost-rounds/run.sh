#!/usr/bin/env bash
# Twelfth session, call 5. Per-launch cost while everything fits, the launching thread's CPU time per round: native,
# PUMP_DISABLE=1, lru and learned, on two launch-bound models (densenet121-small, transformer-small), 3 rounds x 20 steps.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r5; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
for m in densenet121-small transformer-small; do
  timeout 280 python3 tests/gpu/torch/launch_cost.py --libpump $LIB --model $m --rounds 3 --steps 24 --warmup 4 \
    --policies lru,learned --no-watched --only native,disabled,lru,learned --out $R/launch > $R/launch-cost-$m.txt 2>&1
  echo "$m rc=$?"; cat $R/launch-cost-$m.txt | grep -v "^$"
done
rm -f $R/launch/stats-*; tar czf $OUT/r5.tgz -C $OUT r5 && rm -rf $R
