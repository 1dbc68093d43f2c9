#!/usr/bin/env bash
# Nineteenth session, call 4: the session's library (lru with the cyclic pass's min-age rule, not run on training
# before) at half, normally and with every dropped range poisoned (PUMP_VERIFY=poison): GPT fp32 training
# (tests/), ViT-B/16 training (zoo.py, outside tests/), the decode. Checksums against native's of earlier calls.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r4; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | sort -n | awk '{a[NR]=$1} END {printf "median %s of %d", a[int((NR+1)/2)], NR}') $(grep checksum $R/$1.txt | cut -c1-40)"; grep -m2 -i "error\|warn" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 300 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
gpt="tests/gpu/torch/train_steps.py --model transformer --steps 8"
vit=".device/zoo.py --model vit --steps 10"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
run gpt-lru 4026531840 70 PUMP_POLICY=lru -- $gpt
run gpt-poison 4026531840 70 PUMP_POLICY=lru PUMP_VERIFY=poison -- $gpt
run vit-lru 3382286336 60 PUMP_POLICY=lru -- $vit
run vit-poison 3382286336 60 PUMP_POLICY=lru PUMP_VERIFY=poison -- $vit
tar czf $OUT/r4.tgz -C $OUT r4
run decode-poison 3489660928 100 PUMP_POLICY=lru PUMP_VERIFY=poison -- $dec
tar czf $OUT/r4.tgz -C $OUT r4 && rm -rf $R
