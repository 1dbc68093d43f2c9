#!/usr/bin/env bash
# Twelfth session, call 7. Populate pieces: the driver defers at most 48-63 prefetches per context (populate_wait_probe.cu)
# and a deferred prefetch of a whole range populates (ibid.), so fewer, larger populate calls may let the worker run
# further ahead. PUMP_POPULATE_PIECE 8MiB (default) against 64MiB and 0 (whole ranges), lru, decode and GPT fp32 at half.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r6; mkdir -p $R
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
run gpt-lru-8MiB 4026531840 60 PUMP_POLICY=lru -- $gpt
run gpt-lru-64MiB 4026531840 60 PUMP_POLICY=lru PUMP_POPULATE_PIECE=64MiB -- $gpt
run gpt-lru-whole 4026531840 60 PUMP_POLICY=lru PUMP_POPULATE_PIECE=0 -- $gpt
run decode-lru-8MiB 3489660928 110 PUMP_POLICY=lru -- $dec
run decode-lru-64MiB 3489660928 110 PUMP_POLICY=lru PUMP_POPULATE_PIECE=64MiB -- $dec
run decode-lru-whole 3489660928 110 PUMP_POLICY=lru PUMP_POPULATE_PIECE=0 -- $dec
run gpt-learned-8MiB 4026531840 60 PUMP_POLICY=learned -- $gpt
run gpt-learned-64MiB 4026531840 60 PUMP_POLICY=learned PUMP_POPULATE_PIECE=64MiB -- $gpt
tar czf $OUT/r6.tgz -C $OUT r6 && rm -rf $R
