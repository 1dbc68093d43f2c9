#!/usr/bin/env bash
# Fourteenth session, call 3. Call 2's timelines: learned moves fewer bytes than lru on GPT fp32 at half, but its copies
# in and out overlap 92 ms against lru's 257 and its worker sleeps longer in populates (2.2 s against 1.5): its fetches
# ahead wait for evictions. Does learned without its lookahead (PUMP_LEARNED_LOOKAHEAD=0: lru's fetch on demand with
# Belady's victims) do better? GPT at half, the decode at half (tests/), ViT-B/16 training at half (zoo.py, outside
# tests/), interleaved with lru and learned as they are.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 520 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
vit=".device/zoo.py --model vit --steps 10"
run gpt-lru 4026531840 90 PUMP_POLICY=lru -- $gpt
run gpt-learned 4026531840 90 PUMP_POLICY=learned -- $gpt
run gpt-learned-ahead0 4026531840 90 PUMP_POLICY=learned PUMP_LEARNED_LOOKAHEAD=0 -- $gpt
run gpt-learned-ahead10 4026531840 90 PUMP_POLICY=learned PUMP_LEARNED_LOOKAHEAD=10% -- $gpt
run decode-learned-ahead0 3489660928 110 PUMP_POLICY=learned PUMP_LEARNED_LOOKAHEAD=0 -- $dec
run decode-lru 3489660928 110 PUMP_POLICY=lru -- $dec
run vit-lru 3382286336 90 PUMP_POLICY=lru -- $vit
run vit-learned-ahead0 3382286336 90 PUMP_POLICY=learned PUMP_LEARNED_LOOKAHEAD=0 -- $vit
run vit-learned 3382286336 90 PUMP_POLICY=learned -- $vit
tar czf $OUT/r3.tgz -C $OUT r3 && rm -rf $R
