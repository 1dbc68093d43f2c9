#!/usr/bin/env bash
# Twenty-seventh session, call 4 (issue 9): the frameworks suite's five programs and the static-cudart program on
# main's build since the twenty-sixth session's launch-extractor fix (a kernel whose parameter layout could not be
# read is asked again and is an unattributed access meanwhile) and the top-down span: native, lru, lru under poison at
# half the footprint (none was measured in the twenty-fifth session, call 6: the same suite).
# SAFETY: the suite caps managed memory at half the free memory (jax-prealloc's fraction kept under it).
export OUT=$OUT/r4; mkdir -p $OUT
POLICIES=lru FRAMEWORKS_STEPS=6 FRAMEWORKS_TORCH_STEPS=6 timeout 420 tests/gpu/device_suite.sh frameworks
timeout 120 tests/gpu/device_suite.sh static-cudart
cd $OUT/.. && tar czf r4.tgz r4 && rm -rf r4
