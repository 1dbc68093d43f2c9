#!/usr/bin/env bash
# Twenty-first session, call 7: saves of physical chunks in 8 MiB pieces, a grant waiting (0.9 ms at most) for the
# pieces queued before it but the newest (PUMP_VMM_SAVE_PIECE=8MiB, the new default) against whole saves (=0), each
# pair back to back, twice for GPT bf16: GPT bf16 at 1.5 (learned, lru), ViT-B/16 (zoo.py, outside tests/), the decode.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-8.1 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r7; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB waits {g('launch_waits_ns')/1e6:.0f} ms "
      f"maps {g('backend_physical_maps')} map {g('backend_physical_map_ns')/1e6:.0f} ms grants {g('backend_physical_access_calls')} "
      f"slow {g('backend_physical_slow_access_calls')} mapped_hw {g('backend_physical_mapped_high_water')/1e9:.2f} GB "
      f"quiet {g('backend_quiet_grant_waits')} skips {g('backend_quiet_grant_skips')} quiet_ms {g('backend_quiet_grant_wait_ns')/1e6:.0f} worker {g('backend_worker_busy_ns')/1e6:.0f} ms")
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
  tar czf $OUT/r7.tgz -C $OUT r7
}
gptb="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 12"
vit=".device/zoo.py --model vit --steps 10"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
for p in 0 8MiB 0 8MiB; do run gptb-learned-$p-$SECONDS 2954188117 60 PUMP_POLICY=learned PUMP_VMM_SAVE_PIECE=$p -- $gptb; done
for p in 0 8MiB; do run gptb-lru-$p 2954188117 60 PUMP_POLICY=lru PUMP_VMM_SAVE_PIECE=$p -- $gptb; done
for p in 0 8MiB; do run vit-learned-$p 4510274901 60 PUMP_POLICY=learned PUMP_VMM_SAVE_PIECE=$p -- $vit; done
for p in 0 8MiB; do run dec-lru-$p 3489660928 90 PUMP_POLICY=lru PUMP_VMM_SAVE_PIECE=$p -- $dec; done
tar czf $OUT/r7.tgz -C $OUT r7 && rm -rf $R
