#!/usr/bin/env bash
# On a GPU machine, from the repo root, with .device/ carried (scripts/device_bundle.sh):
#   tests/gpu/device_suite.sh [part...]     parts: check torch-resnet torch-gpt bench datapath
# (datapath is not in the default list: run it by name; DATAPATH_ARGS adds arguments)
# Writes logs under $OUT (or /tmp/pump-device). SAFETY: every run caps managed memory
# (PUMP_MANAGED_LIMIT) well below the card's free memory; oversubscription is emulated
# with PUMP_GPU_BUDGET. pump-datapath-bench (datapath) caps itself: all its device memory
# <= free/2 (cudaMemGetInfo at start), pinned host memory <= 8 GiB.
set -uo pipefail
OUT=${OUT:-/tmp/pump-device}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
LIBPUMP=$PWD/.device/lib/libpump.so
[ -f "$LIBPUMP" ] || { echo "no .device/lib/libpump.so: run scripts/device_bundle.sh and carry .device"; exit 2; }
# cuBLAS/cuDNN from the toolkit or PyTorch's wheels, for the C++ workload programs.
LIBDIRS=$( (ls -d /usr/local/cuda/lib64 2>/dev/null;
            find / -xdev \( -name 'libcudnn.so.9' -o -name 'libcublas.so.13' \) -path '*nvidia*' 2>/dev/null |
              xargs -r -n1 dirname) | sort -u | paste -sd: )
export LD_LIBRARY_PATH=$LIBDIRS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free --format=csv,noheader
status=0
for part in "${@:-check torch-resnet torch-gpt bench}"; do
  for p in $part; do
    echo "=================== $p"
    case $p in
      check) tests/gpu/run_on_device.sh .device > "$OUT/check.log" 2>&1; rc=$?; tail -25 "$OUT/check.log" ;;
      torch-resnet) python3 tests/gpu/torch/check_policies.py --libpump "$LIBPUMP" --model resnet50 --steps 20 --policies "${POLICIES:-none,lazy,eager,lru,activations,learned}" \
                      --out "$OUT/torch" 2>&1 | tee "$OUT/torch-resnet.txt"; rc=${PIPESTATUS[0]} ;;
      torch-gpt) python3 tests/gpu/torch/check_policies.py --libpump "$LIBPUMP" --model transformer --steps 20 --policies "${POLICIES:-none,lazy,eager,lru,activations,learned}" \
                   --out "$OUT/torch" 2>&1 | tee "$OUT/torch-gpt.txt"; rc=${PIPESTATUS[0]} ;;
      bench) .device/bin/pump-bench --libpump "$LIBPUMP" --plugin-dir .device/lib/pump --workload mlp,conv \
               --oversubscription 1,1.5,2,3 --policies ${POLICIES:-none,eager,lazy,lru,activations,learned} \
               --repeats 1 --json "$OUT/bench.json" --csv "$OUT/bench.csv" 2> "$OUT/bench.err" | tee "$OUT/bench.txt"
             rc=${PIPESTATUS[0]}; tail -5 "$OUT/bench.err" ;;
      datapath) .device/bin/pump-datapath-bench ${DATAPATH_ARGS:-} --json "$OUT/datapath.json" 2>&1 | tee "$OUT/datapath.txt"
                rc=${PIPESTATUS[0]} ;;
      *) echo "unknown part $p"; rc=2 ;;
    esac
    echo "=================== $p: rc=$rc"
    [ "$rc" -eq 0 ] || status=1
  done
done
exit $status
