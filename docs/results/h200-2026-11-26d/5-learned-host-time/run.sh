#!/usr/bin/env bash
# learned's host time per kernel: the library and learned plugin from before this session (old) against
# this session's head (fence memo, per-pass scan, victim pass stop), GPT fp32 at half, then decode.
R=$OUT/g; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
fp=8053063680
run() {  # run NAME LIB PLUGIN_DIR ARGS...
  local name=$1 lib=$2 plugins=$3; shift 3
  LD_PRELOAD=$lib PUMP_PLUGIN_DIR=$plugins PUMP_POLICY=learned PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_STATS=$R/$name.json timeout 120 "$@" > $R/$name.txt 2> $R/$name.err
  echo "$name rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/$name.txt | cut -d= -f2 | paste -sd' ') $(grep -o 'token [0-9]* in [0-9.]* ms' $R/$name.err | awk '{print $4}' | paste -sd' ') $(grep checksum $R/$name.txt | cut -c1-40)"
}
export PUMP_GPU_BUDGET=$((fp / 2))
for v in old new old2 new2; do
  if [ ${v%2} = old ]; then L=$PWD/.device/old/libpump.so; P=$PWD/.device/old/pump; else L=$PWD/.device/lib/libpump.so; P=$PWD/.device/lib/pump; fi
  [ ${v%2} = old ] && cp -n .device/lib/pump/libpump_extractor_*.so .device/old/pump/ 2>/dev/null
  run gpt-learned-$v $L $P python3 tests/gpu/torch/train_steps.py --model transformer --steps 8
done
export PUMP_GPU_BUDGET=3489660928
run decode-learned-new $PWD/.device/lib/libpump.so $PWD/.device/lib/pump python3 tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 8
tar czf $OUT/g.tgz -C $OUT g && rm -rf $R
