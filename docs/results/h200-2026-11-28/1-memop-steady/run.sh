#!/usr/bin/env bash
# Twenty-first session, call 1. (a) Does a stream-memory-operation fence hang on physical chunks
# (tests/gpu/memop_vmm_probe.cu, one case per process, a watchdog ends a hang)? (b) Where GPT bf16's
# steady steps go at 1.5: each policy run for 8 and for 16 steps, PUMP_STATS of both; the counters'
# difference is 8 steady steps.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprint 4.7 GB on a 140 GB card; the probe
# maps 448 MiB and pins 320 MiB.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
{ command -v perf; cat /proc/sys/kernel/perf_event_paranoid; python3 -c "import py_spy" 2>&1 | tail -1; } > $R/tools.txt 2>&1
for c in vmm vmm-late vmm-saving vmm-unmap vmm-managed; do
  timeout 40 .device/bin/memop_vmm_probe $c >> $R/probe.txt 2>&1; echo "rc=$?" >> $R/probe.txt
done
cat $R/probe.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 400 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  tar czf $OUT/r1.tgz -C $OUT r1
}
gpt="tests/gpu/torch/train_steps.py --model transformer --dtype bf16"
for p in learned lru; do
  run gpt-$p-8 2954188117 60 PUMP_POLICY=$p -- $gpt --steps 8
  run gpt-$p-16 2954188117 60 PUMP_POLICY=$p -- $gpt --steps 16
done
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
