#!/usr/bin/env bash
# Twenty-first session, call 8: the host's NUMA layout and the link's rate from pinned memory on each node
# (tests/gpu/numa_pinned_probe.cu), run three times pinned to different CPUs; the topology as the driver sees it.
# SAFETY: 512 MiB pinned at a time, 512 MiB of device memory.
R=$OUT/r8; mkdir -p $R
{ nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv; nvidia-smi topo -m; lscpu; \
  cat /sys/devices/system/node/online; ls /sys/devices/system/node/; } > $R/host.txt 2>&1
for cpu in 0 8 15; do echo "== taskset -c $cpu"; taskset -c $cpu timeout 60 .device/bin/numa_pinned_probe; echo "rc=$?"; done > $R/probe.txt 2>&1
cat $R/probe.txt; grep -i "numa\|socket\|model name" $R/host.txt
tar czf $OUT/r8.tgz -C $OUT r8 && rm -rf $R
