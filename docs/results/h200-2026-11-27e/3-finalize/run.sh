#!/usr/bin/env bash
# Nineteenth session, call 3: why cuDNN's plan building (cudnnBackendFinalize) takes longer under pump at half
# (call 1: 45.4 ms a token against a 37-39 ms idle gap natively). The same 16-token decode, the machine warmed
# by a native run first (cuDNN's kernels for each length compiled once), then pump: at half (lru, vmm), with
# everything fitting but every call watched (PUMP_WATCH_WHILE_FITS=1: the hooks time cuDNN, nothing moves), at
# half on the copy path, at half with the releaser's events made blocking (PUMP_EXPERIMENT_BLOCKING_RELEASE=1: a
# patch for this call only, not in the tree: CU_EVENT_BLOCKING_SYNC in PhysicalChunks::take_event), and at half
# again. Printed: median ms/token, cudnnBackendFinalize's real time over the run, restored GB.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
fin() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1])); h = d["hooks"].get("cudnnBackendFinalize", {}); e = d["devices"][0]
print(f"   finalize {h.get('real_ns', 0)/1e6:.1f} ms in {h.get('calls', 0)} calls; restored {e.get('bytes_restored', 0)/1e9:.1f} GB; "
      f"unmap {e.get('backend_physical_unmap_ns', 0)/1e6:.0f} ms map {e.get('backend_physical_map_ns', 0)/1e6:.0f} ms")
PY
}
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | sort -n | awk '{a[NR]=$1} END {printf "median %s of %d", a[int((NR+1)/2)], NR}') $(grep checksum $R/$1.txt | cut -c1-40)"; [ -f $R/$1.json ] && fin $1; grep -m2 -i "error\|warn" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...   (BUDGET "-": none given, "off": no preload)
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = off ]; then
    timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err; show $name $?; return
  fi
  [ "$budget" != - ] && envs+=(PUMP_GPU_BUDGET=$budget)
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 16"
run native off 100 -- $dec
run half 3489660928 100 PUMP_POLICY=lru -- $dec
run fits-watched - 100 PUMP_POLICY=lru PUMP_WATCH_WHILE_FITS=1 -- $dec
run half-copy 3489660928 100 PUMP_POLICY=lru PUMP_DATAPATH=copy -- $dec
run half-blocking 3489660928 100 PUMP_POLICY=lru PUMP_EXPERIMENT_BLOCKING_RELEASE=1 -- $dec
tar czf $OUT/r3.tgz -C $OUT r3
run half-2 3489660928 100 PUMP_POLICY=lru -- $dec
tar czf $OUT/r3.tgz -C $OUT r3 && rm -rf $R
