#!/usr/bin/env bash
# Twenty-fourth session, call 7 (issue 9): JAX on XLA's platform allocator is wrong under pump unless launches are
# blocking (call 6). Native VMM calls may synchronize; pump's emulated ones are bookkeeping. This build
# (vmm-sync-debug.patch) synchronizes the context after the emulated calls PUMP_VMM_SYNC_DEBUG names. No budget,
# XLA's command buffers off (calls pass by the engines: the fastest failing case), then under a budget.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprint about 2.7 GB.
R=$OUT/r7; mkdir -p $R
LIB=$PWD/.device/lib/libpump.so
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
BUDGET=1400234442
one() {  # one NAME ENV...
  local name=$1; shift
  [ $SECONDS -lt 270 ] || { echo "skipped $name"; return; }
  env JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform "$@" timeout 60 \
    python3 tests/gpu/frameworks/jax_train.py --steps 6 > $R/$name.txt 2> $R/$name.err
  echo "$name rc=$? $(grep checksum $R/$name.txt) $(grep '^loss 0' $R/$name.txt) $(grep -o 'iteration_ms=[0-9.]*' $R/$name.txt | tail -1)"
}
pump=(LD_PRELOAD=$LIB PUMP_PLUGINS=cudnn,cublas,launch XLA_FLAGS=--xla_gpu_enable_command_buffer=)
one native
one sync-all "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_VMM_SYNC_DEBUG=all
one sync-alloc-side "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_VMM_SYNC_DEBUG=reserve,create,map,set_access
one sync-free-side "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_VMM_SYNC_DEBUG=unmap,release,address_free
one sync-map "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_VMM_SYNC_DEBUG=map
one sync-set-access "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_VMM_SYNC_DEBUG=set_access
one sync-none "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit)
one budget-lru-sync-all "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_GPU_BUDGET=$BUDGET PUMP_POLICY=lru PUMP_VMM_SYNC_DEBUG=all PUMP_STATS=$R/budget-lru-sync-all.json
cd $OUT && tar czf r7.tgz r7 && rm -rf r7
