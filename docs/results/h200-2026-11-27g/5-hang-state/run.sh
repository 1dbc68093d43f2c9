#!/usr/bin/env bash
# Twenty-second session, call 5: the hangs of PUMP_FENCE=counter (calls 2-4) with a diagnostic build (the patch plus
# PUMP_COUNTER_DEBUG: the backend's issue and counter state every 2 s, and SIGUSR2 printing a thread's stack).
# ResNet-50 (learned, 1.5) sampled at 40 s, the decode (lru, half) at 100 s; every thread sent SIGUSR2, then killed.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints about 7-8 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r5; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
sample() {  # sample NAME PID SECONDS
  sleep $3
  kill -0 $2 2>/dev/null || { echo "$1 exited before the sample"; return; }
  for t in /proc/$2/task/*; do echo "$(basename $t) $(cat $t/comm) $(cat $t/wchan) $(cut -d' ' -f1-3 $t/syscall 2>/dev/null)"; done > $R/$1.threads
  for t in /proc/$2/task/*; do python3 -c "import ctypes,sys; ctypes.CDLL(None).syscall(234, $2, int(sys.argv[1]), 12)" $(basename $t); sleep 0.05; done
  sleep 3; kill -9 $2 2>/dev/null
}
go() {  # go NAME BUDGET SAMPLE_AT ENV... -- ARGS...
  local name=$1 budget=$2 at=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" PUMP_COUNTER_DEBUG=1 PUMP_FENCE=counter PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_LOG_LEVEL=info python3 "$@" > $R/$name.txt 2> $R/$name.err &
  local pid=$!
  sample $name $pid $at
  wait $pid; echo "$name rc=$?"
  grep "counter debug" $R/$name.err | tail -n 3
  grep -v "^pump: \|^=== stack" $R/$name.err | grep -c "libpump" 
  tar czf $OUT/r5.tgz -C $OUT r5
}
go res 4645890730 40 PUMP_POLICY=learned -- tests/gpu/torch/train_steps.py --model resnet50 --steps 12
go dec 3489660928 100 PUMP_POLICY=lru -- tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10
tar czf $OUT/r5.tgz -C $OUT r5
