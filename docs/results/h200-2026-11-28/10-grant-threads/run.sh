#!/usr/bin/env bash
# Twenty-first session, call 10: grant_wait_probe with grants from 4 and 16 threads at once, and one grant over all
# 16 chunks, while device-to-host copies run: do the waits overlap?
# SAFETY: the probe maps at most 2.5 GiB and pins 512 MiB.
R=$OUT/r10; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
timeout 120 .device/bin/grant_wait_probe > $R/grant_wait_probe.txt 2>&1; echo "rc=$?" >> $R/grant_wait_probe.txt
grep -A2 "^copies out only" $R/grant_wait_probe.txt | grep -v "each grant" | cut -c1-200
tar czf $OUT/r10.tgz -C $OUT r10 && rm -rf $R
