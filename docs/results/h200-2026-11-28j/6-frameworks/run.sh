#!/usr/bin/env bash
# Twenty-fifth session, call 6 (issue 9): the frameworks suite's five default programs on this session's build
# (mapped pieces brought in by the map), none now plain unified memory (PUMP_DATAPATH=um): JAX with and without
# preallocation, CuPy, ResNet-50 on PyTorch's expandable segments and on cudaMallocAsync; native, none, lru, lru under
# poison at half the footprint (ResNet-50 on the default allocator: call 1).
# SAFETY: the suite caps managed memory at half the free memory (jax-prealloc's fraction kept under it).
export OUT=$OUT/r6; mkdir -p $OUT
POLICIES=none,lru FRAMEWORKS_STEPS=6 FRAMEWORKS_TORCH_STEPS=6 \
  timeout 480 tests/gpu/device_suite.sh frameworks
cd $OUT/.. && tar czf r6.tgz r6 && rm -rf r6
