#!/usr/bin/env bash
# Twenty-sixth session, call 9: the final build (a kernel whose layout could not be read is asked again and is an
# unattributed access meanwhile; allocations on physical chunks top down in one span). GPT bf16 at 4236247040 (its
# native footprint / 1.046: calls 4-8 crashed there on physical chunks, learned on the copy path gave other losses
# under poison), 12 steps: native, none (unified memory), lru, learned, lru under poison, learned on the copy path under
# poison, lru on the copy path. ResNet-50 at 1.5, 8 steps: native, lru, lru under poison.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-7.0 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r9; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"peak_tracked {g('peak_tracked_bytes')} in {(g('bytes_restored')+g('bytes_prefetched')+g('bytes_demand'))/1e9:.2f} GB saved {g('bytes_saved')/1e9:.2f} "
      f"evicted {g('bytes_evicted')/1e9:.2f} dropped {g('bytes_discarded')/1e9:.2f} GB unattributed {g('unattributed_accesses')} waits {g('launch_waits_ns')/1e6:.0f} ms")
PY
}
med() { python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")]; n=len(ms)//2; print(f"last{n} median {statistics.median(ms[-n:]):.1f}" if ms else "-")' "$1"; }
show() { echo "$1 rc=$2 $(med $R/$1.txt) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep -o 'footprint_bytes=[0-9]*' $R/$1.txt) $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1) $(grep -m1 -i 'illegal\|could not be read' $R/$1.err | cut -c1-100)"; }
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
  tar czf $OUT/r9.tgz -C $OUT r9
}
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
B=4236247040
run gpt-native native 60 -- $g
run gpt-none $B 120 PUMP_POLICY=none PUMP_DATAPATH=um -- $g
run gpt-lru $B 90 PUMP_POLICY=lru -- $g
run gpt-learned $B 90 PUMP_POLICY=learned -- $g
run gpt-lru-poison $B 90 PUMP_POLICY=lru PUMP_VERIFY=poison -- $g
run gpt-learned-copy-poison $B 90 PUMP_POLICY=learned PUMP_DATAPATH=copy PUMP_VERIFY=poison -- $g
run gpt-lru-copy $B 90 PUMP_POLICY=lru PUMP_DATAPATH=copy -- $g
r="tests/gpu/torch/train_steps.py --model resnet50 --steps 8"
run res-native native 90 -- $r
run res-lru 4645890730 90 PUMP_POLICY=lru -- $r
run res-lru-poison 4645890730 90 PUMP_POLICY=lru PUMP_VERIFY=poison -- $r
