#!/usr/bin/env bash
# Twenty-seventh session, call 3: where learned's host time goes on the GPU (its end line now says: observing,
# fetching ahead, pressure, ranking victims, the host's candidates), and two ways of building fewer period tables
# against main's learned (libpump_policy_learned_main.so, e576a81), interleaved: LBUILDM=0, a lost period's tables
# taken back when found again (call 2's build without its rationing); LBUILDM=3, the same and a new table of 64
# kernels or more built only once its candidate matched 3 kernels in a row (a switch of this experiment build).
# BERT (zoo.py, outside tests/) and GPT bf16 near fit (native's footprint / 1.05).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-10.9 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
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
show() { echo "$1 rc=$2 $(med $R/$1.txt) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep -o 'footprint_bytes=[0-9]*' $R/$1.txt) $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1) $(grep -m1 'policy learned:' $R/$1.err | sed 's/.*periods confirmed/confirmed/')"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = native ]; then timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  else
    env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
      PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  fi
  show $name $?
  tar czf $OUT/r3.tgz -C $OUT r3
}
fp() { grep -o 'footprint_bytes=[0-9]*' $R/$1.txt | cut -d= -f2; }
MAIN=$PWD/.device/lib/libpump_policy_learned_main.so
pol() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
print(f"   policy {e['launch_policy_ns']/1e6:.0f} ms pressure {e['launch_pressure_ns']/1e6:.0f} ms locked {e['launch_locked_ns']/1e6:.0f} ms over {e['kernels']} kernels: policy {e['launch_policy_ns']/e['kernels']/1e3:.2f} us/kernel")
PY
}
b=".device/zoo.py --model bert --steps 12"
B=$(( 10865344512 * 100 / 105 ))
run bert-native native 90 -- $b
run bert-m3 $B 100 PUMP_POLICY=learned LBUILDM=3 -- $b; pol bert-m3
run bert-main $B 100 PUMP_POLICY=$MAIN -- $b; pol bert-main
run bert-m0 $B 100 PUMP_POLICY=learned LBUILDM=0 -- $b; pol bert-m0
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 16"
B=$(( 4431282176 * 100 / 105 ))
run gpt-native native 60 -- $g
for i in 1 2; do
  run gpt-m0-$i $B 90 PUMP_POLICY=learned LBUILDM=0 -- $g; pol gpt-m0-$i
  run gpt-main-$i $B 90 PUMP_POLICY=$MAIN -- $g; pol gpt-main-$i
  run gpt-m3-$i $B 90 PUMP_POLICY=learned LBUILDM=3 -- $g; pol gpt-m3-$i
done
