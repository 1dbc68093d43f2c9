#!/usr/bin/env bash
# Fourteenth session, calls 9 and 10 (10: chunks of 2, 8, 32 and 128 MiB). tests/gpu/remap_cost_probe.cu: 1 GiB freed and backed again by unified memory (discard, then
# populate by prefetch) against the virtual memory API (unmap 2 MiB chunks, map them again), each with another thread
# launching empty kernels all along. SAFETY: 1 GiB managed, then 1 GiB of device memory.
R=$OUT/r9; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
nvcc -O2 -std=c++17 -arch=sm_90 -o $R/probe tests/gpu/remap_cost_probe.cu -lcuda && timeout 200 $R/probe | tee $R/probe.txt
rm -f $R/probe; tar czf $OUT/r9.tgz -C $OUT r9 && rm -rf $R
