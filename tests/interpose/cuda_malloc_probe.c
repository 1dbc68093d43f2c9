/* Calls cudaMalloc and cudaFree through the CUDA runtime and prints what they return.
 * Run natively and under LD_PRELOAD=libpump.so: the output must be identical (on a
 * machine without a GPU both return the runtime's no-driver/no-device error). */
#include <stdio.h>

#include <cuda_runtime_api.h>

int main(void) {
  void* p = NULL;
  cudaError_t a = cudaMalloc(&p, 1 << 20);
  cudaError_t f = a == cudaSuccess ? cudaFree(p) : cudaSuccess;
  size_t free_bytes = 0, total = 0;
  cudaError_t i = cudaMemGetInfo(&free_bytes, &total);
  printf("cudaMalloc=%d cudaFree=%d cudaMemGetInfo=%d\n", (int)a, (int)f, (int)i);
  return 0;
}
