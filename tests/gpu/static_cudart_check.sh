#!/usr/bin/env bash
# On a GPU machine, from the repo root: a program built with nvcc's defaults (the CUDA
# runtime linked statically, cuBLAS linked as usual) under libpump.so gets managed
# memory, its launches' blocks and its copies' exact extents, like a shared-runtime one.
#   tests/gpu/static_cudart_check.sh [dir holding lib/libpump.so and lib/pump/]   (default .device)
# Builds tests/gpu/static_cudart_probe.cu with plain nvcc (no -cudart option), runs it
# natively and under LD_PRELOAD=libpump.so with --check (every result verified on the
# host), compares what both printed and checks the PUMP_STATS report
# (check_static_cudart_stats.py). Everything fits, so the calls are watched as under a budget
# (PUMP_WATCH_WHILE_FITS=1): otherwise they pass by the engines until one is over its budget,
# and nothing is extracted (the first GPU run, fourteenth session, failed so).
# SAFETY: the program allocates under 2 MiB; PUMP_MANAGED_LIMIT caps pump at 256 MiB.
set -euo pipefail
BUILD=${1:-.device}
WORK=${OUT:-/tmp/pump-static-cudart}
mkdir -p "$WORK"
LIBPUMP=$PWD/$BUILD/lib/libpump.so
[ -f "$LIBPUMP" ] || { echo "no $LIBPUMP: build libpump.so first (scripts/device_bundle.sh)"; exit 2; }

# cuBLAS from the CUDA toolkit or from pip wheels (nvidia-cublas).
LIBDIRS=$( (ls -d /usr/local/cuda/lib64 2>/dev/null;
            find / -xdev -name 'libcublas.so.13' -path '*nvidia*' 2>/dev/null | xargs -r -n1 dirname) |
           sort -u | paste -sd: )
export LD_LIBRARY_PATH=$LIBDIRS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$WORK/link"  # wheels ship no unversioned libcublas.so to link against
for l in cublas.so.13 cublasLt.so.13; do
  f=$(echo "$LIBDIRS" | tr ':' '\n' | while read -r d; do [ -e "$d/lib$l" ] && echo "$d/lib$l" && break; done)
  [ -n "$f" ] && ln -sf "$f" "$WORK/link/lib${l%%.so*}.so"
done
LINKDIRS=$(echo "$LIBDIRS" | tr ':' '\n' | sed 's/^/-L/' | paste -sd' ')

nvcc -O2 -std=c++17 -arch=sm_90 -o "$WORK/static_cudart_probe" tests/gpu/static_cudart_probe.cu \
  -L"$WORK/link" $LINKDIRS -lcublas
nm "$WORK/static_cudart_probe" > "$WORK/symbols.txt"  # (not piped into grep -q: pipefail)
if grep -q libcudart_static "$WORK/symbols.txt" && ! ldd "$WORK/static_cudart_probe" | grep libcudart; then
  echo "built with the static CUDA runtime"
else
  echo "FAIL: the probe is not linked with the static CUDA runtime"; exit 1
fi

echo "== native"
rc=0
"$WORK/static_cudart_probe" --check > "$WORK/native.txt" || rc=$?
cat "$WORK/native.txt"
if [ $rc -eq 77 ]; then echo "no GPU here: skipped"; exit 77; fi
[ $rc -eq 0 ] || { echo "FAIL: the program failed natively (rc=$rc)"; exit 1; }
echo "== under libpump.so"
LD_PRELOAD=$LIBPUMP PUMP_MANAGED_LIMIT=256MiB PUMP_WATCH_WHILE_FITS=1 PUMP_STATS=$WORK/stats.json PUMP_LOG_LEVEL=${PUMP_LOG_LEVEL:-info} \
  "$WORK/static_cudart_probe" --check 2> "$WORK/pump_stderr.txt" | tee "$WORK/pumped.txt" ||
  { tail -40 "$WORK/pump_stderr.txt"; exit 1; }
grep '^pump' "$WORK/pump_stderr.txt" | head -40 || true
if grep -q '^pump: error' "$WORK/pump_stderr.txt"; then echo "FAIL: pump printed an error"; exit 1; fi
if ! cmp -s "$WORK/native.txt" "$WORK/pumped.txt"; then echo "FAIL: the program printed something else under pump"; exit 1; fi
echo "same output, same checksums"
python3 tests/gpu/check_static_cudart_stats.py "$WORK/stats.json"
