#!/usr/bin/env bash
# Thirteenth session, call 5. Shadow slabs pinned the former way (PUMP_PIN=hostalloc) against the new default (ahead: registered,
# the next slab pinned ahead), interleaved: the decode at half the weights (10 tokens) seemed 20% slower in calls 3-4
# than in call 1 (main), GPT was not. Decode lru, then learned, each way twice.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r5; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40) $(grep -o '"backend_pinned_alloc_ns": [0-9]*' $R/$1.json)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
run decode-lru-hostalloc 3489660928 110 PUMP_POLICY=lru PUMP_PIN=hostalloc -- $dec
run decode-lru-ahead 3489660928 110 PUMP_POLICY=lru -- $dec
run decode-lru-hostalloc-2 3489660928 110 PUMP_POLICY=lru PUMP_PIN=hostalloc -- $dec
run decode-lru-ahead-2 3489660928 110 PUMP_POLICY=lru -- $dec
run decode-learned-hostalloc 3489660928 110 PUMP_POLICY=learned PUMP_PIN=hostalloc -- $dec
run decode-learned-ahead 3489660928 110 PUMP_POLICY=learned -- $dec
tar czf $OUT/r5.tgz -C $OUT r5 && rm -rf $R
