#!/usr/bin/env bash
# Builds the release preset here and copies what a GPU machine needs into .device/
# (ignored by git; carried to the device with `carry: [".device"]`): libpump.so, the
# plugins, pump-bench, the GPU workload programs and pump-datapath-bench (the backend's
# data path alone). The GPU machine has CUDA, PyTorch and nvcc but no Boost or
# GoogleTest, so pump is built here (x86-64 both).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target pump pump-bench pump-workload-mlp pump-workload-conv pump-workload-conv-backend pump-datapath-bench \
  pump_policy_none pump_policy_lazy pump_policy_eager pump_policy_lru pump_policy_activations \
  pump_policy_learned \
  pump_extractor_cudnn pump_extractor_cublas pump_extractor_launch pump_extractor_nccl
cmake --build --preset release -j"$(nproc)" --target backend_cuda_gpu_test 2>/dev/null || true
rm -rf .device && mkdir -p .device/lib/pump .device/bin
cp build/release/lib/libpump.so .device/lib/
cp build/release/lib/pump/*.so .device/lib/pump/
cp build/release/bin/pump-bench build/release/bin/pump-workload-* build/release/bin/pump-datapath-bench .device/bin/
# The backend's own GPU test (built where nvcc is found).
if [ -x build/release/bin/backend_cuda_gpu_test ]; then cp build/release/bin/backend_cuda_gpu_test .device/bin/; fi
strip --strip-debug .device/lib/*.so .device/lib/pump/*.so .device/bin/*
du -sh .device
