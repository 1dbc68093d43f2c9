#!/usr/bin/env bash
# Nineteenth session, call 2: the decode at half its weights against HF accelerate's offload in one call
# (lru, accelerate, lru; 10 tokens, medians from the third), and native's device timeline of two tokens, to set
# the cuDNN plan building's idle gap natively beside call 1's under pump.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | sort -n | awk '{a[NR]=$1} END {printf "median %s of %d", a[int((NR+1)/2)], NR}') $(grep checksum $R/$1.txt | cut -c1-40)"; grep -m2 -i "error\|warn" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...   (BUDGET "off": no preload)
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 540 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = off ]; then
    timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err; show $name $?; return
  fi
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5"
run lru-1 3489660928 120 PUMP_POLICY=lru -- $dec --tokens 10
run accelerate off 150 -- $dec --tokens 10 --offload accelerate --gpu-budget-gib 3.25
run lru-2 3489660928 120 PUMP_POLICY=lru -- $dec --tokens 10
tar czf $OUT/r2.tgz -C $OUT r2
run native-profile off 100 -- $dec --tokens 6 --profile $R/native-timeline.json
python3 tests/gpu/torch/timeline_overlap.py $R/native-timeline.json 2>&1 | tail -12
python3 - $R/native-timeline.json <<'PY'
import json, sys
xs = sorted((e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")), key=lambda e: e["ts"])
end, prev, gaps = xs[0]["ts"] + xs[0]["dur"], xs[0], []
for e in xs[1:]:
    if e["ts"] > end + 500: gaps.append((e["ts"] - end, prev["name"][:40], e["name"][:40]))
    if e["ts"] + e["dur"] > end: end, prev = e["ts"] + e["dur"], e
for g in sorted(gaps, reverse=True)[:4]: print(f"gap {g[0]/1e3:.1f} ms: after {g[1]} -> {g[2]}")
PY
gzip $R/*timeline.json
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
