#!/usr/bin/env bash
# Fourteenth session, call 1. lru fetching ahead along its miss chain (PUMP_LRU_LOOKAHEAD, policies/policy_miss_chain.h)
# against lru as it is, interleaved: the Llama-shaped decode at half its weights (tests/), OPT-1.3B-shaped fp16 decode
# (zoo.py, outside tests/) at about half; and lru's decode at a third (the sim's cliff from x2.6: the model's or the driver's?).
# The lookahead was not kept: its header is policy_miss_chain.h.txt here (lru called miss_chain_observe before its
# prefetches, miss_chain_fetch_ahead after, and spared blocks fetched ahead in on_pressure); main has none of it.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40) $(grep -o 'lru: fetched.*' $R/$1.err | head -1)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
opt=".device/zoo.py --model opt --steps 16"
python3 $opt > $R/opt-native.txt 2> $R/opt-native.err; show opt-native $?
run decode-lru 3489660928 110 PUMP_POLICY=lru -- $dec
run decode-lru-ahead256 3489660928 110 PUMP_POLICY=lru PUMP_LRU_LOOKAHEAD=256MiB -- $dec
run opt-lru 1400000000 90 PUMP_POLICY=lru -- $opt
run opt-lru-ahead256 1400000000 90 PUMP_POLICY=lru PUMP_LRU_LOOKAHEAD=256MiB -- $opt
run decode-lru-ahead128 3489660928 110 PUMP_POLICY=lru PUMP_LRU_LOOKAHEAD=128MiB -- $dec
run decode-lru-x3 2340421632 150 PUMP_POLICY=lru -- $dec
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
