#!/usr/bin/env bash
# Twenty-eighth session, call 3 (issues 8 and 9): before learned becomes the default, the frameworks suite under it
# (JAX with and without preallocation, CuPy, PyTorch ResNet-50 on expandable segments and on cudaMallocAsync; half
# of each native footprint; native, learned, learned under PUMP_VERIFY=poison, every loss bit for bit against native)
# and the static-cudart program with the build's default policy (learned in this build: 7bef2dc + the default).
# SAFETY: the suite caps managed memory at half the free memory (jax-prealloc's fraction kept under it).
export OUT=$OUT/r3; mkdir -p $OUT
POLICIES=learned FRAMEWORKS_STEPS=6 FRAMEWORKS_TORCH_STEPS=6 timeout 470 tests/gpu/device_suite.sh frameworks
timeout 80 tests/gpu/device_suite.sh static-cudart
cd $OUT/.. && tar czf r3.tgz r3 && rm -rf r3
