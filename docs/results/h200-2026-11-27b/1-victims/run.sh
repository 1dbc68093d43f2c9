#!/usr/bin/env bash
# Sixteenth session, call 1. What a grant of access waits for (tests/gpu/grant_wait_probe.cu); the
# backend alone on physical chunks (pump-datapath-bench --physical, the same run's link rates); lru's
# victim order (PUMP_LRU_VICTIMS) on the decode at half its weights, on vmm and on the copy path, and on
# GPT fp32 training at half, interleaved.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB discarded {g('bytes_discarded')/1e9:.1f} GB "
      f"launch waits {g('launch_waits_ns')/1e6:.0f} ms maps {g('backend_physical_maps')} map {g('backend_physical_map_ns')/1e6:.0f} ms "
      f"worker {g('backend_worker_busy_ns')/1e6:.0f} ms policy {g('launch_policy_ns')/1e6:.0f} ms mapped high {g('backend_physical_mapped_high_water')/1e9:.2f} GB")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
timeout 60 .device/bin/grant_wait_probe > $R/grant_wait_probe.txt 2>&1; echo "grant_wait_probe rc=$?"; cat $R/grant_wait_probe.txt
timeout 150 .device/bin/pump-datapath-bench --physical --total 4GiB --blocks 2MiB,32MiB,256MiB --repeats 3 \
  --json $R/datapath-physical.json > $R/datapath-physical.txt 2>&1; echo "datapath --physical rc=$?"; tail -30 $R/datapath-physical.txt
tar czf $OUT/r1.tgz -C $OUT r1
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
run decode-lru-vmm 3489660928 110 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $dec
run decode-lru-any-vmm 3489660928 110 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,any PUMP_DATAPATH=vmm -- $dec
run decode-lru-copy 3489660928 110 PUMP_POLICY=lru -- $dec
run decode-lru-any-copy 3489660928 110 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,any -- $dec
run decode-lru-idle-vmm 3489660928 110 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,idle,any PUMP_DATAPATH=vmm -- $dec
tar czf $OUT/r1.tgz -C $OUT r1
run gpt-vmm 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run gpt-any-vmm 4026531840 90 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,any PUMP_DATAPATH=vmm -- $gpt
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
