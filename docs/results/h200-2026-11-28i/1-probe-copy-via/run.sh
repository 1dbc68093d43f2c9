#!/usr/bin/env bash
# Twenty-fourth session, call 1.
# (a) tests/gpu/counter_order_probe.cu: is a producer stream's work held behind another stream's wait on a value
#     that producer writes later (the counter fences' hangs)? With CUDA_DEVICE_MAX_CONNECTIONS unset, 1 and 32.
# (b) Saves by a copy kernel (PUMP_COPY_VIA=kernel: a grant of access then has no copy engine's device-to-host work
#     to wait for) against the default (copy engines on physical chunks), lru, back to back, alternating which goes
#     first, on programs from tests/ (GPT bf16 and ResNet-50 at 1.5) and outside tests/ (zoo.py: ViT-B/16, BERT at
#     1.5, the OPT-shaped decode at half).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 2.9-10.9 GB on a 140 GB card; the probe 4 MiB.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
nvcc -O2 -std=c++17 -arch=sm_90 -o $R/counter_order_probe tests/gpu/counter_order_probe.cu -lcuda > $R/probe-build.txt 2>&1
for c in unset 1 32; do
  if [ $c = unset ]; then CUDA_MODULE_LOADING=EAGER timeout 60 $R/counter_order_probe 16 > $R/probe-$c.txt 2>&1
  else CUDA_MODULE_LOADING=EAGER CUDA_DEVICE_MAX_CONNECTIONS=$c timeout 60 $R/counter_order_probe 16 > $R/probe-$c.txt 2>&1; fi
  echo "probe connections=$c rc=$?"; cat $R/probe-$c.txt
done
rm -f $R/counter_order_probe
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB discarded {g('bytes_discarded')/1e9:.1f} GB kernel-saved {g('backend_kernel_save_bytes')/1e9:.1f} GB maps {g('backend_physical_maps')} map_ms {g('backend_physical_map_ns')/1e6:.0f} slow_grants {g('backend_physical_slow_access_calls')} issue_wait_ms {g('backend_issue_wait_ns')/1e6:.0f} pressure_ms {g('launch_pressure_ns')/1e6:.0f} failed {g('backend_failed_calls')}")
PY
}
med() { grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | tail -6 | sort -n | awk '{a[NR]=$1} END {printf "%.1f", (a[3]+a[4])/2}'; }
show() { echo "$1 rc=$2 wall=$3s median6=$(med $1) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -i "error" $R/$1.err | head -3; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  local t0=$SECONDS
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_POLICY=lru PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $? $((SECONDS - t0))
}
pair() {  # pair NAME BUDGET TIMEOUT ORDER ARGS...
  local name=$1 budget=$2 t=$3 order=$4; shift 4
  for v in $order; do
    if [ $v = kernel ]; then run $name-kernel $budget $t PUMP_COPY_VIA=kernel -- "$@"
    else run $name-default $budget $t PUMP_COPY_VIA=staging -- "$@"; fi
  done
}
gptb="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 12"
pair gptb 2954188117 60 "default kernel" $gptb
pair vit 4510274901 60 "kernel default" .device/zoo.py --model vit --steps 10
pair res 4645890730 60 "default kernel" $res
pair opt 1466957824 75 "kernel default" .device/zoo.py --model opt --steps 12
pair bert 7243562341 75 "default kernel" .device/zoo.py --model bert --steps 8
