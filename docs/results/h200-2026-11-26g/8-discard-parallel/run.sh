#!/usr/bin/env bash
# Fourteenth session, call 8. tests/gpu/discard_parallel_probe.cu: does the driver's discard work scale with threads, and
# does it hold up another thread's launches? (The decode's worker spends 28 ms a token in discards, on the path of the
# fetch that needs their room.) SAFETY: 1 GiB managed.
R=$OUT/r8; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
nvcc -O2 -std=c++17 -arch=sm_90 -o $R/probe tests/gpu/discard_parallel_probe.cu && timeout 200 $R/probe | tee $R/probe.txt
rm -f $R/probe; tar czf $OUT/r8.tgz -C $OUT r8 && rm -rf $R
