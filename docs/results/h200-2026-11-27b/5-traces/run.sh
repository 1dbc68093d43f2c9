#!/usr/bin/env bash
# Sixteenth session, call 5: PUMP_TRACE recordings of programs outside tests/ (zoo.py) to replay in the sim with the
# oracle: BERT training (lru and learned moved 3.2-3.7x the bound's bytes at x2 in call 4), ViT-B/16 training and the
# OPT-shaped decode. Everything fits (budget 16 GiB): a trace records the kernel -> blocks sequence, not a policy's moves.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r5; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
rec() {  # rec NAME ARGS...
  local name=$1; shift
  LD_PRELOAD=$LIB PUMP_GPU_BUDGET=17179869184 PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch PUMP_POLICY=lru \
    PUMP_TRACE=$R/$name.trace PUMP_STATS=$R/$name.json timeout 120 python3 .device/zoo.py "$@" > $R/$name.txt 2> $R/$name.err
  echo "$name rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/$name.txt | cut -d= -f2 | paste -sd' ') $(grep -h 'footprint\|checksum' $R/$name.txt | paste -sd' ') trace $(stat -c %s $R/$name.trace 2>/dev/null) bytes"
}
rec bert --model bert --steps 4
rec vit --model vit --steps 4
rec opt --model opt --steps 6
tar czf $OUT/r5.tgz -C $OUT r5 && rm -rf $R
