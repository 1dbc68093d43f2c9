#!/usr/bin/env bash
# Seventeenth session, call 3: the session's library (map first on by default, grants joined, physical memory held
# to budget + pool). The link in the same call (pump-datapath-bench --physical: its cudaMemcpyAsync reference), then
# at half on vmm: GPT fp32 under lru with and without map first, learned, learned with idle-first; GPT at a third;
# ViT-B/16 (zoo.py, outside tests/) under lru and learned; the decode under lru (clean first) and learned.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB grants {g('backend_physical_access_calls')} "
      f"slow {g('backend_physical_slow_access_calls')} map {g('backend_physical_map_ns')/1e6:.0f} ms limit waits {g('backend_physical_limit_waits')} "
      f"over {g('backend_physical_over_limit_bytes')/1e9:.2f} GB mapped high {g('backend_physical_mapped_high_water')/1e9:.2f} GB pooled {g('backend_physical_pooled_bytes')/1e9:.2f} GB")
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
timeout 40 .device/bin/pump-datapath-bench --physical --total 4GiB --blocks 256MiB --repeats 1 --json $R/datapath-physical.json > $R/datapath-physical.txt 2>&1
echo "datapath --physical rc=$?"; grep -A2 "^| block" $R/datapath-physical.txt; grep "^reference" $R/datapath-physical.txt | head -1
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
vit=".device/zoo.py --model vit --steps 10"
run gpt-lru 4026531840 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run gpt-lru-after 4026531840 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VMM_MAP_FIRST=0 -- $gpt
run gpt-learned 4026531840 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $gpt
run gpt-learned-idle 4026531840 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm PUMP_LEARNED_IDLE_FIRST=1 -- $gpt
tar czf $OUT/r3.tgz -C $OUT r3
run gpt-x3-lru 2684354560 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run vit-lru 3382286336 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $vit
run vit-learned 3382286336 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $vit
tar czf $OUT/r3.tgz -C $OUT r3
run decode-lru-clean 3489660928 100 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_LRU_VICTIMS=idle-dead,clean,any -- $dec
run decode-learned 3489660928 100 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $dec
tar czf $OUT/r3.tgz -C $OUT r3 && rm -rf $R
