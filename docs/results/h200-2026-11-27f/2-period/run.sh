#!/usr/bin/env bash
# Twentieth session, call 2: does learned find and follow its period on the GPU? In call 1 it moved as many bytes as
# lru on GPT bf16 at 1.5 (4206 MiB a step), where the sim's replay of an older trace of the program predicts 2378.
# learned and lru at 1.5 with the new end-of-run summary (PUMP_LOG_LEVEL=info), then fresh PUMP_TRACE recordings of
# GPT bf16 and ResNet-50 with everything fitting (16 GiB budget), to replay in the sim against these runs.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-7.0 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; grep -h "policy learned\|cyclic pass\|error" $R/$1.err | head -3; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 420 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  tar czf $OUT/r2.tgz -C $OUT r2
}
gpt="tests/gpu/torch/train_steps.py --model transformer --dtype bf16"
res="tests/gpu/torch/train_steps.py --model resnet50"
run gpt-learned 2954188117 90 PUMP_POLICY=learned -- $gpt --steps 10
run gpt-lru 2954188117 90 PUMP_POLICY=lru -- $gpt --steps 10
run gpt-trace 17179869184 90 PUMP_POLICY=lru PUMP_TRACE=$R/gpt_bf16.trace -- $gpt --steps 4
run res-learned 4645890730 90 PUMP_POLICY=learned -- $res --steps 10
run res-trace 17179869184 90 PUMP_POLICY=lru PUMP_TRACE=$R/resnet50_fp32.trace -- $res --steps 4
ls -la $R/*.trace
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
