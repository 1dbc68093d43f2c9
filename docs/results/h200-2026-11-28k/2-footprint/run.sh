#!/usr/bin/env bash
# Twenty-sixth session, call 2 (issue 8). Call 1: near fit, GPT bf16's caching allocator reserved 4.70 GB under lru and
# learned (physical chunks, 90 allocations) against 4.43-4.45 GB natively and under none (89): one 240 MiB segment more,
# so none ran at fit and lru at 1.06. (a) Which path does it, and is it the addresses? GPT bf16, 8 steps, each allocation's
# address logged (experiment switches, experiment-switches.patch): none (unified memory), lru on physical chunks, lru on
# managed memory (copy), lru on physical chunks reserved in ascending order (PUMP_EXP_VA_ASCENDING). (b) The near-fit
# comparison at the same ratio of each run's own footprint (1.05), 16 steps: none, lru, learned.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-4.7 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"allocs {g('allocations')} peak_tracked {g('peak_tracked_bytes')} in {(g('bytes_restored')+g('bytes_prefetched')+g('bytes_demand'))/1e9:.2f} GB "
      f"saved {g('bytes_saved')/1e9:.2f} evicted {g('bytes_evicted')/1e9:.2f} dropped {g('bytes_discarded')/1e9:.2f} GB waits {g('launch_waits_ns')/1e6:.0f} ms")
PY
}
med() { python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")]; n=len(ms)//2; print(f"last{n} median {statistics.median(ms[-n:]):.1f}" if ms else "-")' "$1"; }
show() { echo "$1 rc=$2 $(med $R/$1.txt) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep -o 'footprint_bytes=[0-9]*' $R/$1.txt) $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  tar czf $OUT/r2.tgz -C $OUT r2
}
g8="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 8"
g16="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 16"
B=4443964952
run a-none $B 90 PUMP_EXP_VA_LOG=1 PUMP_POLICY=none PUMP_DATAPATH=um -- $g8
run a-lru-vmm $B 90 PUMP_EXP_VA_LOG=1 PUMP_POLICY=lru -- $g8
run a-lru-copy $B 90 PUMP_EXP_VA_LOG=1 PUMP_POLICY=lru PUMP_DATAPATH=copy -- $g8
run a-lru-vmm-asc $B 90 PUMP_EXP_VA_LOG=1 PUMP_EXP_VA_ASCENDING=1 PUMP_POLICY=lru -- $g8
run a-nobudget-vmm 1000GiB 90 PUMP_EXP_VA_LOG=1 PUMP_POLICY=lru -- $g8
# (b) each at 1.05 of its own footprint (call 1: none 4448059392, lru and learned 4699717632)
for round in 1 2; do
  run b-none-$round 4236247040 120 PUMP_POLICY=none PUMP_DATAPATH=um -- $g16
  run b-lru-$round 4475921554 90 PUMP_POLICY=lru -- $g16
  run b-learned-$round 4475921554 90 PUMP_POLICY=learned -- $g16
done
