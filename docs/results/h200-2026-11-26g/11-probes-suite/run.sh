#!/usr/bin/env bash
# Fourteenth session, call 13: tests/gpu/device_suite.sh probes (the three page-work probes, as committed).
T=$OUT; export OUT=$T/r13; mkdir -p $OUT
timeout 400 tests/gpu/device_suite.sh probes > $OUT/console.txt 2>&1; echo "rc=$?"; tail -30 $OUT/console.txt
tar czf $T/r13.tgz -C $T r13 && rm -rf $OUT
