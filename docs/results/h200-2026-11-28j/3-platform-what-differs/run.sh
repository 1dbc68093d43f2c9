#!/usr/bin/env bash
# Twenty-fifth session, call 3 (issue 9): JAX on XLA's platform allocator with the mapped piece's populate skipped
# (PUMP_EXPERIMENT_NO_MAP_POPULATE: other losses in 3 of 3 runs of call 2), lru at half the footprint. What differs:
# the initial parameters and data (--print-init digests them on the host) or only the step; and which change
# brings native's losses back: every call watched while fitting (no gate), reservations aligned to 2 MiB
# (PUMP_EXPERIMENT_ALIGN_RESERVATIONS), the unified-memory data path, policy none. Two rounds, interleaved.
# SAFETY: managed memory capped at half the free memory; footprint about 2.7 GB.
export OUT=$OUT/r3; mkdir -p $OUT
export JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
timeout 60 python3 tests/gpu/frameworks/jax_train.py --steps 4 --print-init > $OUT/native.txt 2> $OUT/native.err
grep ^loss $OUT/native.txt > $OUT/native.losses
one() {  # one NAME [--print-init] -- ENV...
  local name=$1 print=""; shift
  [ "$1" = --print-init ] && { print=--print-init; shift; }
  [ "$1" = -- ] && shift
  local limit=$(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 ))
  env PUMP_EXPERIMENT_NO_MAP_POPULATE=1 PUMP_POLICY=lru "$@" LD_PRELOAD=$PWD/.device/lib/libpump.so \
    PUMP_PLUGINS=cudnn,cublas,launch PUMP_GPU_BUDGET=1400234442 PUMP_MANAGED_LIMIT=$limit \
    timeout 60 python3 tests/gpu/frameworks/jax_train.py --steps 4 $print > $OUT/$name.txt 2> $OUT/$name.err
  local rc=$? l=DIFFER i=""
  grep ^loss $OUT/$name.txt | cmp -s - $OUT/native.losses && l=identical
  [ -n "$print" ] && { diff <(grep ^init $OUT/native.err) <(grep ^init $OUT/$name.err) > /dev/null && i="init same" || i="init DIFFERS"; }
  echo "$name rc=$rc $l $i at ${SECONDS}s"
}
for round in 1 2; do
  one C-print-$round --print-init --
  one C-$round --
  one C-watch-$round -- PUMP_WATCH_WHILE_FITS=1
  one C-align-$round -- PUMP_EXPERIMENT_ALIGN_RESERVATIONS=1
  one C-um-$round -- PUMP_DATAPATH=um
  one C-none-$round -- PUMP_POLICY=none
done
cd $OUT/.. && tar czf r3.tgz r3 && rm -rf r3
