#!/usr/bin/env bash
# Twenty-sixth session, call 6: the illegal address (GPT bf16 at 4236247040 on physical chunks) with every kernel's
# extents, the blocks decided for it, every eviction, map and unmap logged (experiment switches), launches blocking;
# lru and none. Then learned on the copy path (call 5: other losses) again, and under poison.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r6; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
show() { echo "$1 rc=$2 | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; grep -m1 -i "illegal" $R/$1.err | cut -c1-120; }
run() {  # run NAME TIMEOUT ENV... -- ARGS...
  local name=$1 t=$2; shift 2
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 400 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=4236247040 LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  gzip -f $R/$name.err
  tar czf $OUT/r6.tgz -C $OUT r6
}
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 4"
run lru-log 150 PUMP_POLICY=lru PUMP_EXP_VA_LOG=1 CUDA_LAUNCH_BLOCKING=1 -- $g
run none-log 150 PUMP_POLICY=none PUMP_EXP_VA_LOG=1 CUDA_LAUNCH_BLOCKING=1 -- $g
run learned-copy 90 PUMP_POLICY=learned PUMP_DATAPATH=copy -- $g
run learned-copy-poison 90 PUMP_POLICY=learned PUMP_DATAPATH=copy PUMP_VERIFY=poison -- $g
run learned-vmm-poison 90 PUMP_POLICY=learned PUMP_VERIFY=poison -- $g
run lru-copy 90 PUMP_POLICY=lru PUMP_DATAPATH=copy -- $g
timeout 60 python3 $g > $R/native.txt 2>&1; show native $?
tar czf $OUT/r6.tgz -C $OUT r6
