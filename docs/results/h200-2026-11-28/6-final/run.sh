#!/usr/bin/env bash
# Twenty-first session, call 6: the session's library (physical chunks of 64 MiB by default) in pump-bench at 1.5,
# the bound from the same run's link: GPT bf16 (16 iterations) and ResNet-50 (tests/), ViT-B/16 (zoo.py, outside
# tests/), lru and learned; then the Llama-shaped decode at half its weights (lru) beside HF accelerate's offload
# with the same GPU budget, tokens checked identical.
# SAFETY: pump-bench caps managed memory at 90% of free memory itself; the decode's runs by hand at half the free
# memory (PUMP_MANAGED_LIMIT); footprints 4.4-8.1 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r6; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
bench() {  # bench NAME TIMEOUT ITERATIONS ARGS...
  local name=$1 t=$2 it=$3; shift 3
  [ $SECONDS -lt 420 ] || { echo "skipped $name (time)"; return; }
  timeout $t .device/bin/pump-bench --oversubscription 1.5 --policies lru,learned --repeats 1 --iterations $it \
    --json $R/$name.json -- python3 "$@" > $R/$name.txt 2>&1
  echo "$name rc=$?"; grep -E "^(python3|workload|pump-bench: link)" $R/$name.txt
  tar czf $OUT/r6.tgz -C $OUT r6
}
bench gpt-bf16 150 16 tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 16
bench resnet50 150 12 tests/gpu/torch/train_steps.py --model resnet50 --steps 12
bench vit 150 12 .device/zoo.py --model vit --steps 12
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
[ $SECONDS -lt 470 ] && { PUMP_POLICY=lru PUMP_GPU_BUDGET=3489660928 LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) \
  PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/decode-lru.json timeout 90 python3 $dec > $R/decode-lru.txt 2> $R/decode-lru.err;
  echo "decode-lru rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/decode-lru.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/decode-lru.txt | cut -c1-50)"; }
[ $SECONDS -lt 480 ] && { timeout 100 python3 $dec --offload accelerate --gpu-budget-gib 3.25 > $R/decode-accelerate.txt 2> $R/decode-accelerate.err;
  echo "decode-accelerate rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/decode-accelerate.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/decode-accelerate.txt | cut -c1-50)"; }
tar czf $OUT/r6.tgz -C $OUT r6 && rm -rf $R
