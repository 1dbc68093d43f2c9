#!/usr/bin/env bash
# Seventeenth session, call 2: the library with grants joined across chunks still mapped (one cuMemSetAccess per
# allocation and batch where the chunks between are mapped), interleaved A/Bs at half the footprint on vmm:
# PUMP_VMM_MAP_FIRST=1 (a batch's fetches mapped before its evictions are queued) against the default on GPT fp32,
# ViT-B/16 (zoo.py, outside tests/) and the decode (lru, clean victims first); then issue 8's
# PUMP_LEARNED_IDLE_FIRST=1 against learned on GPT and ViT.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB "
      f"maps {g('backend_physical_maps')} grants {g('backend_physical_access_calls')} slow {g('backend_physical_slow_access_calls')} "
      f"map {g('backend_physical_map_ns')/1e6:.0f} ms worker {g('backend_worker_busy_ns')/1e6:.0f} ms "
      f"launch waits {g('launch_waits_ns')/1e6:.0f} ms mapped high {g('backend_physical_mapped_high_water')/1e9:.2f} GB")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -m2 -i "error" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
vit=".device/zoo.py --model vit --steps 10"
run gpt-vmm 4026531840 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run gpt-first 4026531840 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VMM_MAP_FIRST=1 -- $gpt
run vit-vmm 3382286336 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $vit
run vit-first 3382286336 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VMM_MAP_FIRST=1 -- $vit
tar czf $OUT/r2.tgz -C $OUT r2
run decode-vmm 3489660928 100 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_LRU_VICTIMS=idle-dead,clean,any -- $dec
run decode-first 3489660928 100 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_LRU_VICTIMS=idle-dead,clean,any PUMP_VMM_MAP_FIRST=1 -- $dec
run gpt-learned 4026531840 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $gpt
run gpt-learned-idle 4026531840 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm PUMP_LEARNED_IDLE_FIRST=1 -- $gpt
tar czf $OUT/r2.tgz -C $OUT r2
run vit-learned 3382286336 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $vit
run vit-learned-idle 3382286336 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm PUMP_LEARNED_IDLE_FIRST=1 -- $vit
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
