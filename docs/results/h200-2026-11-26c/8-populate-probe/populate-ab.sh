#!/usr/bin/env bash
# Call 13: populates by discard-and-prefetch (one batch call, populates on an idle stream too) against
# cudaMemPrefetchAsync per 8 MiB piece (populates only when deferred), GPT fp32 and decode at half, lru.
cd "$(dirname "$0")/.."
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
fp=8053063680
for pop in discard-and-prefetch prefetch; do
  LD_PRELOAD=$LIB PUMP_POLICY=lru PUMP_POPULATE=$pop PUMP_GPU_BUDGET=$((fp / 2)) PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/gpt-lru-$pop.json \
    timeout 100 python3 tests/gpu/torch/train_steps.py --model transformer --steps 8 > $R/gpt-lru-$pop.txt 2>$R/gpt-lru-$pop.err
  echo "gpt lru $pop rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/gpt-lru-$pop.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/gpt-lru-$pop.txt)"
done
for pop in discard-and-prefetch prefetch; do
  LD_PRELOAD=$LIB PUMP_POLICY=lru PUMP_POPULATE=$pop PUMP_GPU_BUDGET=3489660928 PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/decode-lru-$pop.json \
    timeout 110 python3 tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 8 > $R/decode-lru-$pop.txt 2> $R/decode-lru-$pop.err
  echo "decode lru $pop rc=$? $(grep -o 'token [0-9] in [0-9.]* ms' $R/decode-lru-$pop.err | awk '{print $4}' | paste -sd' ') $(grep checksum $R/decode-lru-$pop.txt)"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
