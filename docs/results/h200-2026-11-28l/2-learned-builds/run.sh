#!/usr/bin/env bash
# Twenty-seventh session, call 2: learned's period tables taken back when a lost period is found again, and built no
# sooner than 1/16 of their length after the last build ("new", this session's build) against main's learned
# (libpump_policy_learned_main.so, e576a81), interleaved: BERT (zoo.py, outside tests/) and GPT bf16 near fit (native's
# footprint / 1.05), GPT bf16 at 1.5; lru beside them. PUMP_STATS' launch_policy_ns is the policy's own time.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-10.9 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
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
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = native ]; then timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  else
    env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
      PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  fi
  show $name $?
  tar czf $OUT/r2.tgz -C $OUT r2
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
for i in 1 2; do
  run bert-new-$i $B 100 PUMP_POLICY=learned -- $b; pol bert-new-$i
  run bert-main-$i $B 100 PUMP_POLICY=$MAIN -- $b; pol bert-main-$i
done
run bert-lru $B 100 PUMP_POLICY=lru -- $b
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 16"
B=$(( 4431282176 * 100 / 105 ))
run gpt-native native 60 -- $g
for i in 1 2; do
  run gpt-main-$i $B 90 PUMP_POLICY=$MAIN -- $g; pol gpt-main-$i
  run gpt-new-$i $B 90 PUMP_POLICY=learned -- $g; pol gpt-new-$i
done
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
B=$(( 4431282176 * 2 / 3 ))
run gpt15-new $B 90 PUMP_POLICY=learned -- $g; pol gpt15-new
run gpt15-main $B 90 PUMP_POLICY=$MAIN -- $g; pol gpt15-main
run gpt15-lru $B 90 PUMP_POLICY=lru -- $g
