#!/usr/bin/env bash
# Twenty-fifth session, call 7. (a) Issue 9: the build with the review's fixes to the map's bring-in (room made only
# after the passed calls are adopted, every block of a piece, a piece already on its way waited for): JAX on XLA's
# platform allocator and ResNet-50 on expandable segments, lru and lru under poison at half the footprint
# (frameworks suite), JAX's lru twice more. (b) Issue 8: the Llama-shaped decode near fit (footprint / 1.02) under
# pump-bench: native, managed, none (unified memory), lru; 10 tokens.
# SAFETY: the suite caps managed memory at half the free memory, pump-bench at 90% of it; footprints 2.7-7 GB on a
# 140 GB card.
export OUT=$OUT/r7; mkdir -p $OUT
FRAMEWORKS_CONFIGS="jax-platform torch-expandable" POLICIES=lru FRAMEWORKS_STEPS=6 FRAMEWORKS_TORCH_STEPS=6 \
  timeout 200 tests/gpu/device_suite.sh frameworks
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
for i in 1 2; do
  JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform \
    LD_PRELOAD=$PWD/.device/lib/libpump.so PUMP_PLUGINS=cudnn,cublas,launch PUMP_POLICY=lru PUMP_GPU_BUDGET=1400234442 \
    PUMP_MANAGED_LIMIT=$(limit) PUMP_STATS=$OUT/jax-lru-$i.stats.json timeout 60 python3 tests/gpu/frameworks/jax_train.py --steps 6 \
    > $OUT/jax-lru-$i.txt 2> $OUT/jax-lru-$i.err
  rc=$?; l=DIFFER; grep ^loss $OUT/jax-lru-$i.txt | cmp -s - $OUT/frameworks-jax-platform-native.losses && l=identical
  echo "jax lru $i rc=$rc $l at ${SECONDS}s"
done
for f in $OUT/*.stats.json; do python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); d=s["devices"][0] if isinstance(s["devices"],list) else list(s["devices"].values())[0]; print(sys.argv[1].split("/")[-1], "populated", d.get("pieces_populated_on_map"), "left", d.get("pieces_left_unpopulated"), "peak", d.get("peak_resident_bytes"), "budget", d.get("budget_bytes"))' $f; done
echo "decode near fit from ${SECONDS}s"
timeout $((300 - SECONDS)) .device/bin/pump-bench --oversubscription 1.02 --policies lru --repeats 1 --json $OUT/decode-1.02.json \
  -- python3 tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10 > $OUT/decode-1.02.txt 2>&1
echo "decode rc=$?"; grep -E "^(workload|python3|pump-bench: link)" $OUT/decode-1.02.txt
cd $OUT/.. && tar czf r7.tgz r7 && rm -rf r7
