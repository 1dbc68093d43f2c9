#!/usr/bin/env bash
# Eighteenth session, call 1: the library with vmm the default data path (no PUMP_DATAPATH below) and the host
# fallback for a full device. The GPU test of the backend (a full device emulated: restores land in host memory);
# the link (pump-datapath-bench --physical); the decode at half its weights under lru's default victims, the new
# "cyclic" pass and clean first; GPT fp32 at half under lru default and cyclic; GPT with no budget at all (the
# default budget on vmm) against native; ViT-B/16 (zoo.py) under lru default and cyclic.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"budget {g('budget_bytes')/1e9:.2f} GB restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB grants {g('backend_physical_access_calls')} "
      f"limit waits {g('backend_physical_limit_waits')} host maps {g('backend_physical_host_maps')} "
      f"mapped high {g('backend_physical_mapped_high_water')/1e9:.2f} GB pooled {g('backend_physical_pooled_bytes')/1e9:.2f} GB")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -m2 -i "error\|warn" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...   (BUDGET "-": none given)
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 540 ] || { echo "skipped $name (time)"; return; }
  [ "$budget" != - ] && envs+=(PUMP_GPU_BUDGET=$budget)
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
timeout 120 .device/bin/backend_cuda_gpu_test > $R/backend_gpu_test.txt 2>&1; echo "backend_cuda_gpu_test rc=$?"
grep -A12 "full device" $R/backend_gpu_test.txt | head -14; grep -c FAIL $R/backend_gpu_test.txt
timeout 40 .device/bin/pump-datapath-bench --physical --total 2GiB --blocks 256MiB --repeats 1 --json $R/datapath-physical.json > $R/datapath-physical.txt 2>&1
echo "datapath --physical rc=$?"; grep -A2 "^| block" $R/datapath-physical.txt; grep "^reference" $R/datapath-physical.txt | head -1
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
vit=".device/zoo.py --model vit --steps 10"
run decode-lru 3489660928 100 PUMP_POLICY=lru -- $dec
run decode-cyclic 3489660928 100 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,cyclic,idle-clean,any -- $dec
run decode-clean 3489660928 100 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,clean,any -- $dec
tar czf $OUT/r1.tgz -C $OUT r1
run gpt-lru 4026531840 80 PUMP_POLICY=lru -- $gpt
run gpt-cyclic 4026531840 80 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,cyclic,idle-clean,any -- $gpt
run gpt-nobudget - 80 PUMP_POLICY=lru -- $gpt
timeout 80 python3 $gpt > $R/gpt-native.txt 2> $R/gpt-native.err; echo "gpt-native rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/gpt-native.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/gpt-native.txt | cut -c1-40)"
tar czf $OUT/r1.tgz -C $OUT r1
run vit-lru 3382286336 80 PUMP_POLICY=lru -- $vit
run vit-cyclic 3382286336 80 PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,cyclic,idle-clean,any -- $vit
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
