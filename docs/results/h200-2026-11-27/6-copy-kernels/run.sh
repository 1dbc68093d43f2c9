#!/usr/bin/env bash
# Fifteenth session, call 6 (the device time left: about 4 minutes of runs). vmm with both directions by copy kernels
# (PUMP_COPY_VIA=kernels: no copy-engine work for a grant of access to wait for; call 5 still spent 353 us a map under
# GPT) against vmm as it is and the copy path, interleaved at half: GPT fp32, the decode (learned), ViT-B/16 (zoo.py).
# The results are packed after every run (the lease may end mid-call).
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r6; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB launch waits {g('launch_waits_ns')/1e6:.0f} ms "
      f"maps {g('backend_physical_maps')} grants {g('backend_physical_access_calls')} map {g('backend_physical_map_ns')/1e6:.0f} ms creates {g('backend_physical_creates')} "
      f"unmaps {g('backend_physical_unmaps')} unmap {g('backend_physical_unmap_ns')/1e6:.0f} ms worker {g('backend_worker_busy_ns')/1e6:.0f} ms "
      f"policy {g('launch_policy_ns')/1e6:.0f} ms")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 250 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  tar czf $OUT/r6.tgz -C $OUT r6
}
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
vit=".device/zoo.py --model vit --steps 10"
run gpt-vmm-kernels 4026531840 60 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernels -- $gpt
run gpt-vmm 4026531840 60 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run decode-learned-vmm-kernels 3489660928 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernels -- $dec
run gpt-copy 4026531840 60 PUMP_POLICY=lru -- $gpt
run decode-learned-vmm 3489660928 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $dec
run vit-vmm-kernels 3382286336 60 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernels -- $vit
tar czf $OUT/r6.tgz -C $OUT r6 && rm -rf $R
