#!/usr/bin/env bash
# Twenty-sixth session, call 5: the illegal address of call 4 (GPT bf16, budget 4236247040) is main's too (call 4's
# "off"). Record a trace at no budget for the sim; then at that budget, 6 steps each: native; the copy data path (managed
# memory: a read pump did not foresee reads dropped pages instead of faulting); vmm under poison (nothing unmapped); vmm
# without lru's dead passes; vmm under policy none (the engine's own evictions).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r5; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
show() { echo "$1 rc=$2 | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep -o 'footprint_bytes=[0-9]*' $R/$1.txt) $(grep checksum $R/$1.txt | cut -c1-40)"; grep -m1 -i "illegal" $R/$1.err | cut -c1-120; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = native ]; then timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  else
    env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
      PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  fi
  show $name $?
  tar czf $OUT/r5.tgz -C $OUT r5
}
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 6"
B=4236247040
run trace 1000GiB 90 PUMP_POLICY=lru PUMP_TRACE=$R/gpt_bf16.trace -- tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 3
gzip -f $R/gpt_bf16.trace; ls -la $R/gpt_bf16.trace.gz
run native native 60 -- $g
run copy $B 90 PUMP_POLICY=lru PUMP_DATAPATH=copy -- $g
run poison $B 90 PUMP_POLICY=lru PUMP_VERIFY=poison -- $g
run nodead $B 90 PUMP_POLICY=lru PUMP_LRU_VICTIMS=cyclic,idle-clean,any -- $g
run none-vmm $B 90 PUMP_POLICY=none -- $g
run learned-copy $B 90 PUMP_POLICY=learned PUMP_DATAPATH=copy -- $g
