#!/usr/bin/env bash
# Sixteenth session, call 6: maps on the physical chunks' mapper thread, the in stream waiting for them on the
# device (PUMP_VMM_MAP_AHEAD=1, the new default) against maps on the worker (0), interleaved: GPT fp32, ViT-B/16,
# the decode (lru with clean victims first; learned), at half; GPT under PUMP_VERIFY=poison; the backend's GPU test;
# the backend alone on physical chunks.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r6; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB discarded {g('bytes_discarded')/1e9:.1f} GB "
      f"launch waits {g('launch_waits_ns')/1e6:.0f} ms maps {g('backend_physical_maps')} ahead {g('backend_physical_maps_ahead')} fail {g('backend_physical_map_failures')} map {g('backend_physical_map_ns')/1e6:.0f} ms "
      f"worker {g('backend_worker_busy_ns')/1e6:.0f} ms policy {g('launch_policy_ns')/1e6:.0f} ms mapped high {g('backend_physical_mapped_high_water')/1e9:.2f} GB")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 470 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
timeout 120 .device/bin/backend_cuda_gpu_test > $R/backend_gpu_test.txt 2>&1; echo "backend_cuda_gpu_test rc=$?"; grep -E "FAIL|PASSED|physical" $R/backend_gpu_test.txt | head -5
timeout 60 .device/bin/pump-datapath-bench --physical --total 4GiB --blocks 256MiB --repeats 2 --json $R/datapath-physical.json > $R/datapath-physical.txt 2>&1
echo "datapath --physical rc=$?"; grep -A3 "^| block" $R/datapath-physical.txt; grep "^reference" $R/datapath-physical.txt | head -1
tar czf $OUT/r6.tgz -C $OUT r6
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
vit=".device/zoo.py --model vit --steps 10"
clean=PUMP_LRU_VICTIMS=idle-dead,clean,any
run gpt-ahead 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run gpt-worker 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VMM_MAP_AHEAD=0 -- $gpt
run vit-ahead 3382286336 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $vit
run vit-worker 3382286336 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VMM_MAP_AHEAD=0 -- $vit
tar czf $OUT/r6.tgz -C $OUT r6
run decode-lru-clean-ahead 3489660928 110 PUMP_POLICY=lru PUMP_DATAPATH=vmm $clean -- $dec
run decode-lru-clean-worker 3489660928 110 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VMM_MAP_AHEAD=0 $clean -- $dec
run gpt-ahead-poison 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VERIFY=poison -- $gpt
run decode-learned-ahead 3489660928 110 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $dec
tar czf $OUT/r6.tgz -C $OUT r6 && rm -rf $R
