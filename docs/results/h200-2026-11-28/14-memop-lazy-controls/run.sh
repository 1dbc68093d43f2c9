#!/usr/bin/env bash
# Twenty-first session, call 14: call 13's lazy cases again with the second review's controls. The writer thread has
# made its first CUDA call before the wait; the loading mode is printed; progress on stderr. Lazily, then with the
# kernel launched once before the wait (-warm: nothing to load), then with CUDA_MODULE_LOADING=EAGER.
# SAFETY: 1 KiB of device memory, 4 bytes pinned.
R=$OUT/r14; mkdir -p $R
for run in "LAZY lazy-other" "LAZY lazy-same" "LAZY lazy-other-warm" "LAZY lazy-same-warm" "EAGER lazy-other" "EAGER lazy-same"; do
  set -- $run
  echo "== CUDA_MODULE_LOADING=$1 $2" >> $R/probe.txt
  CUDA_MODULE_LOADING=$1 timeout 40 .device/bin/memop_vmm_probe $2 >> $R/probe.txt 2>&1; echo "rc=$?" >> $R/probe.txt
done
cat $R/probe.txt
tar czf $OUT/r14.tgz -C $OUT r14 && rm -rf $R
