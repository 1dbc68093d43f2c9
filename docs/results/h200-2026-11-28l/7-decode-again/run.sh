#!/usr/bin/env bash
# Twenty-seventh session, call 7: the decode at half its weights again, lru then learned, with the session's final build
# (13c6dba: a period taken back at a kernel touching other ranges is relearned), to see whether call 5's learned
# 120.7 against lru's 127.7 ms a token holds.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprint 7.0 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r7; mkdir -p $R
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
  tar czf $OUT/r7.tgz -C $OUT r7
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
run decode-lru 3489660928 120 PUMP_POLICY=lru -- $d; pol decode-lru
run decode-learned 3489660928 120 PUMP_POLICY=learned -- $d; pol decode-learned
