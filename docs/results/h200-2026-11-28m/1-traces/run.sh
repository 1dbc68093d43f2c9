#!/usr/bin/env bash
# Twenty-eighth session, call 1 (issue 8): learned settles in about six steps on the GPU (GPT bf16 near fit:
# 302, 166, 115, 114, 100, 89, 75 ms...) while the sim's replays of 2-4 recorded steps, repeated, show no such tail.
# Record every step of longer runs (PUMP_TRACE, everything fitting, lru) to replay them once, step after step:
# GPT bf16 12 steps, BERT and ViT-B/16 (zoo.py, outside tests/) 10, ResNet-50 8, the Llama-shaped decode 12 tokens.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-10.9 GB on a 140 GB card, budget 32 GiB.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
run() {  # run NAME TIMEOUT -- ARGS...
  local name=$1 t=$2; shift 3
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  PUMP_GPU_BUDGET=32GiB LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch PUMP_POLICY=lru \
    PUMP_TRACE=$R/$name.trace PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  echo "$name rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/$name.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(wc -l < $R/$name.trace) lines"
  gzip -f $R/$name.trace
  tar czf $OUT/r1.tgz -C $OUT r1
}
run gpt_bf16_12 120 -- tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12
run bert_10 150 -- .device/zoo.py --model bert --steps 10
run vit_10 150 -- .device/zoo.py --model vit --steps 10
run resnet50_8 120 -- tests/gpu/torch/train_steps.py --model resnet50 --steps 8
run decode_12 120 -- tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 12
ls -la $R
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
