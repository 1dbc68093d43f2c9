#!/usr/bin/env bash
# Twenty-sixth session, call 11 (issue 8), call 9's build: near fit at the footprint each program has natively (now also
# pump's on physical chunks). (a) The Llama-shaped bf16 decode (6.5 GiB of weights, 12 tokens) natively, then lru at its
# native footprint / 1.02 -- not here: call 10 ran it. (b) BERT (zoo.py, outside tests/), 10 steps, at its
# native footprint / 1.05: native, none (unified memory), lru.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 7-11 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r11; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"peak_tracked {g('peak_tracked_bytes')} in {(g('bytes_restored')+g('bytes_prefetched')+g('bytes_demand'))/1e9:.2f} GB saved {g('bytes_saved')/1e9:.2f} "
      f"evicted {g('bytes_evicted')/1e9:.2f} dropped {g('bytes_discarded')/1e9:.2f} GB unattributed {g('unattributed_accesses')}")
PY
}
med() { python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")]; n=len(ms)//2; print(f"last{n} median {statistics.median(ms[-n:]):.1f}" if ms else "-")' "$1"; }
show() { echo "$1 rc=$2 at ${SECONDS}s $(med $R/$1.txt) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep -o 'footprint_bytes=[0-9]*' $R/$1.txt) $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1) $(grep -m1 -i 'illegal' $R/$1.err | cut -c1-100)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 150 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = native ]; then timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  else
    env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
      PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  fi
  show $name $?
  tar czf $OUT/r11.tgz -C $OUT r11
}
fp() { grep -o 'footprint_bytes=[0-9]*' $R/$1.txt | cut -d= -f2; }
b=".device/zoo.py --model bert --steps 10"
run bert-native native 90 -- $b
F=$(fp bert-native)
if [ -n "$F" ]; then
  run bert-lru $(( F * 100 / 105 )) 90 PUMP_POLICY=lru -- $b
  run bert-none $(( F * 100 / 105 )) 120 PUMP_POLICY=none PUMP_DATAPATH=um -- $b
fi
