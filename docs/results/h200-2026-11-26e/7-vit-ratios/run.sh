#!/usr/bin/env bash
# Twelfth session, call 8. ViT-B/16 training fp32 (zoo.py, outside tests/, never tuned for) under pump-bench at ratios
# 1, 1.5 and 3 (x2 is call 4), none, lru and learned; link measured in the same run; every row checked against native.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r7; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
timeout 560 .device/bin/pump-bench --libpump $LIB --plugin-dir .device/lib/pump --oversubscription 1,1.5,3 --policies none,lru,learned \
  --repeats 1 --json $R/vit.json -- python3 .device/zoo.py --model vit --steps 8 > $R/vit.txt 2>&1
echo "rc=$?"; grep -E "^python3 |^workload|^WORKLOAD|bound" $R/vit.txt | head -40
tar czf $OUT/r7.tgz -C $OUT r7 && rm -rf $R
