#!/usr/bin/env bash
# Fifteenth session, call 4. vmm with one cuMemSetAccess per run of neighbouring chunks (call 3's probe: a grant
# waits 0.4-1 ms for the copy engines' work in flight, whatever its size). Interleaved at half: the decode under
# learned and lru on vmm and on the copy path, and accelerate's offload with the same budget; GPT fp32 training on
# vmm (32 and 128 MiB chunks) and the copy path.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r4; mkdir -p $R
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
  [ $SECONDS -lt 520 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
python3 $dec > $R/decode-native.txt 2> $R/decode-native.err; show decode-native $?
run decode-learned-vmm 3489660928 110 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $dec
run decode-learned-copy 3489660928 110 PUMP_POLICY=learned -- $dec
run decode-lru-vmm 3489660928 110 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $dec
run decode-lru-copy 3489660928 110 PUMP_POLICY=lru -- $dec
timeout 150 python3 $dec --offload accelerate --gpu-budget-gib 3.25 > $R/decode-accelerate.txt 2> $R/decode-accelerate.err; show decode-accelerate $?
run gpt-vmm 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run gpt-vmm-128 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VMM_CHUNK=128MiB -- $gpt
run gpt-copy 4026531840 90 PUMP_POLICY=lru -- $gpt
run gpt-learned-vmm 4026531840 90 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $gpt
tar czf $OUT/r4.tgz -C $OUT r4 && rm -rf $R
