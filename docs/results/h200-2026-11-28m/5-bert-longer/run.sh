#!/usr/bin/env bash
# Twenty-eighth session, call 5 (issue 8): does learned settle on BERT near fit, where call 4 left it behind lru
# (143.9 against 125.6 ms a step over steps 7-12, its last two 126 and 129)? The same build (9649415), 24 steps.
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
      f"dropped {g('bytes_discarded')/1e9:.2f} GB policy {g('launch_policy_ns')/max(1,g('kernels'))/1e3:.2f} us/kernel "
      f"locked {g('launch_locked_ns')/1e6:.0f} ms fence queries {g('backend_fence_queries')}")
PY
}
med() { python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")]; n=len(ms)//2; print(f"last{n} median {statistics.median(ms[-n:]):.1f}" if ms else "-")' "$1"; }
show() { echo "$1 rc=$2 $(med $R/$1.txt) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1) $(grep -m1 'policy learned:' $R/$1.err | sed 's/.*periods confirmed/confirmed/' | cut -c1-200)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = native ]; then timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  else
    env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
      PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  fi
  show $name $?
  tar czf $OUT/r5.tgz -C $OUT r5
}
b=".device/zoo.py --model bert --steps 24"
B=$(( 10865344512 * 100 / 105 ))
for p in learned lru; do run bert105-$p $B 100 PUMP_POLICY=$p -- $b; done
tar czf $OUT/r5.tgz -C $OUT r5 && rm -rf $R
