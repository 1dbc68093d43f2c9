#!/usr/bin/env bash
# Eighteenth session, call 5: learned at 1.5 (GPT bf16, ResNet-50), where lru missed 1.5x its bound in call 4.
# SAFETY: pump-bench caps managed memory at 90% of the free memory; footprints 4-11 GB on a 140 GB card.
R=$OUT/r5; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
bench() {  # bench NAME TIMEOUT RATIOS -- ARGS...
  local name=$1 t=$2 ratios=$3; shift 4
  timeout $t .device/bin/pump-bench --oversubscription $ratios --policies learned --repeats 1 --iterations 6 \
    --json $R/$name.json -- python3 "$@" > $R/$name.txt 2>&1
  echo "$name rc=$?"; grep -E "^(python3|workload|pump-bench: link)" $R/$name.txt
  tar czf $OUT/r5.tgz -C $OUT r5
}
bench gpt-bf16 130 1.5 -- tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 6
bench resnet50 150 1.5 -- tests/gpu/torch/train_steps.py --model resnet50 --steps 6
rm -rf $R
