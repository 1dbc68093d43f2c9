#!/usr/bin/env bash
# Twentieth session, call 5: learned's first steps. Before it follows a period, learned predicts a block's next use from
# its last reuse gap; in the sim's replay of GPT bf16's steady steps that moved 50% more than lru in the first three
# steps (13,364 MiB against 8,926). With gaps trusted only once seen twice (EXP3=1, experiment.patch: the build this
# call carries) it moved 8,834. Here: GPT bf16, ResNet-50 (tests/) and ViT-B/16 (zoo.py) at 1.5, 16 steps (ViT 12),
# learned as committed against learned with EXP3=1, interleaved; every step printed.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-7.0 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r5; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; grep -h "policy learned:" $R/$1.err | cut -c1-150; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 420 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_POLICY=learned PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  tar czf $OUT/r5.tgz -C $OUT r5
}
gpt="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 16"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 16"
vit=".device/zoo.py --model vit --steps 12"
run gpt-learned 2954188117 60 X=1 -- $gpt
run gpt-stable 2954188117 60 EXP3=1 -- $gpt
run res-learned 4645890730 60 X=1 -- $res
run res-stable 4645890730 60 EXP3=1 -- $res
run vit-learned 4510274901 60 X=1 -- $vit
run vit-stable 4510274901 60 EXP3=1 -- $vit
run gpt-stable-b 2954188117 60 EXP3=1 -- $gpt
run gpt-learned-b 2954188117 60 X=1 -- $gpt
tar czf $OUT/r5.tgz -C $OUT r5 && rm -rf $R
