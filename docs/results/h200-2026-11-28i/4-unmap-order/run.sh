#!/usr/bin/env bash
# Twenty-fourth session, call 4 (issue 9): JAX on XLA's platform allocator (every buffer its own reservation, unmapped
# when freed) gave other losses under pump than natively in call 3, under none and lru alike. The build here waits,
# in an emulated unmap, for the device's queued work before discarding the piece and for the discard before
# returning (core/interpose/vmm_hooks.cc). Native runs twice (is the platform allocator's run deterministic?), then
# pump none, lru, lru under poison (device_suite.sh frameworks), then jax-noprealloc as before.
# SAFETY: the suite caps managed memory at half the free memory; footprint about 3 GB.
export OUT=$OUT/r4; mkdir -p $OUT
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $OUT/gpu.txt
JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform timeout 120 \
  python3 tests/gpu/frameworks/jax_train.py --steps 10 > $OUT/native-again.txt 2> $OUT/native-again.err
echo "native again rc=$? $(grep checksum $OUT/native-again.txt)"
FRAMEWORKS_CONFIGS="jax-platform jax-noprealloc" POLICIES=none,lru timeout 400 tests/gpu/device_suite.sh frameworks
grep checksum $OUT/frameworks-jax-platform-native.txt
cmp <(grep '^loss' $OUT/native-again.txt) $OUT/frameworks-jax-platform-native.losses && echo "native runs: the same losses"
cd $OUT/.. && tar czf r4.tgz r4 && rm -rf r4
