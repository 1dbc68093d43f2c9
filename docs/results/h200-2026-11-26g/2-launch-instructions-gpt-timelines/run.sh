#!/usr/bin/env bash
# Fourteenth session, call 2. (1) The per-launch cost while everything fits, counted in instructions the launching
# thread retires (tests/gpu/torch/thread_instructions.py, where the CPU's counter can be read) beside its CPU time:
# densenet121-small (2,500+ kernels a step), native, disabled, lru, learned, interleaved. (2) Device timelines of GPT
# fp32 training at half under lru and learned (two steps each): learned fetches ahead yet was slower than lru
# (405-411 against 367-381 ms/step, thirteenth session): what runs beside what?
# The instruction counter could not be opened on the device (no hardware counter offered; perf_event_paranoid 2), so
# the column stayed empty and the helper was not kept: launch_cost.py as committed has no such column.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
cat /proc/sys/kernel/perf_event_paranoid > $R/perf_event_paranoid.txt 2>&1
timeout 300 python3 tests/gpu/torch/launch_cost.py --libpump $LIB --model densenet121-small --rounds 3 --steps 14 \
  --policies lru,learned --no-watched --only native,disabled,lru,learned --out $R/launch > $R/launch-cost.txt 2>&1
echo "launch-cost rc=$?"; tail -8 $R/launch-cost.txt
for pol in lru learned; do
  LD_PRELOAD=$LIB PUMP_POLICY=$pol PUMP_GPU_BUDGET=4026531840 PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/gpt-$pol.json timeout 100 python3 tests/gpu/torch/train_steps.py --model transformer --steps 7 \
    --profile $R/gpt-$pol.trace.json > $R/gpt-$pol.txt 2> $R/gpt-$pol.err
  echo "gpt-$pol rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/gpt-$pol.txt | cut -d= -f2 | paste -sd' ')"
done
python3 tests/gpu/torch/timeline_overlap.py $R/*.trace.json > $R/overlap.txt 2>&1; cat $R/overlap.txt | head -40
gzip $R/*.trace.json; rm -f $R/launch/stats-*.json
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
