#!/usr/bin/env bash
# Twentieth session, call 6: the session's final library (learned's young rule as kept, the policies' fini at exit,
# exit from inside a hook left alone) against lru in one call: GPT bf16 and ResNet-50 (tests/), ViT-B/16 (zoo.py,
# outside tests/) at 1.5, 16 steps (ViT 12), interleaved lru / learned / lru / learned for GPT; every step printed,
# learned's end-of-run summary in each .err.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-7.0 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r6; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; grep -h "policy learned:\|policy lru:\|busy" $R/$1.err | cut -c1-160; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 420 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  tar czf $OUT/r6.tgz -C $OUT r6
}
gpt="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 16"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 16"
vit=".device/zoo.py --model vit --steps 12"
run gpt-lru 2954188117 60 PUMP_POLICY=lru -- $gpt
run gpt-learned 2954188117 60 PUMP_POLICY=learned -- $gpt
run res-lru 4645890730 60 PUMP_POLICY=lru -- $res
run res-learned 4645890730 60 PUMP_POLICY=learned -- $res
run vit-lru 4510274901 60 PUMP_POLICY=lru -- $vit
run vit-learned 4510274901 60 PUMP_POLICY=learned -- $vit
run gpt-lru-b 2954188117 60 PUMP_POLICY=lru -- $gpt
run gpt-learned-b 2954188117 60 PUMP_POLICY=learned -- $gpt
tar czf $OUT/r6.tgz -C $OUT r6 && rm -rf $R
