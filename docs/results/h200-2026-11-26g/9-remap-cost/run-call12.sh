#!/usr/bin/env bash
# Fourteenth session, call 12: the two probes again after the review's mends (the populate checked by a write after it and
# timed on the device; the launcher's rate alone taken before the discards, its slowest launch only while they run).
R=$OUT/r12; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
for p in discard_parallel_probe remap_cost_probe; do
  nvcc -O2 -std=c++17 -arch=sm_90 -o $R/$p tests/gpu/$p.cu -lcuda && timeout 120 $R/$p | tee $R/$p.txt; rm -f $R/$p
done
tar czf $OUT/r12.tgz -C $OUT r12 && rm -rf $R
