#!/usr/bin/env bash
# Twelfth session, call 3. The hold kernel (pump_hold): PUMP_POPULATE=auto now queues an empty kernel before a populate on
# an idle stream (so its prefetches are deferred and populate); PUMP_DISCARD_HOLD_US=N holds an idle out stream N us before
# its discards (so the driver defers them). Decode at half the weights (lru, then learned), GPT fp32 training at half (lru).
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 8"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
run decode-lru-prefetch 3489660928 110 PUMP_POLICY=lru -- $dec
run decode-lru-auto 3489660928 110 PUMP_POLICY=lru PUMP_POPULATE=auto -- $dec
run decode-lru-hold20 3489660928 110 PUMP_POLICY=lru PUMP_DISCARD_HOLD_US=20 -- $dec
run decode-lru-auto-hold20 3489660928 110 PUMP_POLICY=lru PUMP_POPULATE=auto PUMP_DISCARD_HOLD_US=20 -- $dec
run gpt-lru-prefetch 4026531840 60 PUMP_POLICY=lru -- $gpt
run gpt-lru-auto-hold20 4026531840 60 PUMP_POLICY=lru PUMP_POPULATE=auto PUMP_DISCARD_HOLD_US=20 -- $gpt
run decode-learned-auto-hold20 3489660928 110 PUMP_POLICY=learned PUMP_POPULATE=auto PUMP_DISCARD_HOLD_US=20 -- $dec
tar czf $OUT/r3.tgz -C $OUT r3 && rm -rf $R
