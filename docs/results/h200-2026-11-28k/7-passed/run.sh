#!/usr/bin/env bash
# Twenty-sixth session, call 7: which launches pass by the engines with nothing extracted (call 6: 99 of 851 launches
# had no extents; the crashing kernel was never seen by the engine). GPT bf16 at 4236247040, launches blocking, each
# such pass logged with the kernel's name (experiment switches): policy none on physical chunks; learned on the copy
# path under poison (call 6: other losses).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r7; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
show() { echo "$1 rc=$2 | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; grep -m1 -i "illegal" $R/$1.err | cut -c1-120; grep "pump-exp: passed" $R/$1.err | cut -d' ' -f3- | sort | uniq -c | sort -rn | head -20 | cut -c1-220; }
run() {  # run NAME TIMEOUT ENV... -- ARGS...
  local name=$1 t=$2; shift 2
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" PUMP_GPU_BUDGET=4236247040 LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/$name.json PUMP_EXP_VA_LOG=1 timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  gzip -f $R/$name.err
  tar czf $OUT/r7.tgz -C $OUT r7
}
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 4"
run none-log 120 PUMP_POLICY=none CUDA_LAUNCH_BLOCKING=1 -- $g
run learned-copy-poison 120 PUMP_POLICY=learned PUMP_DATAPATH=copy PUMP_VERIFY=poison -- $g
