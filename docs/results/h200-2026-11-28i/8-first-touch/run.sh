#!/usr/bin/env bash
# Twenty-fourth session, call 8 (issue 9): is the first touch of fresh managed pages by the program's kernels (GPU
# page faults, which native device memory never takes) what makes JAX on XLA's platform allocator differ under
# pump? PUMP_PREFETCH_ON_ALLOC=1 brings each new block's pages to the device when it is allocated. The same build
# as call 7 (its debug knob unset).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprint about 2.7 GB.
R=$OUT/r8; mkdir -p $R
LIB=$PWD/.device/lib/libpump.so
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
BUDGET=1400234442
one() {  # one NAME ENV...
  local name=$1; shift
  [ $SECONDS -lt 200 ] || { echo "skipped $name"; return; }
  env JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform "$@" timeout 60 \
    python3 tests/gpu/frameworks/jax_train.py --steps 6 > $R/$name.txt 2> $R/$name.err
  echo "$name rc=$? $(grep checksum $R/$name.txt) $(grep '^loss 0' $R/$name.txt) $(grep -o 'iteration_ms=[0-9.]*' $R/$name.txt | tail -1)"
}
pump=(LD_PRELOAD=$LIB PUMP_PLUGINS=cudnn,cublas,launch XLA_FLAGS=--xla_gpu_enable_command_buffer=)
one native
one prefetch-on-alloc "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_PREFETCH_ON_ALLOC=1 PUMP_STATS=$R/prefetch-on-alloc.json
one prefetch-on-alloc-2 "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_PREFETCH_ON_ALLOC=1
one budget-lru-prefetch-on-alloc "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_GPU_BUDGET=$BUDGET PUMP_POLICY=lru PUMP_PREFETCH_ON_ALLOC=1 PUMP_STATS=$R/budget-lru-prefetch-on-alloc.json
cd $OUT && tar czf r8.tgz r8 && rm -rf r8
