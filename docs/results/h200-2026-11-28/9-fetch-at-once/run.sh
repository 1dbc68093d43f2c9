#!/usr/bin/env bash
# Twenty-first session, call 9: a batch whose fetches were all mapped first issues its restores at once, beside its
# evictions (PUMP_VMM_FETCH_AT_ONCE=1, the new default) against after them (=0), each pair back to back: GPT bf16 at
# 1.5 (learned twice, lru), ViT-B/16 (zoo.py, outside tests/), ResNet-50, the decode at half; checksums must match.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-8.1 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r9; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB waits {g('launch_waits_ns')/1e6:.0f} ms "
      f"maps {g('backend_physical_maps')} map {g('backend_physical_map_ns')/1e6:.0f} ms grants {g('backend_physical_access_calls')} "
      f"slow {g('backend_physical_slow_access_calls')} mapped_hw {g('backend_physical_mapped_high_water')/1e9:.2f} GB "
      f"peak {g('peak_resident_bytes')/1e9:.2f} GB worker {g('backend_worker_busy_ns')/1e6:.0f} ms")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  tar czf $OUT/r9.tgz -C $OUT r9
}
gptb="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 12"
vit=".device/zoo.py --model vit --steps 10"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
for a in 0 1 0 1; do run gptb-learned-$a-$SECONDS 2954188117 60 PUMP_POLICY=learned PUMP_VMM_FETCH_AT_ONCE=$a -- $gptb; done
for a in 0 1; do run gptb-lru-$a 2954188117 60 PUMP_POLICY=lru PUMP_VMM_FETCH_AT_ONCE=$a -- $gptb; done
for a in 0 1; do run vit-learned-$a 4510274901 60 PUMP_POLICY=learned PUMP_VMM_FETCH_AT_ONCE=$a -- $vit; done
for a in 0 1; do run res-learned-$a 4645890730 60 PUMP_POLICY=learned PUMP_VMM_FETCH_AT_ONCE=$a -- $res; done
for a in 0 1; do run dec-lru-$a 3489660928 90 PUMP_POLICY=lru PUMP_VMM_FETCH_AT_ONCE=$a -- $dec; done
tar czf $OUT/r9.tgz -C $OUT r9 && rm -rf $R
