#!/usr/bin/env bash
# Twelfth session, call 9. PUMP_SPLIT_WORKERS=1 (one worker thread per direction) against the one worker (default):
# PUMP_SPLIT_WORKERS was reverted after this call (no gain): the library it ran is commit e165352.
# GPT fp32 training at half (lru, learned), the Llama-shaped decode at half (lru), interleaved; then ViT-B/16 (zoo.py,
# outside tests/) at x2 lru under pump-bench with it. Every run's checksum against native's.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r8; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 8"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
run gpt-lru-one 4026531840 60 PUMP_POLICY=lru -- $gpt
run gpt-lru-split 4026531840 60 PUMP_POLICY=lru PUMP_SPLIT_WORKERS=1 -- $gpt
run gpt-learned-one 4026531840 60 PUMP_POLICY=learned -- $gpt
run gpt-learned-split 4026531840 60 PUMP_POLICY=learned PUMP_SPLIT_WORKERS=1 -- $gpt
run gpt-lru-split-poison 4026531840 60 PUMP_POLICY=lru PUMP_SPLIT_WORKERS=1 PUMP_VERIFY=poison -- $gpt
run decode-lru-split 3489660928 110 PUMP_POLICY=lru PUMP_SPLIT_WORKERS=1 -- $dec
run decode-lru-one 3489660928 110 PUMP_POLICY=lru -- $dec
if [ $SECONDS -lt 420 ]; then
  PUMP_SPLIT_WORKERS=1 timeout $((570 - SECONDS)) .device/bin/pump-bench --libpump $LIB --plugin-dir .device/lib/pump --oversubscription 2 \
    --policies lru --repeats 1 --json $R/vit-split.json -- python3 .device/zoo.py --model vit --steps 8 > $R/vit-split.txt 2>&1
  echo "vit split rc=$?"; grep -E "^python3 " $R/vit-split.txt
fi
tar czf $OUT/r8.tgz -C $OUT r8 && rm -rf $R
