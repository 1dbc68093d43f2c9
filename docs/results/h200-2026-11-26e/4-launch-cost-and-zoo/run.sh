#!/usr/bin/env bash
# Twelfth session, call 4. Per-launch cost while everything fits, with the launching thread's CPU time beside the wall
# clock (launch_cost.py, densenet121-small: 2,600 kernels a step); then two programs outside tests/ (zoo.py: ViT-B/16
# training fp32 and OPT-1.3B-shaped fp16 decode) under pump-bench at x2, none against lru, bit-identical checked.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r4; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
timeout 330 python3 tests/gpu/torch/launch_cost.py --libpump $LIB --model densenet121-small --rounds 3 --steps 24 --warmup 4 \
  --policies lru,learned --no-watched --out $R/launch > $R/launch-cost.txt 2>&1
echo "launch_cost rc=$?"; tail -9 $R/launch-cost.txt
for m in vit opt; do
  [ $SECONDS -lt 470 ] || { echo "skipped $m (time)"; continue; }
  timeout $((560 - SECONDS)) .device/bin/pump-bench --libpump $LIB --plugin-dir .device/lib/pump --oversubscription 2 --policies none,lru \
    --repeats 1 --json $R/$m.json -- python3 .device/zoo.py --model $m --steps 8 > $R/$m.txt 2>&1
  echo "$m rc=$?"; grep -E "^python3 " $R/$m.txt
done
rm -f $R/launch/stats-*; tar czf $OUT/r4.tgz -C $OUT r4 && rm -rf $R
