#!/usr/bin/env bash
# Twenty-third session, call 3: lru's cyclic pass taking dirty loop blocks where LRU's own pick is dirty
# (policies/policy_lru.c, sim-only so far) against the lru before it (pump-before: the same build's plugins at
# c7b26ad), back to back, alternating which goes first, on programs from tests/ (GPT bf16 at 1.5, GPT fp32 at half,
# ResNet-50 at 1.5) and outside tests/ (zoo.py: ViT-B/16 and BERT at 1.5, OPT-shaped decode at half).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 2.9-10.9 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB prefetched {g('bytes_prefetched')/1e9:.1f} GB discarded {g('bytes_discarded')/1e9:.1f} GB failed {g('backend_failed_calls')}")
PY
}
show() { echo "$1 rc=$2 wall=$3s $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -i "error\|cyclic" $R/$1.err | head -3; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 470 ] || { echo "skipped $name (time)"; return; }
  local t0=$SECONDS
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_POLICY=lru PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $? $((SECONDS - t0))
  tar czf $OUT/r3.tgz -C $OUT r3
}
P=$PWD/.device/lib
pair() {  # pair NAME BUDGET TIMEOUT ORDER ARGS...
  local name=$1 budget=$2 t=$3 order=$4; shift 4
  for v in $order; do
    if [ $v = new ]; then run $name-new $budget $t PUMP_PLUGIN_DIR=$P/pump -- "$@"
    else run $name-old $budget $t PUMP_PLUGIN_DIR=$P/pump-before -- "$@"; fi
  done
}
gptb="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
gptf="tests/gpu/torch/train_steps.py --model transformer --steps 12"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 12"
pair gptb 2954188117 60 "old new" $gptb
pair opt 1466957824 75 "new old" .device/zoo.py --model opt --steps 12
pair res 4645890730 60 "old new" $res
pair vit 4510274901 60 "new old" .device/zoo.py --model vit --steps 10
pair bert 7243562341 75 "old new" .device/zoo.py --model bert --steps 8
pair gptf 4026531840 60 "new old" $gptf
pair gptb-2 2954188117 60 "new old" $gptb
pair opt-2 1466957824 75 "old new" .device/zoo.py --model opt --steps 12
tar czf $OUT/r3.tgz -C $OUT r3 && rm -rf $R
