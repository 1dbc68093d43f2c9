#!/usr/bin/env bash
# Fifteenth session, call 2. PUMP_DATAPATH=vmm now maps from a pool of unmapped chunks (call 1: 143 us a map, most of
# it cuMemCreate; decode 23% slower than the copy path, GPT 15% faster). Interleaved, lru, at half: the decode and GPT
# fp32 (tests/), ViT-B/16 training (zoo.py, outside tests/): vmm, vmm with the copy engines straight to device memory
# (PUMP_COPY_VIA=engines: staging buffers exist for managed memory, where the copy engines serialize), the copy path.
# Also the backend's GPU test with its two-direction checks fixed.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { grep -o '"backend_\(physical_[a-z_]*\|discard_call_ns\|issue_wait_ns\|populate_issue_ns\|restore_bytes\|save_bytes\|worker_busy_ns\)": *[0-9]*' $R/$1.json 2>/dev/null | tr -d '"' | sed 's/backend_//;s/physical_//' | paste -sd' '; }
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
timeout 120 .device/bin/backend_cuda_gpu_test > $R/backend_gpu_test.txt 2>&1; echo "backend_cuda_gpu_test rc=$?"
grep -E "FAIL|out \(save" $R/backend_gpu_test.txt; tail -1 $R/backend_gpu_test.txt
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
vit=".device/zoo.py --model vit --steps 10"
run decode-vmm 3489660928 110 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $dec
run decode-vmm-engines 3489660928 110 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=engines -- $dec
run decode-copy 3489660928 110 PUMP_POLICY=lru -- $dec
run gpt-vmm 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run gpt-vmm-engines 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_COPY_VIA=engines -- $gpt
run gpt-copy 4026531840 90 PUMP_POLICY=lru -- $gpt
run vit-vmm 3382286336 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $vit
run vit-copy 3382286336 90 PUMP_POLICY=lru -- $vit
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
