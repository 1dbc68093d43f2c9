#!/usr/bin/env bash
# Seventeenth session, call 1: restores by a copy kernel (PUMP_COPY_VIA=kernel-in) so that the maps of physical
# chunks run ahead on the mapper thread (a kernel's addresses are not checked when it is queued). The backend alone
# (pump-datapath-bench --physical, copy engines against kernel-in), then interleaved in programs at half: GPT fp32
# (default, kernel-in, kernel-in without maps ahead, kernel-in under poison), ViT-B/16 and the decode (lru, clean first).
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB "
      f"maps {g('backend_physical_maps')} grants {g('backend_physical_access_calls')} map {g('backend_physical_map_ns')/1e6:.0f} ms "
      f"ahead {g('backend_physical_maps_ahead')} failed {g('backend_physical_map_failures')} waits {g('backend_physical_mapped_waits')} "
      f"kernel in {g('backend_kernel_restore_bytes')/1e9:.1f} GB worker {g('backend_worker_busy_ns')/1e6:.0f} ms mapped high {g('backend_physical_mapped_high_water')/1e9:.2f} GB")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -m2 -i "error" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
for via in staging kernel-in; do
  timeout 40 .device/bin/pump-datapath-bench --physical --copy-via $via --total 4GiB --blocks 256MiB --repeats 1 --json $R/datapath-$via.json > $R/datapath-$via.txt 2>&1
  echo "datapath --physical --copy-via $via rc=$?"; grep -A2 "^| block" $R/datapath-$via.txt; grep "^reference" $R/datapath-$via.txt | head -1
done
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
vit=".device/zoo.py --model vit --steps 10"
run gpt-vmm 4026531840 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run gpt-kin 4026531840 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernel-in -- $gpt
run gpt-kin-sync 4026531840 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernel-in PUMP_VMM_MAP_AHEAD=0 -- $gpt
run gpt-kin-poison 4026531840 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernel-in PUMP_VERIFY=poison -- $gpt
tar czf $OUT/r1.tgz -C $OUT r1
run vit-vmm 3382286336 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $vit
run vit-kin 3382286336 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernel-in -- $vit
run decode-vmm 3489660928 100 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_LRU_VICTIMS=idle-dead,clean,any -- $dec
run decode-kin 3489660928 100 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_LRU_VICTIMS=idle-dead,clean,any PUMP_COPY_VIA=kernel-in -- $dec
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
