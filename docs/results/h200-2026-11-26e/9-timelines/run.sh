#!/usr/bin/env bash
# Twelfth session, call 10. Device timelines (torch.profiler, CUPTI) of two tokens of the decode at half (lru, learned)
# and two steps of GPT fp32 training at half (lru) and natively, summed up by tests/gpu/torch/timeline_overlap.py:
# do pump's copies run beside the program's kernels, and how long does nothing in the trace run?
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r9; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
timeout 60 python3 tests/gpu/torch/train_steps.py --model transformer --steps 7 --profile $R/gpt-native.trace.json > $R/gpt-native.txt 2>&1
echo "gpt-native rc=$?"
for pol in lru; do
  LD_PRELOAD=$LIB PUMP_POLICY=$pol PUMP_GPU_BUDGET=4026531840 PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    timeout 80 python3 tests/gpu/torch/train_steps.py --model transformer --steps 7 --profile $R/gpt-$pol.trace.json > $R/gpt-$pol.txt 2>&1
  echo "gpt-$pol rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/gpt-$pol.txt | cut -d= -f2 | paste -sd' ')"
done
for pol in lru learned; do
  LD_PRELOAD=$LIB PUMP_POLICY=$pol PUMP_GPU_BUDGET=3489660928 PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    timeout 120 python3 tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 6 --profile $R/decode-$pol.trace.json > $R/decode-$pol.txt 2> $R/decode-$pol.err
  echo "decode-$pol rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/decode-$pol.txt | cut -d= -f2 | paste -sd' ')"
done
python3 tests/gpu/torch/timeline_overlap.py $R/*.trace.json | tee $R/overlap.txt
gzip $R/*.trace.json
tar czf $OUT/r9.tgz -C $OUT r9 && rm -rf $R
