#!/usr/bin/env bash
# Nineteenth session, call 1: where a decode token's time goes at half the weights (lru, vmm, the defaults).
# Steady state by difference: each configuration runs --tokens 8 and --tokens 16 (same warm-up), and the
# PUMP_STATS counters of the longer run less the shorter one's are 8 tokens' worth. The launch phases now
# split the time under the engine's lock (on_pressure, submit, settle). Also: native and PUMP_DISABLE=1 for the
# program's own time, the decode with no budget (everything fits: the per-launch cost on a launch-bound
# program), and a device timeline of two tokens at half (torch.profiler), summed by timeline_overlap.py.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r1; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }  # SAFETY: half the free memory
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
show() { echo "$1 rc=$2 $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | sort -n | awk '{a[NR]=$1} END {printf "median %s of %d", a[int((NR+1)/2)], NR}') $(grep checksum $R/$1.txt | cut -c1-40)"; grep -m2 -i "error\|warn" $R/$1.err; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...   (BUDGET "-": none given, "off": no preload)
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 540 ] || { echo "skipped $name (time)"; return; }
  if [ "$budget" = off ]; then
    timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err; show $name $?; return
  fi
  [ "$budget" != - ] && envs+=(PUMP_GPU_BUDGET=$budget)
  env "${envs[@]}" LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
}
diff_stats() { python3 - $R/$1-8.json $R/$1-16.json <<'PY' 2>/dev/null
import json, sys
a, b = (json.load(open(p))["devices"][0] for p in sys.argv[1:3])
d = {k: b[k] - a.get(k, 0) for k in b if isinstance(b[k], (int, float))}
k = d.get("kernels", 0) or 1
print(f"   8 steady tokens: kernels {d.get('kernels',0)} batches {d.get('batches',0)} restored {d.get('bytes_restored',0)/1e9:.2f} GB "
      f"saved {d.get('bytes_saved',0)/1e9:.2f} GB prefetched {d.get('bytes_prefetched',0)/1e9:.2f} GB")
for n in ["launch_capture_ns", "launch_lock_wait_ns", "launch_locked_ns", "launch_settle_ns", "launch_pressure_ns",
          "launch_policy_ns", "launch_submit_ns", "launch_waits_ns", "launch_mark_ns", "backend_issue_wait_ns",
          "backend_worker_busy_ns", "backend_worker_cpu_ns", "backend_physical_map_ns", "backend_physical_unmap_ns",
          "backend_physical_release_wait_ns", "backend_fence_query_ns", "backend_pinned_alloc_ns"]:
    print(f"   {n:36s} {d.get(n,0)/8e6:9.2f} ms/token  {d.get(n,0)/k/1e3:8.2f} us/kernel")
print("   counts/token: " + " ".join(f"{n}={d.get(n,0)/8:.0f}" for n in ["backend_issue_waits", "backend_physical_maps",
      "backend_physical_unmaps", "backend_physical_access_calls", "backend_physical_slow_access_calls",
      "backend_physical_limit_waits", "backend_fence_driver_queries", "backend_stream_waits"]))
PY
}
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5"
for n in 8 16; do run native-$n off 100 -- $dec --tokens $n; done
for n in 8 16; do run disabled-$n - 100 PUMP_DISABLE=1 -- $dec --tokens $n; done
for n in 8 16; do run fits-$n - 100 PUMP_POLICY=lru -- $dec --tokens $n; done
diff_stats fits
for n in 8 16; do run half-$n 3489660928 120 PUMP_POLICY=lru -- $dec --tokens $n; done
diff_stats half
tar czf $OUT/r1.tgz -C $OUT r1
run half-profile 3489660928 120 PUMP_POLICY=lru -- $dec --tokens 6 --profile $R/half-timeline.json
python3 tests/gpu/torch/timeline_overlap.py $R/half-timeline.json 2>&1 | tail -15
run native-profile off 100 -- $dec --tokens 6 --profile $R/native-timeline.json
python3 tests/gpu/torch/timeline_overlap.py $R/native-timeline.json 2>&1 | tail -15
gzip $R/*timeline.json
tar czf $OUT/r1.tgz -C $OUT r1 && rm -rf $R
