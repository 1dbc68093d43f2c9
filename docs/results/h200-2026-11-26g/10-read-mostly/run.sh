#!/usr/bin/env bash
# Fourteenth session, call 11. tests/gpu/read_mostly_probe.cu: read-duplicated managed memory as a cheap, fault-safe
# eviction of data the host holds? SAFETY: 1 GiB managed.
R=$OUT/r11; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
nvcc -O2 -std=c++17 -arch=sm_90 -o $R/probe tests/gpu/read_mostly_probe.cu && timeout 200 $R/probe | tee $R/probe.txt
rm -f $R/probe; tar czf $OUT/r11.tgz -C $OUT r11 && rm -rf $R
