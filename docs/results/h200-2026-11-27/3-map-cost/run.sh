#!/usr/bin/env bash
# Fifteenth session, call 3. Where vmm's map time goes (call 2: 348 us a map under GPT, 117 under the decode, against
# the probe's 30 on an idle device): map_under_load_probe (each call per 32 MiB chunk, idle / under kernels / under
# copies). GPT fp32 at half with larger chunks (64 and 128 MiB: fewer maps). And why the decode moves 45% more under
# vmm than on the copy path (lru prefers idle clean victims: timing decides): learned on both, lru on vmm again.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB launch waits {g('launch_waits_ns')/1e6:.0f} ms "
      f"maps {g('backend_physical_maps')} map {g('backend_physical_map_ns')/1e6:.0f} ms creates {g('backend_physical_creates')} "
      f"unmaps {g('backend_physical_unmaps')} unmap {g('backend_physical_unmap_ns')/1e6:.0f} ms worker {g('backend_worker_busy_ns')/1e6:.0f} ms "
      f"policy {g('launch_policy_ns')/1e6:.0f} ms")
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
nvcc -O2 -std=c++17 -arch=sm_90 -o $R/map_under_load_probe tests/gpu/map_under_load_probe.cu -lcuda && timeout 60 $R/map_under_load_probe | tee $R/map_under_load_probe.txt; rm -f $R/map_under_load_probe
timeout 120 .device/bin/backend_cuda_gpu_test > $R/backend_gpu_test.txt 2>&1; echo "backend_cuda_gpu_test rc=$?"; grep -E "FAIL|out \(save" $R/backend_gpu_test.txt
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
run gpt-vmm-64 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VMM_CHUNK=64MiB -- $gpt
run gpt-vmm-128 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VMM_CHUNK=128MiB -- $gpt
run gpt-vmm 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run decode-learned-vmm 3489660928 110 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $dec
run decode-learned-copy 3489660928 110 PUMP_POLICY=learned -- $dec
run decode-lru-vmm 3489660928 110 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=engines -- $dec
tar czf $OUT/r3.tgz -C $OUT r3 && rm -rf $R
