#!/usr/bin/env bash
# Twenty-ninth session, call 3 (issue 8): the final build. learned knows a kernel by its call's
# extents (SDK 1.6): the first extent of 1/4096 of the budget or more that is not a workspace, by
# address, else its first extent's size, access and role. Against lru on the Llama-shaped decode
# (native, at half its weights, near fit at 1.02), and against main's learned (its plugin carried
# as .device/main/, the engine the same) on ViT-B/16 (zoo.py, outside tests/) and ResNet-50 at 2.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-7.0 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r3; mkdir -p $R
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1])); e = d["devices"][0]; h = d["hooks"]
g = lambda k: e.get(k, 0)
print(f"in {(g('bytes_restored')+g('bytes_prefetched')+g('bytes_demand'))/1e9:.2f} GB saved {g('bytes_saved')/1e9:.2f} "
      f"dropped {g('bytes_discarded')/1e9:.2f} GB policy {g('launch_policy_ns')/max(1,g('kernels'))/1e3:.2f} us/kernel "
      f"locked {g('launch_locked_ns')/1e6:.0f} ms pinning {g('backend_pinned_alloc_ns')/1e6:.0f} ms finalize {h['cudnnBackendFinalize']['real_ns']/1e6 if 'cudnnBackendFinalize' in h else 0:.0f} ms")
PY
}
med() { python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")]; n=len(ms)//2; print(f"last{n} median {statistics.median(ms[-n:]):.1f}" if ms else "-")' "$1"; }
show() { echo "$1 rc=$2 $(med $R/$1.txt) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1) $(grep -m1 'policy learned:' $R/$1.err | sed 's/.*policy learned: //' | cut -c1-330)"; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 530 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = native ]; then timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  else
    env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
      PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  fi
  show $name $?
  tar czf $OUT/r3.tgz -C $OUT r3
}
MAIN=$PWD/.device/main/libpump_policy_learned.so
d="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 16"
run dec-native native 90 -- $d
for p in lru learned; do run dec-half-$p 3489660928 90 PUMP_POLICY=$p -- $d; done
for p in lru learned; do run dec-nearfit-$p $(( 7021264896 * 100 / 102 )) 90 PUMP_POLICY=$p -- $d; done
v=".device/zoo.py --model vit --steps 16"
B=$(( 6765412352 / 2 ))
run vit2-main $B 90 PUMP_POLICY=$MAIN -- $v
run vit2-learned $B 90 PUMP_POLICY=learned -- $v
r="tests/gpu/torch/train_steps.py --model resnet50 --steps 16"
B=$(( 6968836096 / 2 ))
run res2-main $B 90 PUMP_POLICY=$MAIN -- $r
run res2-learned $B 90 PUMP_POLICY=learned -- $r
tar czf $OUT/r3.tgz -C $OUT r3 && rm -rf $R
