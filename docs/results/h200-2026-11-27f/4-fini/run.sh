#!/usr/bin/env bash
# Twentieth session, call 4: the policies' fini at exit on real programs (Runtime::finish now retires each engine's
# policy): learned's end-of-run summary (how much of the run its period predicted) and lru's cyclic-pass line, with
# PyTorch exiting normally. GPT bf16, ResNet-50 (tests/) and ViT-B/16 (zoo.py) at 1.5, 12 steps, info log.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-7.0 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r4; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; grep -h "policy learned:\|policy lru:" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 400 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  tar czf $OUT/r4.tgz -C $OUT r4
}
gpt="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 12"
vit=".device/zoo.py --model vit --steps 12"
run gpt-learned 2954188117 60 PUMP_POLICY=learned -- $gpt
run gpt-lru 2954188117 60 PUMP_POLICY=lru -- $gpt
run res-learned 4645890730 60 PUMP_POLICY=learned -- $res
run vit-learned 4510274901 60 PUMP_POLICY=learned -- $vit
tar czf $OUT/r4.tgz -C $OUT r4 && rm -rf $R
