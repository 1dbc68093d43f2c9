#!/usr/bin/env bash
# Twenty-first session, call 11: the session's library (64 MiB chunks by default) on the GPU checks: the GPU test
# binaries (device_suite.sh check), then bitwise against native on the default data path (vmm) as it ships, normally
# and under PUMP_VERIFY=poison (a read pump did not foresee turns into NaN): ResNet-50 fp32 and the GPT decoder bf16,
# lru and learned, 12 steps (check_policies.py: budget half the footprint, its own managed-memory cap).
export OUT=$OUT
tests/gpu/device_suite.sh check 2>&1 | tail -30
for v in off poison; do
  for model in "resnet50 fp32" "transformer bf16"; do
    set -- $model
    [ $SECONDS -lt 470 ] || { echo "skipped $v $1 (time)"; continue; }
    PUMP_VERIFY=$v timeout 200 python3 tests/gpu/torch/check_policies.py --libpump .device/lib/libpump.so --model "$1" \
      --dtype "$2" --steps 12 --policies lru,learned --out "$OUT/verify-$v" 2>&1 | tee -a "$OUT/verify.txt" | tail -4
    echo "rc=${PIPESTATUS[0]} ($v $1)"
  done
done
