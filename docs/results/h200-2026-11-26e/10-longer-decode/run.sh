#!/usr/bin/env bash
# PREPARED, NOT RUN (the twelfth session ran out of device time): the next session runs it first.
# Twelfth session, call 11. Does learned's decode settle once every weight has a pinned shadow? 16 tokens at half the
# weights, learned then lru (the 8-token runs' steady tokens 3-8 included ~75 ms device stalls while shadow slabs were
# pinned), each with a device timeline of tokens 13-14 summed up by tests/gpu/torch/timeline_overlap.py.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r10; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
for pol in learned lru; do
  LD_PRELOAD=$LIB PUMP_POLICY=$pol PUMP_GPU_BUDGET=3489660928 PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/decode-$pol.json timeout 130 python3 tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 16 \
    --profile $R/decode-$pol.trace.json --profile-from 13 > $R/decode-$pol.txt 2> $R/decode-$pol.err
  echo "decode-$pol rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/decode-$pol.txt | cut -d= -f2 | paste -sd' ') $(grep -o '"backend_pinned_alloc_ns": [0-9]*' $R/decode-$pol.json)"
done
python3 tests/gpu/torch/timeline_overlap.py $R/*.trace.json | tee $R/overlap.txt
gzip $R/*.trace.json
tar czf $OUT/r10.tgz -C $OUT r10 && rm -rf $R
