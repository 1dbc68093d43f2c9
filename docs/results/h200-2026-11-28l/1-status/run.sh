#!/usr/bin/env bash
# Twenty-seventh session, call 1: main's build (e576a81). (a) learned against lru near fit, 16 steps, to see
# whether learned settles and wins there on the GPU: GPT bf16 (tests/) and BERT (zoo.py, outside tests/), budget =
# native's footprint / 1.05. (b) The per-launch cost while everything fits on a launch-bound program
# (launch_cost.py, DenseNet-121 small, 2,600 kernels a step; native, disabled, managed, extractors, lru, learned).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-10.9 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"in {(g('bytes_restored')+g('bytes_prefetched')+g('bytes_demand'))/1e9:.2f} GB saved {g('bytes_saved')/1e9:.2f} "
      f"dropped {g('bytes_discarded')/1e9:.2f} GB unattributed {g('unattributed_accesses')} waits {g('launch_waits_ns')/1e6:.0f} ms")
PY
}
med() { python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")]; n=len(ms)//2; print(f"last{n} median {statistics.median(ms[-n:]):.1f}" if ms else "-")' "$1"; }
show() { echo "$1 rc=$2 $(med $R/$1.txt) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep -o 'footprint_bytes=[0-9]*' $R/$1.txt) $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1) $(grep -m1 'policy learned:' $R/$1.err | cut -c1-220)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 300 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = native ]; then timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  else
    env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
      PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  fi
  show $name $?
  tar czf $OUT/r1.tgz -C $OUT r1
}
fp() { grep -o 'footprint_bytes=[0-9]*' $R/$1.txt | cut -d= -f2; }
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 16"
run gpt-native native 60 -- $g
B=$(( 4431282176 * 100 / 105 ))
run gpt-learned $B 90 PUMP_POLICY=learned -- $g
run gpt-lru $B 90 PUMP_POLICY=lru -- $g
b=".device/zoo.py --model bert --steps 12"
run bert-native native 90 -- $b
B=$(( 10865344512 * 100 / 105 ))
run bert-learned $B 100 PUMP_POLICY=learned -- $b
run bert-lru $B 100 PUMP_POLICY=lru -- $b
timeout 250 python3 tests/gpu/torch/launch_cost.py --libpump $LIB --model densenet121-small --rounds 2 --steps 14 \
  --policies lru,learned --no-watched --out $R/launch > $R/launch.txt 2>&1; echo "launch_cost rc=$?"; tail -15 $R/launch.txt
tar czf $OUT/r1.tgz -C $OUT r1
