#!/usr/bin/env bash
# Eighteenth session, call 3: lru's cyclic pass with two equal gaps (call 1) against three (call 2), A/B in one call:
# the decode and GPT fp32 at half, interleaved, against lru's default victims for GPT (vmm, the default data path).
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"budget {g('budget_bytes')/1e9:.2f} GB restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB grants {g('backend_physical_access_calls')} "
      f"limit waits {g('backend_physical_limit_waits')} host maps {g('backend_physical_host_maps')} "
      f"mapped high {g('backend_physical_mapped_high_water')/1e9:.2f} GB pooled {g('backend_physical_pooled_bytes')/1e9:.2f} GB")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -m2 -i "error\|warn\|cyclic pass" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...   (BUDGET "-": none given)
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 540 ] || { echo "skipped $name (time)"; return; }
  [ "$budget" != - ] && envs+=(PUMP_GPU_BUDGET=$budget)
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
cyc=PUMP_LRU_VICTIMS=idle-dead,cyclic,idle-clean,any
run decode-cyc2 3489660928 100 PUMP_POLICY=lru $cyc PUMP_LRU_LOOP_GAPS=2 -- $dec
run decode-cyc3 3489660928 100 PUMP_POLICY=lru $cyc PUMP_LRU_LOOP_GAPS=3 -- $dec
tar czf $OUT/r3.tgz -C $OUT r3
for i in 1 2; do
  run gpt-lru-$i 4026531840 80 PUMP_POLICY=lru -- $gpt
  run gpt-cyc2-$i 4026531840 80 PUMP_POLICY=lru $cyc PUMP_LRU_LOOP_GAPS=2 -- $gpt
  run gpt-cyc3-$i 4026531840 80 PUMP_POLICY=lru $cyc PUMP_LRU_LOOP_GAPS=3 -- $gpt
  tar czf $OUT/r3.tgz -C $OUT r3
done
run decode-cyc2-2 3489660928 100 PUMP_POLICY=lru $cyc PUMP_LRU_LOOP_GAPS=2 -- $dec
run decode-cyc3-2 3489660928 100 PUMP_POLICY=lru $cyc PUMP_LRU_LOOP_GAPS=3 -- $dec
tar czf $OUT/r3.tgz -C $OUT r3 && rm -rf $R
