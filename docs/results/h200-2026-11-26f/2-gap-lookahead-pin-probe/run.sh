#!/usr/bin/env bash
# Thirteenth session, call 2. (a) tests/gpu/pin_concurrency_probe.cu: pinning rates by call, and whether pinning on one
# thread holds up another's launches and copies. (b) The Llama-shaped decode at half the weights, 10 tokens: learned
# as on main, learned with the gap lookahead (GAPLA=1, an experiment's switch: ranges whose reuse gap held twice are
# prefetched ahead while no period is confirmed, and a tentative period no longer overrules such a gap), the same
# with a 50% window, and lru.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
nvcc -O2 -arch=sm_90 -o /tmp/pin_probe tests/gpu/pin_concurrency_probe.cu -lcuda && /tmp/pin_probe > $R/pin-probe.txt 2>&1
cat $R/pin-probe.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
run decode-learned-gaps 3489660928 120 PUMP_POLICY=learned GAPLA=1 -- $dec
run decode-learned 3489660928 120 PUMP_POLICY=learned -- $dec
run decode-learned-gaps50 3489660928 120 PUMP_POLICY=learned GAPLA=1 PUMP_LEARNED_LOOKAHEAD=50% -- $dec
run decode-lru 3489660928 120 PUMP_POLICY=lru -- $dec
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
