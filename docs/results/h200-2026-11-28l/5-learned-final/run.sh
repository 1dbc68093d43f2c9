#!/usr/bin/env bash
# Twenty-seventh session, call 5: learned as committed (fe1ccc0: a lost period found again taken back and predicted
# afresh, a long one built only after 3 matches) against main's learned (libpump_policy_learned_main.so, e576a81):
# the Llama-shaped bf16 decode at half its weights (where learned followed periods of one layer and spent 20-25 ms
# a token in the policy, thirteenth session) beside lru; BERT (zoo.py, outside tests/) and GPT bf16 near fit (native's
# footprint / 1.05), interleaved.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-10.9 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r5; mkdir -p $R
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
  [ $SECONDS -lt 470 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = native ]; then timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  else
    env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
      PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  fi
  show $name $?
  tar czf $OUT/r5.tgz -C $OUT r5
}
fp() { grep -o 'footprint_bytes=[0-9]*' $R/$1.txt | cut -d= -f2; }
MAIN=$PWD/.device/lib/libpump_policy_learned_main.so
pol() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
print(f"   policy {e['launch_policy_ns']/1e6:.0f} ms pressure {e['launch_pressure_ns']/1e6:.0f} ms locked {e['launch_locked_ns']/1e6:.0f} ms over {e['kernels']} kernels: policy {e['launch_policy_ns']/e['kernels']/1e3:.2f} us/kernel")
PY
}
d="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
run decode-new 3489660928 120 PUMP_POLICY=learned -- $d; pol decode-new
run decode-main 3489660928 120 PUMP_POLICY=$MAIN -- $d; pol decode-main
run decode-lru 3489660928 120 PUMP_POLICY=lru -- $d; pol decode-lru
b=".device/zoo.py --model bert --steps 12"
B=$(( 10865344512 * 100 / 105 ))
run bert-main $B 100 PUMP_POLICY=$MAIN -- $b; pol bert-main
run bert-new $B 100 PUMP_POLICY=learned -- $b; pol bert-new
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 16"
B=$(( 4431282176 * 100 / 105 ))
run gpt-native native 60 -- $g
for i in 1 2; do
  run gpt-new-$i $B 90 PUMP_POLICY=learned -- $g; pol gpt-new-$i
  run gpt-main-$i $B 90 PUMP_POLICY=$MAIN -- $g; pol gpt-main-$i
done
run bert-native native 90 -- $b
