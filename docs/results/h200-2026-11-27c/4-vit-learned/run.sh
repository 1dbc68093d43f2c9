#!/usr/bin/env bash
# Seventeenth session, call 4: call 3's ViT-B/16 under learned on vmm gave a loss one ulp off native's at step 8
# (checksum 77ee170bc2ef3f75 against 8ffec90b32920029). Again, twice; under PUMP_VERIFY=checksum (a clean block's
# bytes compared with its shadow before it is dropped) and poison; without map first; on the copy path.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r4; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB clean checked {g('backend_checked_clean_bytes')/1e9:.1f} GB mismatches {g('backend_clean_mismatches')} "
      f"limit waits {g('backend_physical_limit_waits')} over {g('backend_physical_over_limit_bytes')/1e9:.2f} GB mapped high {g('backend_physical_mapped_high_water')/1e9:.2f} GB")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40) $(grep '^loss 8' $R/$1.err)"; echo "   $(stats $1)"; grep -m3 -i "error\|mismatch" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 500 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
vit=".device/zoo.py --model vit --steps 10"
run vit-learned-a 3382286336 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $vit
run vit-learned-checksum 3382286336 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm PUMP_VERIFY=checksum -- $vit
run vit-learned-b 3382286336 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $vit
run vit-learned-poison 3382286336 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm PUMP_VERIFY=poison -- $vit
tar czf $OUT/r4.tgz -C $OUT r4
run vit-learned-after 3382286336 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm PUMP_VMM_MAP_FIRST=0 -- $vit
run vit-learned-copy 3382286336 80 PUMP_POLICY=learned -- $vit
run vit-learned-c 3382286336 80 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $vit
run vit-native 3382286336 80 PUMP_DISABLE=1 -- $vit
tar czf $OUT/r4.tgz -C $OUT r4 && rm -rf $R
