#!/usr/bin/env bash
# Twenty-fifth session, call 4. (a) Issue 9: the build where a mapped piece is on the device before its map returns
# (waited for, room made where the budget has none): JAX on XLA's platform allocator and ResNet-50 on PyTorch's
# expandable segments through the frameworks suite (native, none = plain unified memory, lru, lru under poison, at
# half the footprint), then JAX's lru four more times (the failure was 1 in 4 runs with the unwaited populate).
# (b) Issue 8: GPT bf16 near fit (budget = footprint / 1.05, the footprint pump-bench measured in call 1), native
# once, then two rounds of none (unified memory), lru, and lru without its idle-clean pass
# (PUMP_LRU_VICTIMS=idle-dead,cyclic,any), 8 steps each.
# SAFETY: managed memory capped at half the free memory; footprints 2.7-6.6 GB on a 140 GB card.
export OUT=$OUT/r4; mkdir -p $OUT
FRAMEWORKS_CONFIGS="jax-platform torch-expandable" POLICIES=none,lru FRAMEWORKS_STEPS=6 \
  timeout 240 tests/gpu/device_suite.sh frameworks
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
for i in 1 2 3 4; do
  JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform \
    LD_PRELOAD=$PWD/.device/lib/libpump.so PUMP_PLUGINS=cudnn,cublas,launch PUMP_POLICY=lru PUMP_GPU_BUDGET=1400234442 \
    PUMP_MANAGED_LIMIT=$(limit) PUMP_STATS=$OUT/jax-lru-$i.stats.json timeout 60 python3 tests/gpu/frameworks/jax_train.py --steps 6 \
    > $OUT/jax-lru-$i.txt 2> $OUT/jax-lru-$i.err
  rc=$?; l=DIFFER; grep ^loss $OUT/jax-lru-$i.txt | cmp -s - $OUT/frameworks-jax-platform-native.losses && l=identical
  echo "jax lru $i rc=$rc $l at ${SECONDS}s"
done
G=(python3 tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 8)
timeout 60 "${G[@]}" > $OUT/gpt-native.txt 2> $OUT/gpt-native.err
med() { python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")][3:]; print(f"{statistics.median(ms):.1f}" if ms else "-")' "$1"; }
echo "gpt native $(med $OUT/gpt-native.txt) ms $(grep checksum $OUT/gpt-native.txt)"
for round in 1 2; do
  for v in none lru lru-noclean; do
    envs=(PUMP_POLICY=lru); case $v in none) envs=(PUMP_POLICY=none PUMP_DATAPATH=um) ;;
                                       lru-noclean) envs=(PUMP_POLICY=lru PUMP_LRU_VICTIMS=idle-dead,cyclic,any) ;; esac
    env "${envs[@]}" LD_PRELOAD=$PWD/.device/lib/libpump.so PUMP_PLUGINS=cudnn,cublas,launch PUMP_GPU_BUDGET=4443964952 \
      PUMP_MANAGED_LIMIT=$(limit) PUMP_STATS=$OUT/gpt-$v-$round.stats.json timeout 90 "${G[@]}" > $OUT/gpt-$v-$round.txt 2> $OUT/gpt-$v-$round.err
    echo "gpt $v $round rc=$? $(med $OUT/gpt-$v-$round.txt) ms $(grep checksum $OUT/gpt-$v-$round.txt) at ${SECONDS}s"
  done
done
cd $OUT/.. && tar czf r4.tgz r4 && rm -rf r4
