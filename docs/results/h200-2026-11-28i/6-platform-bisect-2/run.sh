#!/usr/bin/env bash
# Twenty-fourth session, call 6 (issue 9): call 5 found JAX on XLA's platform allocator wrong under pump with no
# budget (calls passing by the engines, XLA's command buffers on, nothing moved) and right with every call watched
# (command buffers off, every block prefetched before its kernel). Which of the two differences is it, and is
# timing involved (CUDA_LAUNCH_BLOCKING=1)?
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprint about 2.7 GB.
R=$OUT/r6; mkdir -p $R
LIB=$PWD/.device/lib/libpump.so
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
BUDGET=1400234442
one() {  # one NAME ENV...
  local name=$1; shift
  env JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform "$@" timeout 100 \
    python3 tests/gpu/frameworks/jax_train.py --steps 6 > $R/$name.txt 2> $R/$name.err
  echo "$name rc=$? $(grep checksum $R/$name.txt) $(grep '^loss 0' $R/$name.txt) $(grep -o 'iteration_ms=[0-9.]*' $R/$name.txt | tail -1)"
}
pump=(LD_PRELOAD=$LIB PUMP_PLUGINS=cudnn,cublas,launch)
nocb=XLA_FLAGS=--xla_gpu_enable_command_buffer=
one native
one native-blocking CUDA_LAUNCH_BLOCKING=1
one pump-no-budget-nocb "${pump[@]}" $nocb PUMP_MANAGED_LIMIT=$(limit) PUMP_STATS=$R/pump-no-budget-nocb.json
one pump-no-budget-nocb-2 "${pump[@]}" $nocb PUMP_MANAGED_LIMIT=$(limit) PUMP_STATS=$R/pump-no-budget-nocb-2.json
one pump-no-budget-cb-watched "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_WATCH_WHILE_FITS=1 PUMP_STATS=$R/pump-no-budget-cb-watched.json
one pump-no-budget-nocb-blocking "${pump[@]}" $nocb CUDA_LAUNCH_BLOCKING=1 PUMP_MANAGED_LIMIT=$(limit) PUMP_STATS=$R/pump-no-budget-nocb-blocking.json
one pump-none-blocking "${pump[@]}" CUDA_LAUNCH_BLOCKING=1 PUMP_MANAGED_LIMIT=$(limit) PUMP_GPU_BUDGET=$BUDGET PUMP_POLICY=none PUMP_STATS=$R/pump-none-blocking.json
one pump-lru-blocking "${pump[@]}" CUDA_LAUNCH_BLOCKING=1 PUMP_MANAGED_LIMIT=$(limit) PUMP_GPU_BUDGET=$BUDGET PUMP_POLICY=lru PUMP_STATS=$R/pump-lru-blocking.json
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
