#!/usr/bin/env bash
# Twenty-fifth session, call 2 (issue 9): JAX on XLA's platform allocator gave other losses under lru (not under
# none or poison) in call 1 with the final build. Bisect with two experiment switches (a build for this call only):
# A the build as it is, B the emulated unmap's discard skipped (PUMP_EXPERIMENT_NO_UNMAP_DISCARD), C the mapped
# piece's populate skipped (PUMP_EXPERIMENT_NO_MAP_POPULATE), D both; three rounds, interleaved, lru at half the
# footprint (1335 MiB), 6 steps; each run's losses against native's.
# SAFETY: managed memory capped at half the free memory; footprint about 2.7 GB.
export OUT=$OUT/r2; mkdir -p $OUT
export JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
timeout 60 python3 tests/gpu/frameworks/jax_train.py --steps 6 > $OUT/native.txt 2> $OUT/native.err
grep ^loss $OUT/native.txt > $OUT/native.losses
for round in 1 2 3; do
  for v in A B C D; do
    envs=()
    case $v in B) envs=(PUMP_EXPERIMENT_NO_UNMAP_DISCARD=1) ;; C) envs=(PUMP_EXPERIMENT_NO_MAP_POPULATE=1) ;;
               D) envs=(PUMP_EXPERIMENT_NO_UNMAP_DISCARD=1 PUMP_EXPERIMENT_NO_MAP_POPULATE=1) ;; esac
    limit=$(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 ))
    env "${envs[@]}" LD_PRELOAD=$PWD/.device/lib/libpump.so PUMP_PLUGINS=cudnn,cublas,launch PUMP_POLICY=lru \
      PUMP_GPU_BUDGET=1400234442 PUMP_MANAGED_LIMIT=$limit timeout 60 python3 tests/gpu/frameworks/jax_train.py --steps 6 \
      > $OUT/$v-$round.txt 2> $OUT/$v-$round.err
    rc=$?
    if grep ^loss $OUT/$v-$round.txt | cmp -s - $OUT/native.losses; then l=identical; else l=DIFFER; fi
    echo "round $round $v rc=$rc $l $(grep -c ^loss $OUT/$v-$round.txt) losses, at ${SECONDS}s"
  done
done
cd $OUT/.. && tar czf r2.tgz r2 && rm -rf r2
