#!/usr/bin/env bash
# Runs libpump.so's end-to-end GPU check on a machine with a GPU, from the repo root:
#   tests/gpu/run_on_device.sh [build dir holding lib/libpump.so and lib/pump/]
# The build dir is built elsewhere (no Boost/GTest needed here) and carried along.
# pump_gpu_check is compiled here with nvcc, run natively and under LD_PRELOAD with a
# budget far below its ~3 GiB working set; checksums must match bit for bit and the
# PUMP_STATS report must show prefetches, evictions and bounded residency.
# SAFETY: PUMP_MANAGED_LIMIT stays far below the card's free memory.
set -euo pipefail
BUILD=${1:-build-interpose}
WORK=${OUT:-/tmp/pump-gpu}
mkdir -p "$WORK"
LIBPUMP=$PWD/$BUILD/lib/libpump.so
[ -f "$LIBPUMP" ] || { echo "no $LIBPUMP: build libpump.so first"; exit 2; }

# cuBLAS and cuDNN come from the CUDA toolkit or from pip wheels (nvidia-cublas, nvidia-cudnn-cu13).
LIBDIRS=$( (ls -d /usr/local/cuda/lib64 2>/dev/null;
            find / -xdev \( -name 'libcudnn.so.9' -o -name 'libcublas.so.13' \) -path '*nvidia*' 2>/dev/null |
              xargs -r -n1 dirname) | sort -u | paste -sd: )
INCDIRS=$(find / -xdev -name cudnn.h -path '*nvidia*' 2>/dev/null | xargs -r -n1 dirname | sort -u | sed 's/^/-I/' | paste -sd' ')
export LD_LIBRARY_PATH=$LIBDIRS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
LINKDIRS=$(echo "$LIBDIRS" | tr ':' '\n' | sed 's/^/-L/' | paste -sd' ')

nvidia-smi --query-gpu=name,memory.total,memory.free --format=csv,noheader
# Link against the sonames (wheels ship no unversioned .so).
mkdir -p "$WORK/link"
for l in cudnn.so.9 cublas.so.13 cublasLt.so.13; do
  f=$(echo "$LIBDIRS" | tr ':' '\n' | while read -r d; do [ -e "$d/lib$l" ] && echo "$d/lib$l" && break; done)
  [ -n "$f" ] && ln -sf "$f" "$WORK/link/lib${l%%.so*}.so"
done
# -cudart shared: the runtime-level hooks, as PyTorch uses them (static_cudart_check.sh checks
# a program with nvcc's default static runtime).
nvcc -O2 -std=c++17 -arch=sm_90 -cudart shared $INCDIRS -o "$WORK/pump_gpu_check" tests/gpu/pump_gpu_check.cu \
  -L"$WORK/link" $LINKDIRS -lcublas -lcudnn

BUDGET=1GiB
LIMIT=8GiB   # total managed memory cap: the check allocates ~3 GiB
echo "== native"
"$WORK/pump_gpu_check" | tee "$WORK/native.txt"
echo "== under libpump.so (PUMP_GPU_BUDGET=$BUDGET, PUMP_MANAGED_LIMIT=$LIMIT)"
LD_PRELOAD=$LIBPUMP PUMP_GPU_BUDGET=$BUDGET PUMP_MANAGED_LIMIT=$LIMIT PUMP_STATS=$WORK/stats.json \
  PUMP_LOG_LEVEL=${PUMP_LOG_LEVEL:-info} /usr/bin/time -v "$WORK/pump_gpu_check" 2> "$WORK/pump_stderr.txt" |
  tee "$WORK/pumped.txt" || { tail -40 "$WORK/pump_stderr.txt"; exit 1; }
grep '^pump' "$WORK/pump_stderr.txt" | head -40 || true
grep -E 'Elapsed|Maximum resident' "$WORK/pump_stderr.txt" || true
if ! cmp -s <(grep checksum "$WORK/native.txt") <(grep checksum "$WORK/pumped.txt"); then
  echo "FAIL: checksums differ"; exit 1
fi
echo "checksums identical"
# One kernel's working set: a blend kernel touches two 128 MiB vectors; an sgemm three 64 MiB matrices.
python3 tests/gpu/check_pump_stats.py "$WORK/stats.json" $((512 << 20))
