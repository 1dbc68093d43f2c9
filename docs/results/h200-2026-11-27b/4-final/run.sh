#!/usr/bin/env bash
# Sixteenth session, call 4: the session's final library (physical chunks copied by the copy engines directly).
# The link in the same run (pump-datapath-bench --physical: its cudaMemcpyAsync reference); GPT fp32 at half on vmm
# and on the copy path, at a third on vmm; ViT-B/16 on vmm with and without saves by a copy kernel; the decode at
# half (learned, and lru with clean victims first) on vmm; BERT training at half (zoo.py, outside tests/) by pump-bench.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r4; mkdir -p $R
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
  [ $SECONDS -lt 420 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
timeout 60 .device/bin/pump-datapath-bench --physical --total 4GiB --blocks 256MiB --repeats 2 --json $R/datapath-physical.json > $R/datapath-physical.txt 2>&1
echo "datapath --physical rc=$?"; grep -A3 "^| block" $R/datapath-physical.txt; grep "^reference" $R/datapath-physical.txt | head -1
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
vit=".device/zoo.py --model vit --steps 10"
run gpt-vmm 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run gpt-copy 4026531840 90 PUMP_POLICY=lru -- $gpt
run gpt-x3-vmm 2684354560 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
tar czf $OUT/r4.tgz -C $OUT r4
run vit-vmm 3382286336 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $vit
run vit-vmm-kernel 3382286336 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernel -- $vit
run decode-learned-vmm 3489660928 110 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $dec
run decode-lru-clean-vmm 3489660928 110 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_LRU_VICTIMS=idle-dead,clean,any -- $dec
tar czf $OUT/r4.tgz -C $OUT r4
left=$(( 585 - SECONDS ))
if [ $left -gt 60 ]; then
  PUMP_MANAGED_LIMIT=$(limit) timeout $left .device/bin/pump-bench --libpump $LIB --plugin-dir .device/lib/pump --oversubscription 2 \
    --policies lru,learned --datapath copy,vmm --repeats 1 --iterations 6 --json $R/bert.json -- python3 .device/zoo.py --model bert --steps 6 > $R/bert.txt 2>&1
  echo "bert rc=$?"; grep -E "^python3 " $R/bert.txt
fi
tar czf $OUT/r4.tgz -C $OUT r4 && rm -rf $R
