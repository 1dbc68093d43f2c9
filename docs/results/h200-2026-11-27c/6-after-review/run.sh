#!/usr/bin/env bash
# Seventeenth session, call 6: the library after the review's mends (map first skips a batch whose fetches meet its
# evictions; the limit counts pooled memory as held; bounded limit waits). At half on vmm: GPT fp32 and ViT-B/16
# under lru and learned, both under poison too, and the decode (lru, clean first).
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r6; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB grants {g('backend_physical_access_calls')} "
      f"limit waits {g('backend_physical_limit_waits')} over {g('backend_physical_over_limit_bytes')/1e9:.2f} GB "
      f"mapped high {g('backend_physical_mapped_high_water')/1e9:.2f} GB pooled {g('backend_physical_pooled_bytes')/1e9:.2f} GB")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -m2 -i "error" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 270 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_GPU_BUDGET=$budget PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
vit=".device/zoo.py --model vit --steps 10"
run gpt-lru 4026531840 70 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $gpt
run vit-learned 3382286336 60 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $vit
run gpt-learned 4026531840 70 PUMP_POLICY=learned PUMP_DATAPATH=vmm -- $gpt
run vit-lru 3382286336 60 PUMP_POLICY=lru PUMP_DATAPATH=vmm -- $vit
tar czf $OUT/r6.tgz -C $OUT r6
run vit-learned-poison 3382286336 60 PUMP_POLICY=learned PUMP_DATAPATH=vmm PUMP_VERIFY=poison -- $vit
run gpt-lru-poison 4026531840 70 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_VERIFY=poison -- $gpt
run decode-lru-clean 3489660928 80 PUMP_POLICY=lru PUMP_DATAPATH=vmm PUMP_LRU_VICTIMS=idle-dead,clean,any -- $dec
tar czf $OUT/r6.tgz -C $OUT r6 && rm -rf $R
