#!/usr/bin/env bash
# Seventeenth session, call 5: the session's library against issue 11's other targets, each A/B in this call: the
# decode at half its weights on vmm (lru, clean first) against HF accelerate's offload with the same GPU budget;
# GPT fp32 everything fitting (16 GiB budget) against native; ResNet-50 fp32 training and BERT (zoo.py, outside
# tests/) at x2 by pump-bench (native, none, lru and learned on vmm; its link probe in the same run).
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r5; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; grep -m2 -i "error" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
timeout 150 python3 $dec --offload accelerate --gpu-budget-gib 3.25 > $R/decode-accelerate.txt 2> $R/decode-accelerate.err; show decode-accelerate $?
run decode-lru-clean 3489660928 100 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_LRU_VICTIMS=idle-dead,clean,any -- $dec
run gpt-fits 17179869184 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
timeout 80 python3 $gpt > $R/gpt-native.txt 2> $R/gpt-native.err; show gpt-native $?
tar czf $OUT/r5.tgz -C $OUT r5
bench() {  # bench NAME SECONDS -- PROGRAM...
  local name=$1 t=$2; shift 3
  local left=$(( 560 - SECONDS )); [ $left -lt $t ] && t=$left
  [ $t -gt 60 ] || { echo "skipped $name (time)"; return; }
  PUMP_MANAGED_LIMIT=$(limit) timeout $t .device/bin/pump-bench --libpump $LIB --plugin-dir .device/lib/pump --oversubscription 2 \
    --policies lru,learned --datapath vmm --repeats 1 --iterations 6 --json $R/$name.json -- "$@" > $R/$name.txt 2>&1
  echo "$name rc=$?"; grep -E "^python3 " $R/$name.txt
}
bench resnet50 200 -- python3 tests/gpu/torch/train_steps.py --model resnet50 --steps 6
tar czf $OUT/r5.tgz -C $OUT r5
bench bert 200 -- python3 .device/zoo.py --model bert --steps 6
tar czf $OUT/r5.tgz -C $OUT r5 && rm -rf $R
