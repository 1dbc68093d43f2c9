#!/usr/bin/env bash
# Fourteenth session, call 5. As call 4 for PyTorch ResNet-50 with expandable segments and with cudaMallocAsync
# (tests/gpu/device_suite.sh frameworks: native, then pump at half the native footprint, none and lru, lru under
# poison too; SAFETY in there), then the static-cudart program (device_suite.sh static-cudart).
T=$OUT; export OUT=$T/r5; mkdir -p $OUT
FRAMEWORKS_CONFIGS="torch-expandable torch-mallocasync" timeout 450 tests/gpu/device_suite.sh frameworks > $OUT/console.txt 2>&1
echo "frameworks rc=$?"; grep -A12 "table" $OUT/console.txt | head -14
timeout 120 tests/gpu/device_suite.sh static-cudart > $OUT/static.txt 2>&1
echo "static-cudart rc=$?"; tail -6 $OUT/static.txt
tar czf $T/r5.tgz -C $T r5 && rm -rf $OUT
