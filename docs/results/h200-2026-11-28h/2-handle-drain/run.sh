#!/usr/bin/env bash
# Twenty-third session, call 2: counter fences with cublasCreate_v2, cublasLtCreate and cudnnCreate draining
# pending counter waits as module loads do (call 1: the handle made before the program cured both hangs), default
# CUDA_DEVICE_MAX_CONNECTIONS, no debug code. Events against counters, back to back, on programs from tests/ (GPT
# bf16 learned and lru, ResNet-50 learned, the Llama decode lru) and outside tests/ (zoo.py: ViT-B/16, BERT,
# OPT-shaped decode). SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 2.9-10.9 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"issue_waits {g('backend_issue_waits')} {g('backend_issue_wait_ns')/1e6:.0f} ms counter_waits {g('backend_counter_waits')} drains {g('backend_counter_load_drains')} failed {g('backend_failed_calls')}")
PY
}
show() { echo "$1 rc=$2 wall=$3s $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -i "did not complete\|error" $R/$1.err | head -3; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  local t0=$SECONDS
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $? $((SECONDS - t0))
  tar czf $OUT/r2.tgz -C $OUT r2
}
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 12"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gptb="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
for f in counter event; do run res-learned-$f 4645890730 75 PUMP_POLICY=learned PUMP_FENCE=$f -- $res; done
for f in event counter; do run gptb-learned-$f 2954188117 60 PUMP_POLICY=learned PUMP_FENCE=$f -- $gptb; done
for f in counter event; do run bert-learned-$f 7243562341 75 PUMP_POLICY=learned PUMP_FENCE=$f -- .device/zoo.py --model bert --steps 8; done
for f in event counter; do run opt-lru-$f 1466957824 75 PUMP_POLICY=lru PUMP_FENCE=$f -- .device/zoo.py --model opt --steps 12; done
for f in counter event; do run vit-learned-$f 4510274901 60 PUMP_POLICY=learned PUMP_FENCE=$f -- .device/zoo.py --model vit --steps 10; done
for f in counter event; do run dec-lru-$f 3489660928 100 PUMP_POLICY=lru PUMP_FENCE=$f -- $dec; done
for f in event counter; do run gptb-lru-$f 2954188117 60 PUMP_POLICY=lru PUMP_FENCE=$f -- $gptb; done
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
