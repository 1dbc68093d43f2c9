#!/usr/bin/env bash
# Twenty-sixth session, call 1 (issue 8): near fit (budget = footprint / 1.05, footprints pump-bench measured in earlier
# sessions), 16 steps (ViT 12) each, every step printed: native, none (plain unified memory), lru, learned, on GPT bf16
# (tests/), ResNet-50 (tests/) and ViT-B/16 (zoo.py, outside tests/). Does learned, settled, beat none near fit, where
# lru loses to it? Per-step times show how soon each settles.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.7-7.0 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"in {(g('bytes_restored')+g('bytes_prefetched')+g('bytes_demand'))/1e9:.2f} GB (restored {g('bytes_restored')/1e9:.2f} demand {g('bytes_demand')/1e9:.2f}) "
      f"saved {g('bytes_saved')/1e9:.2f} evicted {g('bytes_evicted')/1e9:.2f} dropped {g('bytes_discarded')/1e9:.2f} GB "
      f"peak {g('peak_resident_bytes')/1e9:.2f} GB waits {g('launch_waits_ns')/1e6:.0f} ms")
PY
}
med() { python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")]; n=len(ms)//2; print(f"last{n} median {statistics.median(ms[-n:]):.1f}" if ms else "-")' "$1"; }
show() { echo "$1 rc=$2 $(med $R/$1.txt) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 520 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = native ]; then
    timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  else
    env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
      PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  fi
  show $name $?
  tar czf $OUT/r1.tgz -C $OUT r1
}
gpt="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 16"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 16"
vit=".device/zoo.py --model vit --steps 12"
for p in "gpt 4443964952" "res 6636986757" "vit 6443249859"; do
  set -- $p; n=$1; b=$2; args=${!n}
  run $n-native native 90 -- $args
  run $n-none $b 120 PUMP_POLICY=none PUMP_DATAPATH=um -- $args
  run $n-lru $b 90 PUMP_POLICY=lru -- $args
  run $n-learned $b 90 PUMP_POLICY=learned -- $args
done
