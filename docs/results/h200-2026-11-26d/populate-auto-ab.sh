#!/usr/bin/env bash
# Not run yet (prepared in the eleventh session). PUMP_POPULATE=auto against prefetch (the default), lru and learned, GPT fp32 training
# and the Llama-shaped decode at half, then BERT (zoo.py, outside tests/, copied to .device/) at x2 under pump-bench.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/auto; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
fp=8053063680
for pol in lru learned; do for pop in auto prefetch; do
  LD_PRELOAD=$LIB PUMP_POLICY=$pol PUMP_POPULATE=$pop PUMP_GPU_BUDGET=$((fp / 2)) PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/gpt-$pol-$pop.json \
    timeout 90 python3 tests/gpu/torch/train_steps.py --model transformer --steps 8 > $R/gpt-$pol-$pop.txt 2>$R/gpt-$pol-$pop.err
  echo "gpt $pol $pop rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/gpt-$pol-$pop.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/gpt-$pol-$pop.txt)"
done; done
for pol in lru learned; do for pop in auto prefetch; do
  LD_PRELOAD=$LIB PUMP_POLICY=$pol PUMP_POPULATE=$pop PUMP_GPU_BUDGET=3489660928 PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/decode-$pol-$pop.json \
    timeout 150 python3 tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 8 > $R/decode-$pol-$pop.txt 2> $R/decode-$pol-$pop.err
  echo "decode $pol $pop rc=$? $(grep -o 'token [0-9]* in [0-9.]* ms' $R/decode-$pol-$pop.err | awk '{print $4}' | paste -sd' ') $(grep checksum $R/decode-$pol-$pop.txt | cut -c1-40)"
done; done
timeout 30 python3 tests/gpu/torch/train_steps.py --model transformer --steps 8 > $R/gpt-native.txt 2>&1
for pop in auto prefetch; do
  PUMP_POPULATE=$pop timeout 150 .device/bin/pump-bench --libpump $LIB --plugin-dir .device/lib/pump --oversubscription 2 --policies lru --repeats 1 \
    --json $R/bert-$pop.json -- python3 .device/zoo.py --model bert --steps 8 > $R/bert-$pop.txt 2>&1
  grep -E "^python3 +x2.0 +(none|lru)" $R/bert-$pop.txt
done
# Under the default, how often a populate met an idle stream (a prefetch there populates nothing):
grep -h '"backend_populate_idle' $R/*-prefetch.json
tar czf $OUT/auto.tgz -C $OUT auto && rm -rf $R
