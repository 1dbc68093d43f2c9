#!/usr/bin/env bash
# Eighteenth session, call 2: lru's cyclic pass asking three equal gaps (with two it took GPT's weights in call 1:
# 275 against 253 ms/step), A/B against the default victims, interleaved, on vmm (the default); HF accelerate's
# offload of the decode with the same GPU budget, for the target.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"budget {g('budget_bytes')/1e9:.2f} GB restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB grants {g('backend_physical_access_calls')} "
      f"limit waits {g('backend_physical_limit_waits')} host maps {g('backend_physical_host_maps')} "
      f"mapped high {g('backend_physical_mapped_high_water')/1e9:.2f} GB pooled {g('backend_physical_pooled_bytes')/1e9:.2f} GB")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -m2 -i "error\|warn\|cyclic pass" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...   (BUDGET "-": none given)
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 540 ] || { echo "skipped $name (time)"; return; }
  [ "$budget" != - ] && envs+=(PUMP_GPU_BUDGET=$budget)
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
vit=".device/zoo.py --model vit --steps 10"
cyc=PUMP_LRU_VICTIMS=idle-dead,cyclic,idle-clean,any
run gpt-lru 4026531840 80 PUMP_POLICY=lru -- $gpt
run gpt-cyclic 4026531840 80 PUMP_POLICY=lru $cyc -- $gpt
run gpt-lru-2 4026531840 80 PUMP_POLICY=lru -- $gpt
run gpt-cyclic-2 4026531840 80 PUMP_POLICY=lru $cyc -- $gpt
tar czf $OUT/r2.tgz -C $OUT r2
run decode-cyclic 3489660928 100 PUMP_POLICY=lru $cyc -- $dec
run decode-lru 3489660928 100 PUMP_POLICY=lru -- $dec
run vit-cyclic 3382286336 80 PUMP_POLICY=lru $cyc -- $vit
tar czf $OUT/r2.tgz -C $OUT r2
timeout 150 python3 $dec --offload accelerate --gpu-budget-gib 3.25 > $R/decode-accelerate.txt 2> $R/decode-accelerate.err
echo "decode-accelerate rc=$? $(grep -o 'iteration_ms=[0-9.]*' $R/decode-accelerate.txt | cut -d= -f2 | paste -sd' ') $(grep checksum $R/decode-accelerate.txt | cut -c1-40)"
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
