#!/usr/bin/env bash
# Twenty-sixth session, call 4: call 3's build (allocations on physical chunks top down in one span) gave native's
# footprint but an illegal address under pressure (GPT bf16 at 4236247040, lru and learned, step 2). Bisect with
# experiment switches (experiment-switches.patch): the span top down (the build), separate reservations with descending
# hints (PUMP_EXP_SPAN=hint), the span bottom up (bottomup), separate reservations as before (off); the first with
# CUDA_LAUNCH_BLOCKING=1 and every map/unmap logged; then compute-sanitizer on the failing configuration.
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-4.7 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r4; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
med() { python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")]; n=len(ms)//2; print(f"last{n} median {statistics.median(ms[-n:]):.1f}" if ms else "-")' "$1"; }
show() { echo "$1 rc=$2 $(med $R/$1.txt) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep -o 'footprint_bytes=[0-9]*' $R/$1.txt) $(grep checksum $R/$1.txt | cut -c1-40)"; grep -m2 -i "error\|illegal" $R/$1.err | cut -c1-200; }
run() {  # run NAME TIMEOUT ENV... -- ARGS...
  local name=$1 t=$2; shift 2
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 400 ] || { echo "skipped $name (time)"; return; }
  env "${envs[@]}" PUMP_GPU_BUDGET=4236247040 LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_POLICY=lru PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $?
  tar czf $OUT/r4.tgz -C $OUT r4
}
g="tests/gpu/torch/train_steps.py --model transformer --dtype bf16"
run span-blocking 120 PUMP_EXP_VA_LOG=1 CUDA_LAUNCH_BLOCKING=1 -- $g --steps 6
run hint 90 PUMP_EXP_VA_LOG=1 PUMP_EXP_SPAN=hint -- $g --steps 12
run bottomup 90 PUMP_EXP_VA_LOG=1 PUMP_EXP_SPAN=bottomup -- $g --steps 12
run off 90 PUMP_EXP_SPAN=off -- $g --steps 12
run span 90 PUMP_EXP_VA_LOG=1 -- $g --steps 6
left=$(( 560 - SECONDS )); [ $left -gt 60 ] || exit 0
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
timeout $left $CS --tool memcheck --print-limit 4 --show-backtrace no env PUMP_EXP_VA_LOG=1 PUMP_GPU_BUDGET=4236247040 \
  LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch PUMP_POLICY=lru python3 $g --steps 3 \
  > $R/sanitizer.txt 2> $R/sanitizer.err
echo "sanitizer rc=$? $(grep -m6 -i "invalid\|illegal\|address\|=========" $R/sanitizer.txt | head -12)"
tar czf $OUT/r4.tgz -C $OUT r4
