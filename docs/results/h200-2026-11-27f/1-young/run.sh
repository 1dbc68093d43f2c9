#!/usr/bin/env bash
# Twentieth session, call 1: learned's young victims as a share of its period (1/64) against the fixed two kernels
# (PUMP_LEARNED_MIN_AGE=2, the default before) and lru, at 1.5 where lru missed 1.5x its bound: GPT decoder bf16 and
# ResNet-50 (tests/), ViT-B/16 (zoo.py, outside tests/). 10 iterations, so learned has a period to follow.
# SAFETY: pump-bench caps managed memory at 90% of the free memory; footprints 4-8 GB on a 140 GB card.
R=$OUT/r1; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
bench() {  # bench NAME TIMEOUT POLICIES ENV... -- ARGS...
  local name=$1 t=$2 policies=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" timeout $t .device/bin/pump-bench --oversubscription 1.5 --policies $policies --repeats 1 --iterations 10 \
    --json $R/$name.json -- python3 "$@" > $R/$name.txt 2>&1
  echo "$name rc=$?"; grep -E "^(python3|workload|pump-bench: link)" $R/$name.txt
  tar czf $OUT/r1.tgz -C $OUT r1
}
gpt="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 10"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 10"
vit=".device/zoo.py --model vit --steps 10"
bench gpt-bf16 150 lru,learned X=1 -- $gpt
bench resnet50 150 lru,learned X=1 -- $res
bench gpt-bf16-age2 100 learned PUMP_LEARNED_MIN_AGE=2 -- $gpt
bench vit 150 lru,learned X=1 -- $vit
bench resnet50-age2 100 learned PUMP_LEARNED_MIN_AGE=2 -- $res
rm -rf $R
