#!/usr/bin/env bash
# Frameworks with partitioned memory (PUMP_PARTITION_ABOVE default 50%): JAX preallocated and ResNet-50 on expandable segments.
# Run from the repository root on the GPU machine, .device/ built by scripts/device_bundle.sh.
export LIBPUMP=$PWD/.device/lib/libpump.so
FRAMEWORKS_CONFIGS="jax-prealloc torch-expandable" POLICIES=none,lru FRAMEWORKS_STEPS=8 timeout 560 tests/gpu/device_suite.sh frameworks > $OUT/frameworks-console.txt 2>&1
