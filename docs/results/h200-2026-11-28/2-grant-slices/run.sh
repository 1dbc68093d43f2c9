#!/usr/bin/env bash
# Twenty-first session, call 2. (a) The memop probe's control (Y mapped all along: no map, no grant):
# did call 1's cases hang for the map and grant, or for the probe? (b) grant_wait_probe with the
# device-to-host stream's priority and copies fed with one or two in flight. (c) GPT bf16 at 1.5,
# learned, 32 MiB chunks against 128 MiB, interleaved.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprint 4.7 GB on a 140 GB card; the probes map
# at most 2.5 GiB and pin at most 512 MiB.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
for c in mapped vmm; do
  timeout 40 .device/bin/memop_vmm_probe $c >> $R/memop_probe.txt 2>&1; echo "rc=$?" >> $R/memop_probe.txt
done
cat $R/memop_probe.txt
timeout 120 .device/bin/grant_wait_probe > $R/grant_wait_probe.txt 2>&1; echo "rc=$?" >> $R/grant_wait_probe.txt
grep -A1 "grants of\|^copies\|^idle" $R/grant_wait_probe.txt | grep -v "each grant" | cut -c1-200
tar czf $OUT/r2.tgz -C $OUT r2
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 400 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  tar czf $OUT/r2.tgz -C $OUT r2
}
gpt="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
for i in a b; do
  run gpt-learned-32-$i 2954188117 60 PUMP_POLICY=learned -- $gpt
  run gpt-learned-128-$i 2954188117 60 PUMP_POLICY=learned PUMP_VMM_CHUNK=128MiB -- $gpt
done
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
