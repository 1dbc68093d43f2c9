#!/usr/bin/env bash
# Fifteenth session, call 1. PUMP_DATAPATH=vmm (the copy data path on physical chunks of pump's own, 32 MiB) against
# the copy data path on managed memory, interleaved, lru: the backend's GPU test (an allocation on physical chunks
# saved, unmapped, restored), the Llama-shaped decode at half its weights and GPT fp32 training at half, each also
# under PUMP_VERIFY=poison with vmm. Tokens and losses must be native's (checksums).
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { grep -o '"backend_\(physical_[a-z_]*\|discard_call_ns\|issue_wait_ns\|populate_issue_ns\)": *[0-9]*' $R/$1.json 2>/dev/null | tr -d '"' | sed 's/backend_//' | paste -sd' '; }
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
grep -A8 "physical chunks" $R/backend_gpu_test.txt; tail -1 $R/backend_gpu_test.txt
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
python3 $dec > $R/decode-native.txt 2> $R/decode-native.err; show decode-native $?
run decode-vmm 3489660928 110 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $dec
run decode-copy 3489660928 110 PUMP_POLICY=lru -- $dec
run gpt-vmm 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run gpt-copy 4026531840 90 PUMP_POLICY=lru -- $gpt
python3 $gpt > $R/gpt-native.txt 2> $R/gpt-native.err; show gpt-native $?
run decode-vmm-poison 3489660928 110 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VERIFY=poison -- $dec
run gpt-vmm-poison 4026531840 90 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VERIFY=poison -- $gpt
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
