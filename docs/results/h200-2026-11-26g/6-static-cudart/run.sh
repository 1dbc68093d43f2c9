#!/usr/bin/env bash
# Fourteenth session, call 6. The static-cudart check again (tests/gpu/device_suite.sh static-cudart), its calls now
# watched while everything fits (PUMP_WATCH_WHILE_FITS=1): call 5, its first run on a GPU, found them passing by the
# engines (nothing extracted) because the program fits. SAFETY: under 2 MiB, PUMP_MANAGED_LIMIT 256 MiB.
T=$OUT; export OUT=$T/r6; mkdir -p $OUT
timeout 150 tests/gpu/device_suite.sh static-cudart > $OUT/static.txt 2>&1
echo "static-cudart rc=$?"; tail -12 $OUT/static.txt
rm -f $OUT/static_cudart_probe; rm -rf $OUT/link
tar czf $T/r6.tgz -C $T r6 && rm -rf $OUT
