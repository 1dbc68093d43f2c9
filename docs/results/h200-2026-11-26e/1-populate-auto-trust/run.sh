#!/usr/bin/env bash
# Twelfth session, call 1. PUMP_POPULATE=auto against prefetch (the default), lru and learned, GPT fp32 training at half
# its footprint; the fence memo's trust (PUMP_FENCE_TRUST_US 0, 10, 50 = default) under learned on the same program;
# then BERT (zoo.py, outside tests/, copied to .device/) at x2 under pump-bench, auto against prefetch.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
fp=8053063680
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
gpt() {  # gpt NAME ENV...
  local name=$1; shift
  env "$@" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$((fp / 2)) PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/$name.json timeout 100 python3 tests/gpu/torch/train_steps.py --model transformer --steps 8 > $R/$name.txt 2>$R/$name.err
  echo "$name rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/$name.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$name.txt)"
}
timeout 40 python3 tests/gpu/torch/train_steps.py --model transformer --steps 8 > $R/gpt-native.txt 2>&1
echo "gpt-native $(grep -o 'iteration_ms=[0-9.]*' $R/gpt-native.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/gpt-native.txt)"
for pol in lru learned; do for pop in auto prefetch; do gpt gpt-$pol-$pop PUMP_POLICY=$pol PUMP_POPULATE=$pop; done; done
for us in 0 10; do gpt gpt-learned-trust$us PUMP_POLICY=learned PUMP_FENCE_TRUST_US=$us; done
gpt gpt-learned-prefetch2 PUMP_POLICY=learned
for pop in auto prefetch; do
  PUMP_POPULATE=$pop timeout 150 .device/bin/pump-bench --libpump $LIB --plugin-dir .device/lib/pump --oversubscription 2 --policies lru --repeats 1 \
    --json $R/bert-$pop.json -- python3 .device/zoo.py --model bert --steps 8 > $R/bert-$pop.txt 2>&1
  echo "bert $pop:"; grep -E "^python3 +x2.0 +(none|lru)" $R/bert-$pop.txt
done
# Under the default, how often a populate met an idle stream (a prefetch there populates nothing):
grep -H '"backend_populate_idle' $R/*-prefetch.json
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
