#!/usr/bin/env bash
# Twenty-ninth session, call 1 (issue 8): learned's kernel anchor. The policy now sees the call's
# extents (SDK 1.6) and knows a kernel by its first large extent's address, or by what its first
# extent is (size, access, role) when none is large, not by the first block the engine made of it
# (LOLDANCHOR=1: as before). LNOPERIOD=1: no period at all, every range predicted by its own reuse
# gap. One build, the variants by environment, interleaved. The Llama-shaped decode at half its
# weights and near fit (1.02), BERT near fit (zoo.py, outside tests/), GPT bf16 at 2.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-10.9 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
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
  tar czf $OUT/r1.tgz -C $OUT r1
}
d="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 16"
for v in lru old new noperiod; do
  case $v in lru) E="PUMP_POLICY=lru";; old) E="LOLDANCHOR=1";; new) E="PUMP_POLICY=learned";; noperiod) E="LNOPERIOD=1";; esac
  run dec-half-$v 3489660928 90 $E -- $d
done
B=$(( 7021264896 * 100 / 102 ))
for v in lru old new noperiod; do
  case $v in lru) E="PUMP_POLICY=lru";; old) E="LOLDANCHOR=1";; new) E="PUMP_POLICY=learned";; noperiod) E="LNOPERIOD=1";; esac
  run dec-nearfit-$v $B 90 $E -- $d
done
b=".device/zoo.py --model bert --steps 12"
B=$(( 10865344512 * 100 / 105 ))
run bert105-old $B 90 LOLDANCHOR=1 -- $b
run bert105-new $B 90 PUMP_POLICY=learned -- $b
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 16"
B=$(( 4431282176 / 2 ))
run gpt2-old $B 60 LOLDANCHOR=1 -- $g
run gpt2-new $B 60 PUMP_POLICY=learned -- $g
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
