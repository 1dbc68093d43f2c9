#!/usr/bin/env bash
# Twenty-fourth session, call 5 (issue 9): where JAX's losses on XLA's platform allocator part from native's under
# pump (calls 3-4: another loss from the first step on, different in every pumped run, native the same twice).
# Each run: jax_train.py, 10 steps, XLA_PYTHON_CLIENT_ALLOCATOR=platform; its checksum against native's.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprint about 2.7 GB.
R=$OUT/r5; mkdir -p $R
LIB=$PWD/.device/lib/libpump.so
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
BUDGET=1400234442  # half of native's footprint (calls 3-4)
one() {  # one NAME ENV...
  local name=$1; shift
  env JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform "$@" timeout 120 \
    python3 tests/gpu/frameworks/jax_train.py --steps 10 > $R/$name.txt 2> $R/$name.err
  echo "$name rc=$? $(grep checksum $R/$name.txt) $(grep -o 'iteration_ms=[0-9.]*' $R/$name.txt | tail -1)"
}
pump=(LD_PRELOAD=$LIB PUMP_PLUGINS=cudnn,cublas,launch)
one native
one native-no-command-buffers XLA_FLAGS=--xla_gpu_enable_command_buffer=
one native-no-command-buffers-2 XLA_FLAGS=--xla_gpu_enable_command_buffer=
one pump-disabled "${pump[@]}" PUMP_DISABLE=1
one pump-no-budget "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_STATS=$R/pump-no-budget.json
one pump-no-budget-watched "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_WATCH_WHILE_FITS=1 XLA_FLAGS=--xla_gpu_enable_command_buffer= PUMP_STATS=$R/pump-no-budget-watched.json
one pump-none "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_GPU_BUDGET=$BUDGET PUMP_POLICY=none PUMP_STATS=$R/pump-none.json
one pump-none-2 "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_GPU_BUDGET=$BUDGET PUMP_POLICY=none PUMP_STATS=$R/pump-none-2.json
one pump-none-unpartitioned "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_GPU_BUDGET=$BUDGET PUMP_POLICY=none PUMP_PARTITION_ABOVE=off PUMP_STATS=$R/pump-none-unpartitioned.json
one pump-none-um "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_GPU_BUDGET=$BUDGET PUMP_POLICY=none PUMP_DATAPATH=um PUMP_STATS=$R/pump-none-um.json
one pump-lru-unpartitioned "${pump[@]}" PUMP_MANAGED_LIMIT=$(limit) PUMP_GPU_BUDGET=$BUDGET PUMP_POLICY=lru PUMP_PARTITION_ABOVE=off PUMP_STATS=$R/pump-lru-unpartitioned.json
for f in $R/*.txt; do grep '^loss 0' $f | sed "s|^|$(basename $f .txt): |"; done
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
