#!/usr/bin/env bash
# Eighteenth session, call 4: the training targets not measured before, with the session's defaults (vmm, lru with
# the cyclic pass): GPT decoder bf16 at 1.5, 2 and 3, ResNet-50 fp32 at 1.5 and 3, GPT fp32 at 1.5; each pump-bench
# run measures the link and runs native, managed memory and none (plain unified memory) beside lru.
# SAFETY: pump-bench caps managed memory at 90% of the free memory; footprints 4-11 GB on a 140 GB card.
R=$OUT/r4; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
bench() {  # bench NAME TIMEOUT RATIOS -- ARGS...
  local name=$1 t=$2 ratios=$3; shift 4
  timeout $t .device/bin/pump-bench --oversubscription $ratios --policies lru --repeats 1 --iterations 6 \
    --json $R/$name.json -- python3 "$@" > $R/$name.txt 2>&1
  echo "$name rc=$?"; grep -E "^(python3|workload|pump-bench: link)" $R/$name.txt
  tar czf $OUT/r4.tgz -C $OUT r4
}
bench gpt-bf16 250 1.5,2,3 -- tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 6
bench resnet50 170 1.5,3 -- tests/gpu/torch/train_steps.py --model resnet50 --steps 6
bench gpt-fp32 120 1.5 -- tests/gpu/torch/train_steps.py --model transformer --steps 6
rm -rf $R
