#!/usr/bin/env bash
# Twenty-fourth session, call 9 (issue 9): the build where a mapped piece of an emulated reservation is brought to the
# device when mapped, where it fits (core/engine/engine.cc, Engine::on_alloc). JAX on XLA's platform allocator:
# native, then pump at half the footprint, none, lru, lru under poison (device_suite.sh frameworks), then once with
# no budget (calls passing by the engines, command buffers off: call 6's failing case).
# SAFETY: the suite caps managed memory at half the free memory; footprint about 2.7 GB.
export OUT=$OUT/r9; mkdir -p $OUT
FRAMEWORKS_CONFIGS="jax-platform" POLICIES=none,lru FRAMEWORKS_STEPS=6 timeout 150 tests/gpu/device_suite.sh frameworks
limit=$(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 ))
JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform \
  XLA_FLAGS=--xla_gpu_enable_command_buffer= LD_PRELOAD=$PWD/.device/lib/libpump.so PUMP_PLUGINS=cudnn,cublas,launch \
  PUMP_MANAGED_LIMIT=$limit timeout 40 python3 tests/gpu/frameworks/jax_train.py --steps 6 > $OUT/no-budget.txt 2> $OUT/no-budget.err
echo "no budget rc=$? $(grep checksum $OUT/no-budget.txt) native $(grep checksum $OUT/frameworks-jax-platform-native.txt)"
cd $OUT/.. && tar czf r9.tgz r9 && rm -rf r9
