#!/usr/bin/env bash
# Twenty-second session, call 3: where ResNet-50 (learned, 1.5) hangs under PUMP_FENCE=counter (call 2): after 45 s
# every thread's native stack (gdb, if the machine has it) and Python stack (faulthandler on SIGABRT).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprint about 7 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
which gdb eu-stack py-spy > $R/tools.txt 2>&1
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 12"
PYTHONFAULTHANDLER=1 PUMP_POLICY=learned PUMP_FENCE=counter PUMP_GPU_BUDGET=4645890730 LD_PRELOAD=$PWD/.device/lib/libpump.so \
  PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch PUMP_LOG_LEVEL=info python3 $res > $R/res.txt 2> $R/res.err &
PID=$!
sleep 45
if kill -0 $PID 2>/dev/null; then
  if which gdb >/dev/null 2>&1; then
    timeout 60 gdb -p $PID -batch -ex "set pagination off" -ex "thread apply all bt 25" > $R/gdb.txt 2>&1
  fi
  for t in /proc/$PID/task/*; do echo "$(basename $t) $(cat $t/comm) $(cat $t/wchan) $(cut -d' ' -f1-3 $t/syscall 2>/dev/null)"; done > $R/threads.txt
  kill -ABRT $PID; sleep 5; kill -9 $PID 2>/dev/null
fi
wait $PID; echo "rc=$?"
nvidia-smi --query-gpu=memory.used --format=csv >> $R/threads.txt
cat $R/tools.txt; head -c 3000 $R/threads.txt
grep -n "pump::\|cu[A-Z][a-zA-Z]*\|cudnn[A-Z]" $R/gdb.txt | grep -v "^.*libcuda.so.1$" | head -80
tar czf $OUT/r3.tgz -C $OUT r3
