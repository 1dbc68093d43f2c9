#!/usr/bin/env bash
# Twenty-fourth session, call 3 (issue 9): what pump gets from JAX when XLA allocates each buffer on its own
# (XLA_PYTHON_CLIENT_ALLOCATOR=platform: no arena for pump to partition) against XLA's BFC arena without
# preallocation, and ResNet-50 on PyTorch's default allocator against expandable segments, in one call: native, then
# pump at half the native footprint, none and lru, lru under poison too (device_suite.sh frameworks).
# SAFETY: the suite caps managed memory at half the free memory; footprints about 3 GB (JAX) and 6 GB (ResNet-50).
export OUT=$OUT/r3; mkdir -p $OUT
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $OUT/gpu.txt
FRAMEWORKS_CONFIGS="jax-noprealloc jax-platform torch-default torch-expandable" POLICIES=none,lru \
  timeout 560 tests/gpu/device_suite.sh frameworks
cd $OUT/.. && tar czf r3.tgz r3 && rm -rf r3
