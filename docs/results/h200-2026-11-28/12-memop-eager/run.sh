#!/usr/bin/env bash
# Twenty-first session, call 12: the memop probes again with CUDA_MODULE_LOADING=EAGER. Their check kernels were first
# launched while the gate kernel spun; lazy loading (the default since CUDA 12.2) may then wait for the context, which
# would hang every case whatever the fence (the review's point). Lazy again as the control, then eager.
# SAFETY: physical 3 x 64 MiB + 256 MiB, pinned 64 + 256 MiB, managed 2 x 64 MiB + 64 MiB.
R=$OUT/r12; mkdir -p $R
for loading in LAZY EAGER; do
  for c in mapped vmm vmm-late vmm-saving vmm-unmap vmm-managed; do
    echo "== $loading $c" >> $R/memop_vmm_probe.txt
    CUDA_MODULE_LOADING=$loading timeout 40 .device/bin/memop_vmm_probe $c >> $R/memop_vmm_probe.txt 2>&1
    echo "rc=$?" >> $R/memop_vmm_probe.txt
    [ $loading = LAZY ] && break  # the lazy control: the first case only
  done
done
echo "== EAGER memop_fence_probe (copy, populate, copy-late, pop-late, um)" >> $R/memop_fence_probe.txt
CUDA_MODULE_LOADING=EAGER timeout 60 .device/bin/memop_fence_probe >> $R/memop_fence_probe.txt 2>&1; echo "rc=$?" >> $R/memop_fence_probe.txt
cat $R/memop_vmm_probe.txt $R/memop_fence_probe.txt
tar czf $OUT/r12.tgz -C $OUT r12 && rm -rf $R
