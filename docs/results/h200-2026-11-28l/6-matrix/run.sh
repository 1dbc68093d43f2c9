#!/usr/bin/env bash
# Twenty-seventh session, call 6 (issues 11 and 8): the training targets with this session's build, lru and learned side
# by side: GPT decoder bf16 at 1.5, 2 and 3, ResNet-50 fp32 at 1.5; each pump-bench run measures the link and
# runs native, managed memory and none (plain unified memory) beside the policies; bound = max(compute, the row's own
# bytes over the link measured in the same run).
# SAFETY: pump-bench caps managed memory at 90% of the free memory; footprints 4.4-7.0 GB on a 140 GB card.
R=$OUT/r6; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
bench() {  # bench NAME TIMEOUT RATIOS -- ARGS...
  local name=$1 t=$2 ratios=$3; shift 4
  timeout $t .device/bin/pump-bench --oversubscription $ratios --policies lru,learned --repeats 1 --iterations 8 \
    --json $R/$name.json -- python3 "$@" > $R/$name.txt 2>&1
  echo "$name rc=$?"; grep -E "^(python3|workload|pump-bench: link)|  (native|none|lru|learned|bound) " $R/$name.txt | cut -c1-200
  tar czf $OUT/r6.tgz -C $OUT r6
}
bench gpt-bf16 250 1.5,2,3 -- tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 8
bench resnet50 150 1.5 -- tests/gpu/torch/train_steps.py --model resnet50 --steps 8
