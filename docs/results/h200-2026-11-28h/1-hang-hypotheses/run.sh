#!/usr/bin/env bash
# Twenty-third session, call 1: why ResNet-50 and the decode hang under counter fences (twenty-second
# session, counter-fence-debug.patch plus a log of the first counter waits' streams). Two hypotheses:
#  (a) hardware channels: a compute stream's pending cuStreamWaitValue64 blocks the worker's stream that
#      shares its channel (8 by default) -> CUDA_DEVICE_MAX_CONNECTIONS=32;
#  (b) cublasCreate under a pending wait -> the handle made before the program (cublas_first.py).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-8.1 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"issue_waits {g('backend_issue_waits')} {g('backend_issue_wait_ns')/1e6:.0f} ms counter_waits {g('backend_counter_waits')} drains {g('backend_counter_load_drains')} failed {g('backend_failed_calls')}")
PY
}
show() { echo "$1 rc=$2 wall=$3s $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep -o 'ms_per_token=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -i "did not complete\|error" $R/$1.err | head -3; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  local t0=$SECONDS
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json PUMP_COUNTER_DEBUG=1 timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $? $((SECONDS - t0))
  tar czf $OUT/r1.tgz -C $OUT r1
}
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 12"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gptb="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
C=CUDA_DEVICE_MAX_CONNECTIONS=32
run res-counter-conn32 4645890730 75 PUMP_POLICY=learned PUMP_FENCE=counter $C -- $res
run res-counter-cublasfirst 4645890730 75 PUMP_POLICY=learned PUMP_FENCE=counter -- .device/cublas_first.py $res
run dec-counter-conn32 3489660928 90 PUMP_POLICY=lru PUMP_FENCE=counter $C -- $dec
run dec-counter-cublasfirst 3489660928 90 PUMP_POLICY=lru PUMP_FENCE=counter -- .device/cublas_first.py $dec
run res-event 4645890730 75 PUMP_POLICY=learned PUMP_FENCE=event -- $res
run gptb-counter-conn32 2954188117 60 PUMP_POLICY=learned PUMP_FENCE=counter $C -- $gptb
run gptb-event 2954188117 60 PUMP_POLICY=learned PUMP_FENCE=event -- $gptb
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
