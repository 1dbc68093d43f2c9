#!/usr/bin/env bash
# Twenty-fifth session, call 5 (issue 9): the build where the map itself brings its piece in (outside the
# emulation's lock), after the engines adopted what passed them when over budget. JAX on XLA's platform allocator
# and ResNet-50 on PyTorch's expandable segments through the frameworks suite (native, none = plain unified memory,
# lru, lru under poison, half the footprint; call 4's expandable runs peaked 85 MB over the budget), then JAX's lru
# three more times.
# SAFETY: managed memory capped at half the free memory; footprints 2.7-6 GB on a 140 GB card.
export OUT=$OUT/r5; mkdir -p $OUT
FRAMEWORKS_CONFIGS="jax-platform torch-expandable" POLICIES=none,lru FRAMEWORKS_STEPS=6 \
  timeout 240 tests/gpu/device_suite.sh frameworks
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
for i in 1 2 3; do
  JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform \
    LD_PRELOAD=$PWD/.device/lib/libpump.so PUMP_PLUGINS=cudnn,cublas,launch PUMP_POLICY=lru PUMP_GPU_BUDGET=1400234442 \
    PUMP_MANAGED_LIMIT=$(limit) PUMP_STATS=$OUT/jax-lru-$i.stats.json timeout 60 python3 tests/gpu/frameworks/jax_train.py --steps 6 \
    > $OUT/jax-lru-$i.txt 2> $OUT/jax-lru-$i.err
  rc=$?; l=DIFFER; grep ^loss $OUT/jax-lru-$i.txt | cmp -s - $OUT/frameworks-jax-platform-native.losses && l=identical
  echo "jax lru $i rc=$rc $l at ${SECONDS}s"
done
for f in $OUT/*.stats.json; do python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); d=s["devices"][0] if isinstance(s["devices"],list) else list(s["devices"].values())[0]; print(sys.argv[1].split("/")[-1], "populated", d.get("pieces_populated_on_map"), "left", d.get("pieces_left_unpopulated"), "peak", d.get("peak_resident_bytes"), "budget", d.get("budget_bytes"))' $f; done
cd $OUT/.. && tar czf r5.tgz r5 && rm -rf r5
