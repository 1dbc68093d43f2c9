#!/usr/bin/env bash
# JAX with and without preallocation under a budget (XLA command buffers now off under pump), then
# learned/lru decode before this session's fence changes (old) and after (new).
R=$OUT/e; mkdir -p $R
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv > $R/gpu.txt
FRAMEWORKS_CONFIGS="jax-prealloc jax-noprealloc" POLICIES=none,lru FRAMEWORKS_STEPS=8 timeout 330 tests/gpu/device_suite.sh frameworks > $R/frameworks-console.txt 2>&1
echo "frameworks rc=$?"; grep -E "summary|MISS|FAIL|native:" $R/frameworks-console.txt | cut -c1-260
mv $OUT/frameworks* $R/ 2>/dev/null
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
export PUMP_PLUGIN_DIR=$PWD/.device/lib/pump
for run in learned-old learned-new lru-new learned-old2 learned-new2; do
  pol=${run%%-*}; lib=${run#*-}; lib=${lib%2}
  L=$PWD/.device/$([ $lib = old ] && echo old || echo lib)/libpump.so
  LD_PRELOAD=$L PUMP_POLICY=$pol PUMP_GPU_BUDGET=3489660928 PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/decode-$run.json \
    timeout 80 python3 tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10 > $R/decode-$run.txt 2> $R/decode-$run.err
  echo "decode $run rc=$? $(grep -o 'token [0-9]* in [0-9.]* ms' $R/decode-$run.err | awk '{print $4}' | paste -sd' ') $(grep checksum $R/decode-$run.txt | cut -c1-40)"
done
tar czf $OUT/e.tgz -C $OUT e && rm -rf $R
