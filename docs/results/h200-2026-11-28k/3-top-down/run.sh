#!/usr/bin/env bash
# Twenty-sixth session, call 3 (issue 8): allocations on physical chunks placed top down in one span reserved up front
# (core/cuda/top_down_addresses.h), as the driver places cudaMalloc's. (a) PyTorch's reserved bytes (its footprint)
# natively and under pump (lru, no budget: every allocation on physical chunks), 4 steps, programs in and outside
# tests/. (b) GPT bf16 near fit at 1.05 of the native footprint (4448059392 / 1.05), 16 steps: none (unified memory),
# lru, learned, native. (c) the backend's GPU test (physical chunks on the real driver).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 1-8 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"allocs {g('allocations')} physical {g('backend_physical_allocations')} peak_tracked {g('peak_tracked_bytes')} in {(g('bytes_restored')+g('bytes_prefetched')+g('bytes_demand'))/1e9:.2f} GB "
      f"saved {g('bytes_saved')/1e9:.2f} evicted {g('bytes_evicted')/1e9:.2f} dropped {g('bytes_discarded')/1e9:.2f} GB waits {g('launch_waits_ns')/1e6:.0f} ms")
PY
}
med() { python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")]; n=len(ms)//2; print(f"last{n} median {statistics.median(ms[-n:]):.1f}" if ms else "-")' "$1"; }
show() { echo "$1 rc=$2 $(med $R/$1.txt) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep -o 'footprint_bytes=[0-9]*' $R/$1.txt) $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = native ]; then
    timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  else
    env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
      PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  fi
  show $name $?
  tar czf $OUT/r3.tgz -C $OUT r3
}
T=tests/gpu/torch/train_steps.py
for m in "gptbf16 $T --model transformer --dtype bf16" "gpt2 $T --model gpt2" "lstm $T --model lstm" \
         "densenet $T --model densenet121" "bert .device/zoo.py --model bert"; do
  set -- $m; n=$1; shift
  run a-$n-native native 90 -- "$@" --steps 4
  run a-$n-pump 1000GiB 90 PUMP_POLICY=lru -- "$@" --steps 4
done
g16="$T --model transformer --dtype bf16 --steps 16"
B=4236247040
run b-native native 90 -- $g16
run b-none $B 120 PUMP_POLICY=none PUMP_DATAPATH=um -- $g16
run b-lru $B 90 PUMP_POLICY=lru -- $g16
run b-learned $B 90 PUMP_POLICY=learned -- $g16
run b-lru-2 $B 90 PUMP_POLICY=lru -- $g16
timeout 120 .device/bin/backend_cuda_gpu_test > $R/backend_gpu_test.txt 2>&1; echo "backend_cuda_gpu_test rc=$? $(tail -3 $R/backend_gpu_test.txt | tr '\n' ' ')"
tar czf $OUT/r3.tgz -C $OUT r3
