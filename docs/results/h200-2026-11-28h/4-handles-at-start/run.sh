#!/usr/bin/env bash
# Twenty-third session, call 4: counter fences with cuBLAS, cuBLASLt and cuDNN handles made by pump when the engine
# starts (before any counter wait: call 1's cublas_first.py cured the hangs, call 2's draining inside the program's
# own cublasCreate did not), on the programs that hung (ResNet-50 learned, OPT-shaped decode lru, the Llama decode
# lru) and GPT bf16. Diagnostic build (call 1's: counter state every 2 s, SIGUSR2 stacks); a run still going at its
# sample time gets every thread's stack, then is killed.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 2.9-8.1 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r4; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
sample() {  # sample NAME PID SECONDS: stacks if still running at SECONDS
  local i=0
  while [ $i -lt $3 ]; do sleep 1; i=$((i+1)); kill -0 $2 2>/dev/null || return; done
  for t in /proc/$2/task/*; do echo "$(basename $t) $(cat $t/comm) $(cat $t/wchan)"; done > $R/$1.threads
  for t in /proc/$2/task/*; do python3 -c "import ctypes,sys; ctypes.CDLL(None).syscall(234, $2, int(sys.argv[1]), 12)" $(basename $t); sleep 0.05; done
  sleep 3; kill -9 $2 2>/dev/null; echo "$1 sampled and killed at $3 s"
}
go() {  # go NAME BUDGET SAMPLE_AT ENV... -- ARGS...
  local name=$1 budget=$2 at=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 330 ] || { echo "skipped $name (time)"; return; }
  local t0=$SECONDS
  env "${envs[@]}" PUMP_COUNTER_DEBUG=1 PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json python3 "$@" > $R/$name.txt 2> $R/$name.err &
  local pid=$!
  sample $name $pid $at
  wait $pid; local rc=$?
  echo "$name rc=$rc wall=$((SECONDS - t0))s $(grep -o 'iteration_ms=[0-9.]*' $R/$name.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$name.txt | cut -c1-40)"
  grep "handles made\|did not complete\|has not run" $R/$name.err | head -3
  grep "counter debug: next" $R/$name.err | tail -n 1
  tar czf $OUT/r4.tgz -C $OUT r4
}
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 12"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gptb="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
go res-counter 4645890730 50 PUMP_POLICY=learned PUMP_FENCE=counter -- $res
go opt-counter 1466957824 70 PUMP_POLICY=lru PUMP_FENCE=counter -- .device/zoo.py --model opt --steps 12
go gptb-counter 2954188117 45 PUMP_POLICY=learned PUMP_FENCE=counter -- $gptb
go dec-counter 3489660928 110 PUMP_POLICY=lru PUMP_FENCE=counter -- $dec
go res-event 4645890730 50 PUMP_POLICY=learned PUMP_FENCE=event -- $res
go opt-event 1466957824 70 PUMP_POLICY=lru PUMP_FENCE=event -- .device/zoo.py --model opt --steps 12
tar czf $OUT/r4.tgz -C $OUT r4 && rm -rf $R
