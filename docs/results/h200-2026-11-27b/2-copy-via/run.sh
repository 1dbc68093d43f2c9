#!/usr/bin/env bash
# Sixteenth session, call 2. Physical chunks copied by the copy engines directly (no staging), against saves by
# a copy kernel (PUMP_COPY_VIA=kernel: no device-to-host copy-engine work for a grant to wait on); lru with
# clean victims first whether idle or not (PUMP_LRU_VICTIMS=idle-dead,clean,any). GPT, ViT, the decode, at half.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
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
  [ $SECONDS -lt 520 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
bench() { timeout 100 .device/bin/pump-datapath-bench --physical --total 4GiB --blocks 32MiB,256MiB --repeats 2 "$@"; }
bench --json $R/datapath-physical.json > $R/datapath-physical.txt 2>&1; echo "datapath --physical rc=$?"; grep -A4 "^| block" $R/datapath-physical.txt; grep "^reference\|^compute" $R/datapath-physical.txt
bench --copy-via kernel --json $R/datapath-physical-kernel.json > $R/datapath-physical-kernel.txt 2>&1; echo "datapath --physical --copy-via kernel rc=$?"; grep -A4 "^| block" $R/datapath-physical-kernel.txt; grep "^reference\|^compute" $R/datapath-physical-kernel.txt
tar czf $OUT/r2.tgz -C $OUT r2
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
vit=".device/zoo.py --model vit --steps 10"
run gpt-vmm 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run gpt-vmm-kernel 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernel -- $gpt
run vit-vmm 3382286336 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $vit
run vit-vmm-kernel 3382286336 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernel -- $vit
tar czf $OUT/r2.tgz -C $OUT r2
run decode-lru-clean-vmm 3489660928 110 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,clean,any PUMP_DATAPATH=vmm -- $dec
run decode-lru-clean-copy 3489660928 110 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,clean,any -- $dec
run decode-lru-clean-vmm-kernel 3489660928 110 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,clean,any PUMP_DATAPATH=vmm PUMP_COPY_VIA=kernel -- $dec
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
