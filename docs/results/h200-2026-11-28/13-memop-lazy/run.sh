#!/usr/bin/env bash
# Twenty-first session, call 13: behind a stream waiting on the device for a word that an independent thread writes
# 50 ms later, does a program's kernel loading lazily (the default) hang, on another stream or on the waiting one?
# (tests/gpu/memop_vmm_probe.cu lazy-other, lazy-same; each twice.) SAFETY: 1 KiB of device memory, 4 bytes pinned.
R=$OUT/r13; mkdir -p $R
for c in lazy-other lazy-same lazy-other lazy-same; do
  echo "== $c" >> $R/probe.txt; timeout 40 .device/bin/memop_vmm_probe $c >> $R/probe.txt 2>&1; echo "rc=$?" >> $R/probe.txt
done
cat $R/probe.txt
tar czf $OUT/r13.tgz -C $OUT r13 && rm -rf $R
