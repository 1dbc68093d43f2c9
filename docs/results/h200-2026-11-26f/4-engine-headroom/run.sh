#!/usr/bin/env bash
# Thirteenth session, call 4. The engine's headroom (PUMP_HEADROOM=256MiB): evictions back to 256 MiB free after each kernel, in a batch of
# their own after the kernel's, so that the next fetch finds its room free and the drops run while the launching
# thread goes on. Decode at half the weights (10 tokens) and GPT fp32 at half (8 steps), with and without.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r4; mkdir -p $R
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
run decode-lru-headroom 3489660928 110 PUMP_POLICY=lru PUMP_HEADROOM=256MiB -- $dec
run decode-lru 3489660928 110 PUMP_POLICY=lru -- $dec
run decode-learned-headroom 3489660928 110 PUMP_POLICY=learned PUMP_HEADROOM=256MiB -- $dec
run gpt-lru-headroom 4026531840 60 PUMP_POLICY=lru PUMP_HEADROOM=256MiB -- $gpt
run gpt-lru 4026531840 60 PUMP_POLICY=lru -- $gpt
tar czf $OUT/r4.tgz -C $OUT r4 && rm -rf $R
