#!/usr/bin/env bash
# Fourteenth session, call 4. The frameworks (issue 9) again, four sessions of data-path changes later (pinned shadows
# registered and ahead, and more): JAX with and without preallocation and CuPy, native, then under pump at half the
# native footprint, none and lru, lru under poison too (tests/gpu/device_suite.sh frameworks; SAFETY in there).
# The eleventh session's JAX run had 2 of 1,295 launches without a known block: still so?
T=$OUT; export OUT=$T/r4; mkdir -p $OUT
FRAMEWORKS_CONFIGS="${FW:-jax-prealloc jax-noprealloc cupy}" timeout 570 tests/gpu/device_suite.sh frameworks > $OUT/console.txt 2>&1
echo "rc=$?"; grep -A30 "table" $OUT/console.txt | head -30
rm -f $OUT/*.stats.json.tmp; tar czf $T/r4.tgz -C $T r4 && rm -rf $OUT
