#!/usr/bin/env bash
# Thirteenth session, call 6. learned with the LEARNED_GAP_LOOKAHEAD experiment (gap lookahead; a gap that held overrules a tentative
# period; kernels known by their first block that is not a workspace) against learned and lru, interleaved,
# twice each: the decode at half the weights (10 tokens); then GPT fp32 at half (8 steps), learned each way.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r6; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40) $(grep -o '"backend_pinned_alloc_ns": [0-9]*' $R/$1.json)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 520 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
run decode-learned-gaps 3489660928 110 PUMP_POLICY=learned PUMP_LEARNED_GAP_LOOKAHEAD=1 -- $dec
run decode-learned 3489660928 110 PUMP_POLICY=learned -- $dec
run decode-lru 3489660928 110 PUMP_POLICY=lru -- $dec
run decode-learned-gaps-2 3489660928 110 PUMP_POLICY=learned PUMP_LEARNED_GAP_LOOKAHEAD=1 -- $dec
run decode-learned-2 3489660928 110 PUMP_POLICY=learned -- $dec
run decode-lru-2 3489660928 110 PUMP_POLICY=lru -- $dec
run gpt-learned-gaps 4026531840 60 PUMP_POLICY=learned PUMP_LEARNED_GAP_LOOKAHEAD=1 -- $gpt
run gpt-learned 4026531840 60 PUMP_POLICY=learned -- $gpt
tar czf $OUT/r6.tgz -C $OUT r6 && rm -rf $R
