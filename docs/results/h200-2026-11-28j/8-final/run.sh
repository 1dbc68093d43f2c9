#!/usr/bin/env bash
# Twenty-fifth session, call 8 (issue 9): the final build (pieces marked until their map returns): JAX on XLA's
# platform allocator and ResNet-50 on expandable segments (4 steps), lru and lru under poison, at half the footprint,
# losses against native's.
# SAFETY: managed memory capped at half the free memory; footprints 2.7-6 GB on a 140 GB card.
export OUT=$OUT/r8; mkdir -p $OUT
FRAMEWORKS_CONFIGS="jax-platform" POLICIES=lru FRAMEWORKS_STEPS=6 timeout 60 tests/gpu/device_suite.sh frameworks 2>&1 | grep -E "summary|FAIL"
FRAMEWORKS_CONFIGS="torch-expandable" POLICIES=lru FRAMEWORKS_TORCH_STEPS=4 timeout 80 tests/gpu/device_suite.sh frameworks 2>&1 | grep -E "summary|FAIL"
cd $OUT/.. && tar czf r8.tgz r8 && rm -rf r8
