#!/usr/bin/env bash
# Twenty-fifth session, call 1. (a) Issue 9: the twenty-fourth session's final build (the emulated unmap's waits
# outside the emulation's lock) had not run on a GPU: JAX on XLA's platform allocator, ResNet-50 on PyTorch's
# expandable segments and on its default allocator, each native then at half its footprint under none (now plain
# unified memory, PUMP_DATAPATH=um, as pump-bench's none row), lru, lru under poison; JAX once more with no budget.
# (b) Issue 8: near fit (footprint / 1.05), GPT bf16 training under pump-bench: native, none (unified memory), lru,
# learned. SAFETY: the suite caps managed memory at half the free memory, pump-bench at 90% of it; footprints 2.7-7 GB
# on a 140 GB card.
export OUT=$OUT/r1; mkdir -p $OUT
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $OUT/gpu.txt
FRAMEWORKS_CONFIGS="jax-platform torch-expandable torch-default" POLICIES=none,lru FRAMEWORKS_STEPS=6 \
  timeout 380 tests/gpu/device_suite.sh frameworks
limit=$(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 ))
JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform \
  LD_PRELOAD=$PWD/.device/lib/libpump.so PUMP_PLUGINS=cudnn,cublas,launch \
  PUMP_MANAGED_LIMIT=$limit timeout 40 python3 tests/gpu/frameworks/jax_train.py --steps 6 > $OUT/no-budget.txt 2> $OUT/no-budget.err
echo "no budget rc=$? $(grep checksum $OUT/no-budget.txt) native $(grep checksum $OUT/frameworks-jax-platform-native.txt)"
echo "near fit from $SECONDS s"
timeout $((575 - SECONDS)) .device/bin/pump-bench --oversubscription 1.05 --policies lru,learned --repeats 1 --iterations 6 \
  --json $OUT/gpt-bf16-1.05.json -- python3 tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 6 \
  > $OUT/gpt-bf16-1.05.txt 2>&1
echo "gpt bf16 1.05 rc=$?"; grep -E "^(python3|workload|pump-bench: link)" $OUT/gpt-bf16-1.05.txt
cd $OUT/.. && tar czf r1.tgz r1 && rm -rf r1
